"""Secrets never persist: credentials are redacted where values are summarised or serialised.

A key is a credential when its name is `api_key`, `authorization`, `password`, `secret`, `token`,
`pat`, `auth`, `credential(s)`, or ends in `_key`, `_token`, `_secret`, `_password`, `_pass`,
`_pwd`, `_pat`, `_auth` or `_credential(s)` (case-insensitive; `-` counts as `_`): `api_key`,
`aws_secret_access_key`, `x-api-key`, `access_token`, `Authorization`, `GITHUB_PAT`. Their values
become `REDACTED` in:

- `redact(value)`: any nested dict / list / dataclass (ModelConfig, TurnConfig, contexts), used
  by the hook trace's summaries (`think_nb.turns.trace.summarize`) and `ModelConfig`'s repr;
- `scrub(text, secrets)`: error text (a provider may echo the key it refused), used before an
  error reaches the message, the turn log, frames and `on_chat_error`'s replacement.

A value is a secret by its shape (`looks_secret(text)`) when it has a known key prefix (`sk-`,
`ghp_`, `github_pat_`, `xoxb-`, `AKIA`, `hf_`, `glpat-`, `AIza`, a JWT's `eyJ`) or is one token of
at least 24 letters, digits and `-_.+/=` mixing letters and digits; `redact_argv(args)` is a
command line with every secret replaced: a value after (or `=`-joined to) a flag named for a secret
(`is_secret_setting`: `--api-key X`, `--token=X`, `--key X`, `--pass X`), an `Authorization: ...`-style
header argument, and any argument that looks like a secret, a URL with a password included (`${VAR}`
references stay, they are not secrets).

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
    r"^(api_key|apikey|authorization|password|passwd|secret|token|pat|auth|credentials?|"
    r".*_(key|token|secret|password|pass|pwd|pat|auth|credentials?))$", re.IGNORECASE)
_KEY_PREFIX = re.compile(r"^(sk-|sk_|rk_|pk_live_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abprs]-|"
                         r"AKIA|ASIA|hf_|AIza|eyJ|Bearer\s)")
_TOKEN = re.compile(r"^[A-Za-z0-9_\-.+/=]{24,}$")
_HEADER_ARG = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_-]*)\s*:\s*(\S.*)$")
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_URL_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@", re.IGNORECASE)
_SECRET_WORDS = frozenset({"key", "pass", "bearer", "pwd", "auth", "token", "pat", "credential", "credentials"})
_SECRET_INFIXES = ("secret", "passw", "passphrase")
_MIN_SECRET_CHARS = 4  # shorter values are not scrubbed from text (they would mangle ordinary words)


def is_credential(key: Any) -> bool:
    """True when a mapping key names a credential (see the module docstring)."""
    return isinstance(key, str) and bool(_CREDENTIAL.match(key.replace("-", "_")))


def is_secret_setting(name: Any) -> bool:
    """True when a command-line flag or an environment variable of a server is named for a secret:
    `is_credential(name)`, or one of its `_`/`-` words is `key`, `pass`, `bearer`, `pwd`, `auth`,
    `token`, or it contains `secret`, `passw` or `passphrase` (`--key`, `--pass`, `--bearer`,
    `MY_SECRET_VALUE`, `PASSPHRASE`, `DB_PASSWORD_FILE`). Broader than `is_credential`, which also
    judges ordinary config keys (`sort_key`) in hook summaries."""
    if not isinstance(name, str):
        return False
    lowered = name.lower().replace("-", "_")
    words = {w for w in lowered.split("_") if w}
    return is_credential(name) or bool(words & _SECRET_WORDS) or any(w in lowered for w in _SECRET_INFIXES)


def url_password(text: str) -> str | None:
    """The password of a URL that includes one (`postgres://user:pw@host` -> `pw`), else None."""
    match = _URL_PASSWORD.match(text.strip())
    return match.group(1) if match else None


def looks_secret(text: Any) -> bool:
    """True when `text` has the shape of a key or token (see the module docstring), or is a URL
    that holds a password (`postgres://user:pw@host/db`)."""
    if not isinstance(text, str) or _REFERENCE.search(text) or len(text) < 8:
        return False
    value = text.strip()
    if _URL_PASSWORD.match(value):
        return True
    if _KEY_PREFIX.match(value) and len(value) >= 12:
        return True
    return bool(_TOKEN.match(value)) and any(c.isalpha() for c in value) and any(c.isdigit() for c in value) \
        and not value.startswith(("/", "./", "-"))


def _flag_name(arg: str) -> str | None:
    return arg.lstrip("-") if arg.startswith("-") and arg.lstrip("-") else None


def redact_argv(args: list[str]) -> list[str]:
    """`args` with each secret replaced by `REDACTED` (see the module docstring)."""
    out: list[str] = []
    after_credential_flag = False
    for arg in args:
        if after_credential_flag and not arg.startswith("-"):
            out.append(arg if _REFERENCE.fullmatch(arg.strip()) else REDACTED)
            after_credential_flag = False
            continue
        after_credential_flag = False
        name = _flag_name(arg)
        header = _HEADER_ARG.match(arg)
        if name is not None and "=" in name:
            flag, value = name.split("=", 1)
            secret = (is_secret_setting(flag) and not _REFERENCE.fullmatch(value.strip())) or looks_secret(value)
            out.append(arg[: len(arg) - len(value)] + REDACTED if secret and value else arg)
        elif name is not None:
            after_credential_flag = is_secret_setting(name)
            out.append(arg)
        elif header and is_credential(header.group(1)) and not _REFERENCE.fullmatch(header.group(2).strip()):
            out.append(f"{header.group(1)}: {REDACTED}")
        else:
            out.append(REDACTED if looks_secret(arg) else arg)
    return out


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


def scrub_cut(text: str, secrets: set[str]) -> str:
    """`scrub(text, secrets)` for a text cut off after its end: a secret's beginning left at the
    end (at least 4 characters of it) is replaced by `REDACTED` too."""
    cut = max((k for secret in secrets for k in range(min(len(secret) - 1, len(text)), 3, -1)
               if text.endswith(secret[:k])), default=0)
    return scrub(text[: len(text) - cut], secrets) + (REDACTED if cut else "")


def scrub(text: str, secrets: set[str]) -> str:
    """`text` with every occurrence of a secret (and of its first/last 8 characters, as providers
    echo keys partially: `sk-abc1...wxyz`) replaced by `REDACTED`."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
        if len(secret) >= 16:
            text = text.replace(secret[:8], REDACTED).replace(secret[-8:], REDACTED)
    return text
