"""The wheel installs and works on a machine without Node: build the sdist and the wheel, install the
wheel into a fresh venv whose PATH has no npm, and run a smoke test there (import, `%load_ext think_nb`
in a real kernel, a scripted turn, the panel's ESM in the widget state), and check that JupyterLab lists
the wheel's prebuilt labextension (think-nb-cells) as enabled. The wheel holds the package, its built panel
and the labextension only; the sdist holds js/ (it rebuilds both) and neither build.

Offline: uv builds and installs from its cache (filled by .ci/setup), llama-cpp-python from the
wheelhouse .ci/setup built (THINK_NB_WHEELHOUSE, default ~/.cache/think-nb/wheels-portable).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = Path(os.environ.get("THINK_NB_WHEELHOUSE", Path.home() / ".cache" / "think-nb" / "wheels-portable"))

SMOKE = r'''
import json, shutil, sys
from pathlib import Path
assert shutil.which("npm") is None, "npm is on PATH"
import think_nb
assert Path(think_nb.__file__).is_relative_to(sys.prefix), think_nb.__file__
from jupyter_client.manager import start_new_kernel

CODE = """
%load_ext think_nb
import json
from think_nb import Think
from think_nb.testing import ScriptedModel as S
script = S([[S.text("Hello from the wheel")]])
class Bot(Think):
    def get_model(self):
        return script.model
agent = Bot("wheel", db="smoke.sqlite")
result = await agent.send("hi")
state = agent.panel().get_state()
print("SMOKE " + json.dumps({"status": result.status, "reply": agent.messages[-1]["parts"][-1]["text"],
                              "esm": len(state["_esm"]), "esm_head": state["_esm"][:200],
                              "messages": len(state["messages"])}))
"""
km, kc = start_new_kernel(kernel_name="python3")
out = []
try:
    reply = kc.execute_interactive(CODE, timeout=300, output_hook=lambda m: out.append(m))
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
errors = [m["content"] for m in out if m["msg_type"] == "error"]
assert reply["content"]["status"] == "ok" and not errors, (reply["content"], errors, text)
print(text)
'''


def _uv() -> list[str]:
    uv = shutil.which("uv") or shutil.which("uv", path=str(ROOT / ".venv" / "bin"))
    assert uv, "uv is not installed: run .ci/setup (it installs uv)"
    return [uv]


def _run(cmd: list[str], **kw: object) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built offline from this checkout (the panel bundle must be built)."""
    assert (ROOT / "think_nb" / "static" / "widget.js").is_file(), "build the panel first: cd js && npm run build"
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    for kind in ("--sdist", "--wheel"):  # the wheel from the tree: it packs the built bundle, no npm run
        _run([*_uv(), "build", "--offline", kind, "--out-dir", str(out), str(ROOT)], env=env)
    return out


LABEXT = ROOT / "think_nb" / "labextension"
LABEXT_DATA = "share/jupyter/labextensions/think-nb-cells"


def test_wheel_holds_the_package_the_built_panel_and_the_labextension_only(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as whl:
        names, bundle = whl.namelist(), whl.read("think_nb/static/widget.js")
        data = {n.split(f"/data/{LABEXT_DATA}/", 1)[1]: whl.read(n) for n in names if f".data/data/{LABEXT_DATA}/" in n}
    assert "think_nb/static/widget.js" in names and "think_nb/panel/protocol_spec.json" in names
    outside = sorted({n.split("/")[0] for n in names} - {"think_nb"})
    assert [o for o in outside if not o.endswith((".dist-info", ".data"))] == []
    data_dirs = {n.split("/data/", 1)[1].rsplit("/", 1)[0] for n in names if ".data/" in n}
    assert data_dirs <= {LABEXT_DATA, f"{LABEXT_DATA}/static"}
    assert not [n for n in names if "/tests/" in n or "node_modules" in n or ".think" in n or n.endswith(".ts")]
    assert bundle == (ROOT / "think_nb" / "static" / "widget.js").read_bytes()
    # the prebuilt labextension, as built in the tree: its package.json, the remoteEntry it loads, install.json
    assert data == {p.relative_to(LABEXT).as_posix(): p.read_bytes() for p in LABEXT.rglob("*") if p.is_file()}
    meta = json.loads(data["package.json"])
    assert meta["name"] == "think-nb-cells" and meta["jupyterlab"]["_build"]["load"] in data
    assert json.loads(data["install.json"])["packageName"] == "think-nb"


def test_sdist_holds_the_panel_sources_to_rebuild_it(dist: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    assert {"js/package.json", "js/package-lock.json", "js/src/widget.ts", "pyproject.toml", "js/cells/package.json",
            "js/cells/install.json", "js/cells/src/index.ts"} <= set(names)
    built = ("think_nb/static", "think_nb/labextension", "js/cells/lib")
    assert not [n for n in names if n.startswith((*built, "js/node_modules", ".venv", ".think", ".hypothesis",
                                                   "test-results"))]


UV_ENV = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel installed (offline), and an environment for it whose PATH has no npm."""
    (wheel,) = dist.glob("*.whl")
    home = tmp_path_factory.mktemp("home")
    venv = home / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    _run([*_uv(), "venv", "--offline", "-q", "-p", base, str(venv)], env=UV_ENV)
    _run([*_uv(), "pip", "install", "--offline", "-q", "--python", str(venv / "bin" / "python"),
          "--find-links", str(WHEELHOUSE), str(wheel)], env=UV_ENV)
    path = str(venv / "bin")
    assert shutil.which("npm", path=path) is None
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("THINK_NB_", "PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    clean.update(PATH=path, HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True", THINK_NB_DIR=str(home),
                 THINK_NB_ALLOW_MODEL_REQUESTS="0", JUPYTER_PLATFORM_DIRS="1")
    return venv, clean


def test_wheel_works_in_a_fresh_venv_without_npm(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, clean = installed
    out = _run([str(venv / "bin" / "python"), "-c", SMOKE], env=clean, cwd=tmp_path, timeout=600)
    smoke = json.loads(out.split("SMOKE ", 1)[1].splitlines()[0])
    assert (smoke["status"], smoke["reply"], smoke["messages"]) == ("completed", "Hello from the wheel", 2)
    assert smoke["esm"] == len((ROOT / "think_nb" / "static" / "widget.js").read_text(encoding="utf-8"))
    assert smoke["esm_head"] != "export default {};"
    assert (tmp_path / "smoke.sqlite").is_file()


def test_the_installed_wheel_enables_the_labextension(installed: tuple[Path, dict[str, str]]) -> None:
    """`pip install think-nb` is enough for "Into a cell": JupyterLab (added here, offline) lists the wheel's
    think-nb-cells as enabled, from the venv's share/jupyter/labextensions, installed by the think-nb package."""
    venv, clean = installed
    _run([*_uv(), "pip", "install", "--offline", "-q", "--python", str(venv / "bin" / "python"), "jupyterlab>=4"],
         env=UV_ENV)
    ext = venv / LABEXT_DATA
    assert (ext / "package.json").is_file() and not ext.is_symlink()
    proc = subprocess.run([str(venv / "bin" / "jupyter"), "labextension", "list"], capture_output=True, text=True,
                          env={**clean, "NO_COLOR": "1"}, cwd=venv, timeout=120, check=False)
    listing = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == 0, listing
    where = listing.split(str(venv / "share" / "jupyter" / "labextensions"), 1)
    assert len(where) == 2, listing  # the venv's own labextensions directory is listed...
    assert re.search(r"think-nb-cells v\S+ enabled\s+OK \(python, think-nb\)", where[1].split("\n\n")[0]), listing
