"""Real-browser fixtures: Jupyter servers on 127.0.0.1 and Debian chromium via Playwright.

Run these tests in their own pytest process (``pytest -m e2e``): a session-scoped
``sync_playwright()`` leaves its event loop marked as running, which breaks
pytest-asyncio tests collected after it (docs/platform-facts.md §3).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from jlab import CHROMIUM, CHROMIUM_ARGS, REPO_ROOT, JupyterServer, open_notebook

RESULTS = REPO_ROOT / "test-results"
APPS = ("lab", "notebook")


@pytest.hookimpl(trylast=True)  # after `-m` has deselected items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip e2e tests when a run mixes them with other tests (see module docstring)."""
    e2e = [i for i in items if i.get_closest_marker("e2e")]
    if e2e and len(e2e) != len(items):
        skip = pytest.mark.skip(reason="e2e tests run in their own process: pytest -m e2e")
        for item in e2e:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, JupyterServer]]:
    """Lazily started servers, one per app ("lab", "notebook"), stopped at the end."""
    started: dict[str, JupyterServer] = {}

    class Lazy(dict):
        def __missing__(self, app: str) -> JupyterServer:
            server = JupyterServer(app, tmp_path_factory.mktemp(f"jupyter-{app}")).start()
            started[app] = self[app] = server
            return server

    yield Lazy()
    for server in started.values():
        server.stop()


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory):
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    ctx = pw.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM,
        headless=True, args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900},
    )
    yield ctx
    ctx.close()
    pw.stop()


def _capture_failure(request: pytest.FixtureRequest, pg, server: JupyterServer | None = None) -> None:
    """Keep a screenshot, the console and the server log of a failed test in test-results/."""
    rep = getattr(request.node, "rep_call", None)
    if rep is None or not rep.failed or getattr(pg, "captured", False):
        return
    pg.captured = True
    RESULTS.mkdir(exist_ok=True)
    stem = re.sub(r"[^\w.-]+", "_", request.node.nodeid)[-120:]
    (RESULTS / f"{stem}.console.txt").write_text("\n".join(pg.console_lines))
    if server is not None:
        (RESULTS / f"{stem}.server.log").write_text(server.log_tail(200))
    try:
        pg.screenshot(path=str(RESULTS / f"{stem}.png"), full_page=True)
    except Exception as exc:  # noqa: BLE001 - best effort on the failure path
        print(f"screenshot failed: {exc}")


@pytest.fixture
def page(browser_context, request: pytest.FixtureRequest):
    """A fresh tab; its console is kept on ``page.console_lines``; failures are captured."""
    pg = browser_context.new_page()
    pg.console_lines = []
    pg.on("console", lambda m: pg.console_lines.append(f"{m.type}: {m.text}"))
    pg.on("dialog", lambda d: d.accept())
    yield pg
    _capture_failure(request, pg)
    pg.close()


@pytest.fixture(params=APPS)
def app(request: pytest.FixtureRequest) -> str:
    """Run a test once in JupyterLab and once in Notebook 7."""
    return request.param


@pytest.fixture
def notebook(
    page, servers: dict[str, JupyterServer], app: str, request: pytest.FixtureRequest
) -> Iterator[Callable[[list[str]], object]]:
    """``notebook(cells)`` writes a notebook into the server root and opens it in ``page``.

    The page is returned with the kernel idle; sessions are deleted afterwards.
    """
    server = servers[app]

    def open_cells(cells: list[str]):
        name = re.sub(r"\W+", "_", request.node.name)
        path = server.write_notebook(name, cells)
        open_notebook(page, server, path)
        return page

    yield open_cells
    _capture_failure(request, page, server)
    server.delete_sessions()
