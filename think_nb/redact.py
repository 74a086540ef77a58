"""Secrets never persist: credentials are redacted where values are summarised or serialised.

A key is a credential when its name is `api_key`, `authorization`, `password`, `secret`, or
ends in `_key`, `_token`, `_secret` or `_password` (case-insensitive; `-` counts as `_`):
`api_key`, `aws_secret_access_key`, `x-api-key`, `access_token`, `Authorization`. Their values
become `REDACTED` in:

- `redact(value)`: any nested dict / list / dataclass (ModelConfig, TurnConfig, contexts), used
  by the hook trace's summaries (`think_nb.turns.trace.summarize`) and `ModelConfig`'s repr;
- `scrub(text, secrets)`: error text (a provider may echo the key it refused), used before an
  error reaches the message, the turn log, frames and `on_chat_error`'s replacement.

`secrets_of(value)` collects the credential values a config holds, for `scrub`; `env_secrets()` the
values of credential-named environment variables (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `HF_TOKEN`:
the keys litellm reads when a config holds none), which a provider's error body may echo just the same.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

REDACTED = "***"
_CREDENTIAL = re.compile(
    r"^(api_key|apikey|authorization|password|passwd|secret|token|.*_(key|token|secret|password))$", re.IGNORECASE)
_MIN_SECRET_CHARS = 4  # shorter values are not scrubbed from text (they would mangle ordinary words)


def is_credential(key: Any) -> bool:
    """True when a mapping key names a credential (see the module docstring)."""
    return isinstance(key, str) and bool(_CREDENTIAL.match(key.replace("-", "_")))


def redact(value: Any, _depth: int = 0) -> Any:
    """A copy of `value` with every credential's value replaced by `REDACTED` (dicts, lists,
    tuples, dataclasses; other values as they are)."""
    if _depth > 50:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: redact(getattr(value, f.name), _depth + 1) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: REDACTED if is_credential(k) and v is not None else redact(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, _depth + 1) for v in value]
    return value


def secrets_of(value: Any, _depth: int = 0) -> set[str]:
    """The credential values (strings) found anywhere in `value`."""
    found: set[str] = set()
    if _depth > 50:
        return found
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        for k, v in value.items():
            if is_credential(k) and isinstance(v, str) and len(v) >= _MIN_SECRET_CHARS:
                found.add(v)
            else:
                found |= secrets_of(v, _depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            found |= secrets_of(v, _depth + 1)
    return found


def env_secrets() -> set[str]:
    """The values of the environment variables whose names are credentials (read now: a key set
    after import counts)."""
    import os

    return {v for k, v in os.environ.items() if is_credential(k.lower()) and len(v) >= _MIN_SECRET_CHARS}


def scrub(text: str, secrets: set[str]) -> str:
    """`text` with every occurrence of a secret (and of its first/last 8 characters, as providers
    echo keys partially: `sk-abc1...wxyz`) replaced by `REDACTED`."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
        if len(secret) >= 16:
            text = text.replace(secret[:8], REDACTED).replace(secret[-8:], REDACTED)
    return text
