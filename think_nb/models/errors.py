"""Turning a model failure (litellm exception, missing key, unreachable host) into one clear line."""

from __future__ import annotations

from think_nb.errors import ThinkError

_HINTS = {
    "AuthenticationError": "set the provider's API key (e.g. OPENAI_API_KEY) or override get_model()",
    "APIConnectionError": "check that the model's server is reachable (api_base) or override get_model()",
    "NotFoundError": "check the model name in get_model()",
    "BadRequestError": "check the model name and options in get_model()",
    "RateLimitError": "wait and retry, or use another model",
}


def describe_error(exc: BaseException, model: str | None) -> str:
    """One line naming what failed and the fix, e.g.
    `Model 'openai/gpt-4o-mini' failed: AuthenticationError: ... Fix: set the provider's API key ...`."""
    exc = getattr(exc, "original_exception", None) or exc
    if isinstance(exc, ThinkError):
        return str(exc)
    name = type(exc).__name__
    detail = _first_line(str(exc))
    while detail.startswith(("litellm.", f"{name}: ")):
        detail = detail.removeprefix("litellm.").removeprefix(f"{name}: ")
    text = f"Model {model!r} failed: {name}: {detail}" if model else f"{name}: {detail}"
    hint = _HINTS.get(name)
    if any(k in detail for k in ("api_key", "API key", "credentials")):
        hint = _HINTS["AuthenticationError"]  # litellm reports some missing keys as other errors
    return f"{text} Fix: {hint}." if hint else text


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= 400 else line[:397] + "..."
