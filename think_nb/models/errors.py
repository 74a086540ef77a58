"""Model failures: one clear line naming the provider and the fix, and the retry policy.

**Retry policy** (`retry_delay`): a hosted model call that fails *before it streamed anything*
is retried when the failure is transient — HTTP 429 (rate limited), 500, 502, 503, 504 or 529
(provider error or overloaded) — at most `MAX_RETRIES` (2) times, so 3 attempts in all. Each retry
waits the provider's `retry-after` header (seconds or an HTTP date) when it sends one, capped at
`MAX_WAIT` (30 s), else 1 s then 2 s. Nothing else is retried: a bad key, an unknown model or a
refused request fails the same way again; a refused connection or a timeout means the server is
down or slow and the user should know now; a failure after the first chunk would repeat text
the user has already seen (the partial answer is kept and the turn ends `error`). litellm's and
the provider SDKs' own retries are switched off for hosted calls (`max_retries=0`) so this is
the only policy. The wait is an `asyncio.sleep`: an abort cancels it.

`describe_error` gives the line the turn reports when the model call raised (the message of the
`think_nb.errors.ModelError` the model seam, `think_nb.models.stream`, raises; the turn's `error`
chunk, `TurnResult.error`): `Model '<model>' failed: <what happened at which provider>; <the fix>.
(<provider's own words>)`. Failures of user code and of think_nb itself never get this form
(`think_nb.errors`).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from think_nb.errors import ThinkError
from think_nb.models.resolve import IN_PROCESS_PROVIDERS

MAX_RETRIES = 2
"""Retries after the first attempt of a model call that failed transiently before streaming."""
MAX_WAIT = 30.0
"""Longest wait (seconds) between attempts, whatever `retry-after` asks for."""
BACKOFF = (1.0, 2.0)
"""Waits (seconds) before the first and second retry when the provider sends no `retry-after`."""
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})

API_KEY_ENV = {
    "openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY", "mistral": "MISTRAL_API_KEY", "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY", "xai": "XAI_API_KEY", "together_ai": "TOGETHERAI_API_KEY",
    "cohere": "COHERE_API_KEY", "fireworks_ai": "FIREWORKS_AI_API_KEY", "azure": "AZURE_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY", "perplexity": "PERPLEXITYAI_API_KEY",
}
"""The environment variable litellm reads a provider's key from (others: `<PROVIDER>_API_KEY`)."""


@dataclass
class CallFacts:
    """What the model call knew when it failed, attached to the exception as `think_nb_call`.

    Attributes:
        provider: litellm provider name (`openai`, `anthropic`, ...).
        attempts: attempts made (1 + retries).
        streamed: whether any chunk had been emitted before the failure.
        api_base: the server's URL when `get_model()` set one.
        timeout: the call's timeout in seconds, when set.
    """

    provider: str
    attempts: int = 1
    streamed: bool = False
    api_base: str | None = None
    timeout: float | None = None


def incomplete_stream(provider: str, tried: str = "") -> str:
    """The explanation of a stream that ended before its finish reason.

    litellm raises it (`APIConnectionError: ... Stream ended before a finish_reason was received`)
    for every provider on its OpenAI-shaped stream path, OpenAI and Anthropic included (measured on
    litellm 1.110.2); on its other paths (custom providers, generic chunks) it makes up
    `finish_reason="stop"` itself, so a stream never reaches the turn without a finish reason.
    """
    return (f"{provider} ended the stream before the answer finished (no finish reason){tried}; the partial "
            "answer is kept, regenerate to try again.")


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a litellm/provider exception, or None."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def retry_delay(exc: BaseException, retries_done: int) -> float | None:
    """Seconds to wait before retrying a call that failed with `exc` before streaming anything, or
    None when it must not be retried (see the module docstring)."""
    if retries_done >= MAX_RETRIES or status_of(exc) not in RETRY_STATUSES or _is_transport(type(exc).__name__):
        return None
    after = _retry_after(exc)
    wait = after if after is not None else BACKOFF[min(retries_done, len(BACKOFF) - 1)]
    return max(0.0, min(wait, MAX_WAIT))


def _is_transport(name: str) -> bool:
    """litellm gives connection failures and timeouts a status too (500, 408): they are not HTTP answers."""
    return name in ("APIConnectionError", "Timeout", "APITimeoutError")


def _retry_after(exc: BaseException) -> float | None:
    headers: Any = getattr(exc, "headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:  # an HTTP date
        import email.utils  # here: only a Retry-After date needs it

        return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):  # neither: ignore the header
        return None


