"""The retry policy of hosted model calls (think_nb.models.errors), on litellm's real exception types."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from think_nb.models.errors import BACKOFF, MAX_WAIT, describe_error, provider_detail, retry_delay
from think_nb.models.litellm_env import get_litellm


def status_error(status: int, headers: dict[str, str] | None = None) -> Exception:
    litellm = get_litellm()
    response = httpx.Response(status, headers=headers or {}, request=httpx.Request("POST", "http://127.0.0.1/v1"))
    kind = {429: litellm.RateLimitError, 401: litellm.AuthenticationError, 404: litellm.NotFoundError,
            400: litellm.BadRequestError}.get(status)
    if kind is None:
        return litellm.InternalServerError("boom", "openai", "gpt-x", response=response)
    return kind("boom", "openai", "gpt-x", response=response)


@pytest.mark.parametrize(("status", "headers", "retries_done", "expected"), [
    (429, {"retry-after": "3"}, 0, 3.0),
    (429, {"retry-after-ms": "250"}, 0, 0.25),
    (429, {"retry-after": "86400"}, 0, MAX_WAIT),  # capped
    (429, {}, 0, BACKOFF[0]),
    (503, {}, 1, BACKOFF[1]),
    (429, {"retry-after": "soon"}, 0, BACKOFF[0]),  # unreadable: the backoff
    (429, {"retry-after": "0"}, 2, None),  # the third attempt was the last
    (401, {"retry-after": "0"}, 0, None),  # a bad key fails the same way again
    (404, {}, 0, None),
    (400, {}, 0, None),
])
def test_retry_delay_follows_the_documented_policy(status: int, headers: dict, retries_done: int,
                                                   expected: float | None) -> None:
    assert retry_delay(status_error(status, headers), retries_done) == expected


def test_retry_after_as_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3 < (retry_delay(status_error(429, {"retry-after": when}), 0) or 0) <= 5


def test_connection_failures_and_timeouts_are_not_retried() -> None:
    litellm = get_litellm()
    assert retry_delay(litellm.APIConnectionError("refused", "openai", "gpt-x"), 0) is None
    assert retry_delay(litellm.Timeout("slow", "gpt-x", "openai"), 0) is None


def test_provider_detail_reduces_an_error_body_to_its_message() -> None:
    raw = ("litellm.RateLimitError: AnthropicException - b'{\"type\": \"error\", \"error\": {\"type\": "
           "\"rate_limit_error\", \"message\": \"Slow down\"}}'. Handle with `litellm.RateLimitError`.")
    assert provider_detail(raw, "RateLimitError") == "Slow down"


def test_a_non_model_exception_keeps_its_own_words() -> None:
    assert describe_error(ValueError("bad\nsecond line"), "openai/x") == "Model 'openai/x' failed: ValueError: bad"
