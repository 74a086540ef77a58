"""Models: everything between a turn and the model: the seam (`client.py`), litellm for hosted
providers, in-process models called directly.

- `resolve.py`: what `get_model()` may return (a litellm model string or a `ModelConfig`).
- `litellm_env.py`: the lazy, offline-safe `import litellm` and custom-provider registration.
- `stream.py`: one streamed model call → AI SDK UIMessageChunks (and its usage and usage source).
- `usage.py`: a turn's token usage from its steps: reported or unknown (litellm's estimate apart).
- `local.py`: the embedded SmolLM2-135M-Instruct, served in-process by llama-cpp-python as the
  litellm custom provider `think-local`.
Scripted test models (provider `think-scripted`) live in `think_nb.testing`.
"""

from think_nb.models.resolve import LOCAL_MODEL, ModelConfig, resolve_model

__all__ = ["LOCAL_MODEL", "ModelConfig", "resolve_model"]