def describe_error(exc: BaseException, model: str | None) -> str:
    """One line naming what failed, where, and the fix, for `exc` raised by the model call of
    `model`, e.g. `Model 'openai/gpt-4o-mini' failed: authentication failed for openai; set
    OPENAI_API_KEY or pass api_key in ModelConfig options. (Incorrect API key provided)`. An
    exception of a kind not explained here gives its type and first line (`Model 'x' failed:
    ValueError: bad`); a think_nb error in its chain (even wrapped by litellm) its own text."""
    facts: CallFacts | None = getattr(exc, "think_nb_call", None)
    own = _think_error(exc)
    if own is not None:  # think_nb's own error, possibly wrapped by litellm: already one clear line
        return str(own)
    exc = getattr(exc, "original_exception", None) or exc
    facts = facts or getattr(exc, "think_nb_call", None)
    provider = facts.provider if facts else (getattr(exc, "llm_provider", None) or _provider_of(model))
    name = type(exc).__name__
    detail = provider_detail(str(exc), name)
    what = _explain(exc, name, detail, provider, model, facts)
    prefix = f"Model {model!r} failed: " if model else ""
    if what is None:  # not a failure we know: the exception's own words
        return f"{prefix}{name}: {detail}"
    return f"{prefix}{what}" + (f" ({detail})" if detail and detail not in what else "")


def _think_error(exc: BaseException) -> ThinkError | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ThinkError):
            return current
        seen.add(id(current))
        current = getattr(current, "original_exception", None) or current.__cause__ or current.__context__
    return None


def _explain(exc: BaseException, name: str, detail: str, provider: str, model: str | None,
             facts: CallFacts | None) -> str | None:
    if provider in IN_PROCESS_PROVIDERS:  # no HTTP, no key: the exception's own words say it best
        return None
    status = status_of(exc)
    attempts = facts.attempts if facts else 1
    tried = f" after {attempts} attempts" if attempts > 1 else ""
    where = f" at {facts.api_base}" if facts and facts.api_base else ""
    lowered = detail.lower()
    if status in (401, 403) or name in ("AuthenticationError", "PermissionDeniedError") or any(
            k in detail for k in ("api_key", "API key", "credentials")):
        env = API_KEY_ENV.get(provider, f"{provider.upper() or 'THE_PROVIDER'}_API_KEY")
        return f"authentication failed for {provider}; set {env} or pass api_key in ModelConfig options."
    if name == "ContextWindowExceededError":
        return (f"the conversation is longer than the context window of {model}; compact it (agent.compact()) "
                "or start a new session.")
    if status == 404 or name == "NotFoundError":
        return f"{provider} has no model {_model_name(model)!r}{where}; check the model name get_model() returns."
    if status == 429 or name == "RateLimitError":
        return f"{provider} rate-limited the request{tried}; wait a minute and retry, or pick another model."
    if name == "Timeout" or "timed out" in lowered or "timeout" in name.lower():
        limit = f"within {facts.timeout:g} s" if facts and facts.timeout is not None else "in time"
        return (f"{provider} did not answer {limit}{where}; check the server, or raise the timeout option "
                "of ModelConfig.")
    if name == "APIConnectionError" or "connect" in lowered:
        streamed = facts is not None and facts.streamed
        if "finish_reason" in lowered:
            return incomplete_stream(provider, tried)
        if any(k in lowered for k in ("expecting", "json", "malformed", "decode")):
            return (f"{provider} sent a malformed or incomplete stream; the partial answer is kept, "
                    "regenerate to try again.")
        if streamed or any(k in lowered for k in ("payload is not completed", "incomplete", "peer closed")):
            return (f"the connection to {provider} broke mid-answer; the partial answer is kept, "
                    "regenerate to try again.")
        return (f"could not connect to {provider}{where}; check that the server is running and api_base "
                "is right, or pick another model in get_model().")
    if (status is not None and status >= 500) or name in ("InternalServerError", "ServiceUnavailableError"):
        return f"{provider} had a server error{f' ({status})' if status else ''}{tried}; try again later."
    if status == 400 or name in ("BadRequestError", "UnprocessableEntityError"):
        return f"{provider} refused the request; check the model options in get_model()."
    return None


_PREFIX = re.compile(r"^(litellm\.)?\w+(Error|Exception|Timeout)?:\s*")
_WRAPPER = re.compile(r"^\w+(?:Exception|Error) - ")  # `OpenAIException - `, `AnthropicError - `


def provider_detail(text: str, name: str = "") -> str:
    """The provider's own words from a litellm message: prefixes (`litellm.RateLimitError:`,
    `OpenAIException - `, `AnthropicError - `) and litellm's advice stripped, a JSON error body
    (also as bytes, `b'{...}'`) reduced to its message."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    for _ in range(3):
        line = _PREFIX.sub("", line, count=1) if line.startswith(("litellm.", f"{name}:")) else line
        line = _WRAPPER.sub("", line, count=1)
    line = re.sub(r"\.? ?Handle with `litellm\.\w+`\.?$", "", line)
    line = re.sub(r"\.? ?Received Model Group=.*$", "", line)
    line = re.sub(r" ssl:<[^>]*>", "", line)
    body = line[2:-1] if line.startswith(("b'", 'b"')) else line
    if body.startswith("{"):
        try:
            parsed = json.loads(body)
        except ValueError:
            pass
        else:
            error = parsed.get("error") if isinstance(parsed, dict) else None
            message = error.get("message") if isinstance(error, dict) else parsed.get("message")
            if isinstance(message, str):
                line = message
    line = line.strip()
    return line if len(line) <= 300 else line[:297] + "..."


def _provider_of(model: str | None) -> str:
    return model.split("/", 1)[0] if model and "/" in model else "the provider"


def _model_name(model: str | None) -> str:
    return model.split("/", 1)[1] if model and "/" in model else (model or "")
