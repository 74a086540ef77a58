"""What `get_model()` may return, and how it becomes the arguments of one model call."""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from think_nb.errors import ModelError, UserError

LOCAL_PROVIDER = "think-local"
SCRIPTED_PROVIDER = "think-scripted"
LOCAL_MODEL = f"{LOCAL_PROVIDER}/smollm2-135m-instruct"
"""The embedded model every agent uses unless `get_model()` is overridden (offline, in-process)."""

IN_PROCESS_PROVIDERS = (LOCAL_PROVIDER, SCRIPTED_PROVIDER)


@dataclass
class ModelConfig:
    """A litellm model plus extra `litellm.acompletion` keyword arguments.

    Example: `ModelConfig("openai/gpt-4o-mini", {"api_base": "http://127.0.0.1:8000/v1", "temperature": 0})`.

    Attributes:
        via_litellm: run an in-process model (`think-local/*`, `think-scripted/*`) through litellm's
            custom-provider path instead of calling it directly (`think_nb.models.client`); for
            comparisons (the parity test, benchmarks). Hosted models always go through litellm.
    """

    model: str
    options: dict[str, Any] = field(default_factory=dict)
    via_litellm: bool = False

    def __repr__(self) -> str:  # credentials never reach a repr, a trace or a saved notebook
        from think_nb.redact import redact

        via = ", via_litellm=True" if self.via_litellm else ""
        return f"ModelConfig({self.model!r}, {redact(self.options)!r}{via})"

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0] if "/" in self.model else ""


def model_config_of(value: Any) -> ModelConfig:
    """The `ModelConfig` a model spec stands for (see `resolve_model`), without calling anything.

    Raises:
        UserError: for anything other than a non-empty string, a `ModelConfig` or a dict with a
            `"model"` string; the message shows the value with its credentials redacted.
    """
    if isinstance(value, str) and value.strip():
        config = ModelConfig(value.strip())
    elif isinstance(value, ModelConfig):
        config = value
    elif isinstance(value, Mapping) and isinstance(value.get("model"), str) and value["model"].strip():
        options = {k: v for k, v in value.items() if k != "model"}  # litellm's keyword arguments, as a dict
        config = ModelConfig(value["model"].strip(), options)
    else:
        from think_nb.redact import redact

        shown = repr(redact(dict(value) if isinstance(value, Mapping) else value))  # a key never reaches an error
        raise UserError(f"get_model() returned {shown[:200]}; return a litellm model string such as "
                        f"'openai/gpt-4o-mini' or {LOCAL_MODEL!r}, a ModelConfig, or a dict with 'model' "
                        "and litellm's options ({'model': ..., 'api_key': ...}).")
    return config


def resolve_model(value: Any) -> ModelConfig:
    """Turn a `get_model()` result (or `default_model`, or a TurnConfig's model) into a `ModelConfig`:
    a litellm model string, a `ModelConfig`, or a dict `{"model": ..., **litellm options}`. Every
    model spec passes here, so its credentials are in the `ModelConfig`'s options from here on
    (redacted in its repr, scrubbed from the turn's errors and trace).

    Raises:
        UserError: a value that is no model spec (see `model_config_of`).
        ModelError: when hosted model requests are disabled (`THINK_NB_ALLOW_MODEL_REQUESTS=0`,
            set by the test suite) and the model is not in-process.
    """
    config = model_config_of(value)
    if config.provider not in IN_PROCESS_PROVIDERS and os.environ.get("THINK_NB_ALLOW_MODEL_REQUESTS") == "0":
        raise ModelError(f"Real model requests are disabled here (THINK_NB_ALLOW_MODEL_REQUESTS=0), so "
                         f"{config.model!r} was not called; use think_nb.testing.ScriptedModel or opt in.")
    return config


REGENERATE_SAMPLING: dict[str, float] = {"temperature": 0.8, "top_p": 0.95}
"""How a regenerated reply of the embedded model is sampled (it decodes greedily otherwise, so
Regenerate would give the very same reply)."""


def regenerate_options(config: ModelConfig, options: dict[str, Any], request_id: str) -> dict[str, Any]:
    """The call options of a regenerated reply's model calls (`regenerate()`, the panel's
    Regenerate). The embedded model decodes greedily (`think_nb.models.local.SAMPLING`), so there
    a regenerate samples: `REGENERATE_SAMPLING` with a seed taken from `request_id` (a new
    request gives a new reply; the same request id the same one), unless the turn or the
    `ModelConfig` sets a temperature. Hosted and scripted models keep `options` as they are
    (hosted models sample by default)."""
    if config.provider != LOCAL_PROVIDER or options.get("temperature") is not None \
            or config.options.get("temperature") is not None:
        return options
    return {**options, **REGENERATE_SAMPLING, "seed": zlib.crc32(request_id.encode())}
