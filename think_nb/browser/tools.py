"""`browser_tools(...)`: the tools of Think's `createBrowserTools` (quick actions and
`browser_execute`), on the kernel's browser (think_nb/browser/host.py)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from think_nb.browser.host import HOST, SYSTEM_CHROMIUM, Settings
from think_nb.browser.page import BrowserError, Options, Page
from think_nb.errors import UserError
from think_nb.tools.tool import Tool, ToolInputError, from_function
from think_nb.workspace.fetch import UrlGuard, private_networks

GRACE_S = 10.0
"""Seconds a page action may take past the load `timeout` (reading the page, a screenshot)."""
ACTIONS = ("markdown", "extract", "links", "scrape", "screenshot", "execute")
EXECUTE_DESCRIPTION = (
    "Drive a browser page with Python code in a sandbox (a Python subset: no imports, files or network). "
    "Page functions: goto(url) -> {url, status, title, timedOut}; markdown() -> str; html(selector=None) -> str; "
    "text(selector) -> [str]; query(selector) -> [{text, html, attributes}]; links() -> [url]; "
    "click(selector); fill(selector, value); press(selector, key); evaluate(js_expression) -> JSON value; "
    "screenshot() -> image part; cdp(method, params={}) -> result (Chrome DevTools Protocol, page domains "
    "only: DOM, CSS, Runtime, Page, Input, Emulation, Accessibility, ...); blocked() -> requests refused. "
    "The page starts blank and lives for this call only; only allowed hosts load. The value of the last "
    "expression is returned, with everything printed.")
_HOST = re.compile(r"(\*\.)?[a-z0-9.-]+(:\d{1,5})?|\[[0-9a-f:.]+\](:\d{1,5})?|[0-9a-f:.]+")
_PAGE: contextvars.ContextVar[_Lazy | None] = contextvars.ContextVar("think_nb_browser_page", default=None)


def browser_tools(*, allow_hosts: Iterable[str] = (), allow_private: Iterable[str] = (),
                  executable: str = SYSTEM_CHROMIUM, cdp_endpoint: str | None = None, timeout: float = 15.0,
                  max_bytes: int = 5_000_000, max_chars: int = 50_000, viewport: tuple[int, int] = (1280, 800),
                  max_screenshot_bytes: int = 1_000_000, actions: Iterable[str] = ACTIONS,
                  execute_timeout: float = 30.0, execute_approval: bool | Callable[[dict], Any] = False) -> list[Tool]:
    """The browser tools of Think's `createBrowserTools` (install with `pip install 'think-nb[browser]'`).

    Quick actions, each on a fresh page (input `url` or raw `html`): `browser_markdown` -> str,
    `browser_extract(selector, attribute=None)` -> [str] (Think's extract asks a model; here a CSS
    selector picks), `browser_links` -> [url], `browser_scrape(selectors)` ->
    `[{selector, results: [{text, html, attributes: [{name, value}]}]}]`, `browser_screenshot` -> the
    PNG (JPEG past `max_screenshot_bytes`) bytes, stored as the AI SDK's content output with an
    `image-data` item that a vision model receives and the panel shows (`think_nb.messages.media`); and
    `browser_execute(code)`: Python in the `execute` tool's sandbox (pydantic-monty) calling page
    functions (`goto`, `markdown`, `click`, `evaluate`, `cdp`, ...), with `execute`'s limits, its
    inner calls through `before_tool_call`/`after_tool_call` as `execute`'s are, and the whole call
    gated when `execute_approval` says so (the approval card shows the code).

    Every request the page makes (redirects, scripts, images, frames, XHR, popups) passes the `fetch`
    tool's guard: `allow_hosts`, then private, loopback and link-local addresses refused unless in
    `allow_private`; the guard makes it and hands the answer to the page. WebSockets, downloads and
    service workers are refused; at most `max_bytes` received and `timeout` seconds of loading per
    page. See think_nb/browser/netguard.py.

    Args:
        allow_hosts: hosts pages may load: `"example.com"`, `"*.example.com"`, `"127.0.0.1:8000"` (that
            port only); empty: every call is refused.
        allow_private: addresses or networks allowed despite the SSRF guard (`"127.0.0.1"`, `"10.0.0.0/8"`).
        executable: the Chromium to launch (default the system `/usr/bin/chromium`).
        cdp_endpoint: connect to a running Chrome instead (`"http://127.0.0.1:9222"`); it is never closed.
        timeout: seconds a page may take to load (past it, what arrived is used). max_bytes: bytes a
            page may receive. max_chars: characters of each result (Think's `maxChars`).
        viewport: (width, height) in CSS pixels. max_screenshot_bytes: screenshot size (PNG, else JPEG).
        actions: which tools to make, of `markdown`, `extract`, `links`, `scrape`, `screenshot`, `execute`.
        execute_timeout: seconds of sandbox execution of `browser_execute` (time in page calls not counted).
        execute_approval: `needs_approval` of `browser_execute` (True, or a predicate on its input).

    Raises:
        UserError: a malformed host or network, a limit that is not positive, an unknown action, or
            Playwright not installed.
    """
    options = _options(allow_hosts, allow_private, timeout, max_bytes, max_chars, viewport, max_screenshot_bytes)
    wanted = list(actions)
    unknown = [a for a in wanted if a not in ACTIONS]
    if unknown:
        raise UserError(f"browser_tools(actions={unknown!r}): unknown; pass some of {', '.join(ACTIONS)}.")
    _require_playwright()
    settings = Settings(executable=executable, cdp_endpoint=cdp_endpoint)
    quick = _Quick(settings, options)
    made = {
        "markdown": lambda: from_function(quick.markdown, name="browser_markdown"),
        "extract": lambda: from_function(quick.extract, name="browser_extract"),
        "links": lambda: from_function(quick.links, name="browser_links"),
        "scrape": lambda: from_function(quick.scrape, name="browser_scrape"),
        "screenshot": lambda: from_function(quick.screenshot, name="browser_screenshot"),
        "execute": lambda: _execute_tool(settings, options, execute_timeout, execute_approval),
    }
    return [made[a]() for a in ACTIONS if a in wanted]


def _options(allow_hosts: Iterable[str], allow_private: Iterable[str], timeout: float, max_bytes: int,
             max_chars: int, viewport: tuple[int, int], max_screenshot_bytes: int) -> Options:
    if isinstance(allow_hosts, str):
        raise UserError(f"browser_tools(allow_hosts={allow_hosts!r}): pass a list, e.g. ['{allow_hosts}'].")
    hosts = [str(h).strip().lower() for h in allow_hosts]
    for h in hosts:
        if not _HOST.fullmatch(h):
            raise UserError(f"browser_tools(allow_hosts=...): {h!r} is not a host; pass e.g. 'example.com', "
                            "'*.example.com' or '127.0.0.1:8000'.")
    private = private_networks(allow_private, "browser_tools")
    for label, value in (("timeout", timeout), ("max_bytes", max_bytes), ("max_chars", max_chars),
                         ("max_screenshot_bytes", max_screenshot_bytes)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise UserError(f"browser_tools({label}={value!r}): pass a positive number.")
    if (not isinstance(viewport, (tuple, list)) or len(viewport) != 2
            or not all(isinstance(v, int) and v > 0 for v in viewport)):
        raise UserError(f"browser_tools(viewport={viewport!r}): pass (width, height) in pixels, e.g. (1280, 800).")
    off = "the browser tools load nothing: no hosts are allowed (browser_tools(allow_hosts=[...]))"
    return Options(UrlGuard(hosts, private, off=off), int(max_bytes), float(timeout), int(max_chars),
                   (viewport[0], viewport[1]), int(max_screenshot_bytes))


def _require_playwright() -> None:
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        raise UserError("browser_tools() needs Playwright: pip install 'think-nb[browser]' (it drives the system "
                        "chromium; no `playwright install` needed).")


@contextlib.asynccontextmanager
async def _deadline(options: Options) -> AsyncIterator[None]:
    """One page action (load and read, or one page function) within `timeout` + `GRACE_S` seconds: a
    page whose script never yields (`while (true) {}`) cannot hold the call (`BrowserError` "timeout")."""
    limit = options.timeout + GRACE_S
    try:
        async with asyncio.timeout(limit):
            yield
    except TimeoutError:
        raise BrowserError("timeout", f"the page did not answer within {limit:g} s") from None


def _page_input(url: str | None, html: str | None) -> None:
    if (url is None) == (html is None):
        raise ToolInputError("Provide either 'url' or 'html'")


class _Quick:
    """The quick actions: each loads one fresh page, reads it, closes it (all on the browser thread)."""

    def __init__(self, settings: Settings, options: Options) -> None:
        self.settings, self.options = settings, options

    async def _visit(self, url: str | None, html: str | None, read: Callable[[Page], Awaitable[Any]]) -> Any:
        _page_input(url, html)

        async def visit(browser: Any) -> Any:
            page = await Page(self.options).open(browser)
            try:
                async with _deadline(self.options):
                    await page.load(url, html)
                    return await read(page)
            finally:
                await page.close()

        return await HOST.run(self.settings, visit)

    async def markdown(self, url: str | None = None, html: str | None = None) -> str:
        """Load a web page (or render raw HTML) and return its content as Markdown. Best for reading articles, docs,
        or any page as text. Only allowed hosts load.

        Args:
            url: URL of the page to load
            html: raw HTML to render instead of loading a URL
        """
        return await self._visit(url, html, lambda page: page.markdown())

    async def extract(self, selector: str, url: str | None = None, html: str | None = None,
                      attribute: str | None = None) -> list:
        """Load a web page (or render raw HTML) and return the text of every element matching a CSS selector
        (or the value of one attribute of each).

        Args:
            selector: CSS selector, e.g. "h2" or "table td.price"
            url: URL of the page to load
            html: raw HTML to render instead of loading a URL
            attribute: return this attribute of each element (e.g. "href", "src") instead of its text
        """
        return await self._visit(url, html,
                                 lambda page: page.extract(selector, attribute))

    async def links(self, url: str | None = None, html: str | None = None) -> list:
        """Return every link found on a web page (including ones not visible). Useful for discovering pages to follow.

        Args:
            url: URL of the page to load
            html: raw HTML to render instead of loading a URL
        """
        return await self._visit(url, html, lambda page: page.links())

    async def scrape(self, selectors: list[str], url: str | None = None, html: str | None = None) -> list:
        """Scrape specific elements from a web page by CSS selector. Returns the matched elements' text, HTML, and
        attributes.

        Args:
            selectors: CSS selectors to extract (at least one)
            url: URL of the page to load
            html: raw HTML to render instead of loading a URL
        """
        if not selectors:
            raise ToolInputError("Provide at least one selector")
        return await self._visit(url, html, lambda page: page.scrape(selectors))

    async def screenshot(self, url: str | None = None, html: str | None = None, full_page: bool = False) -> bytes:
        """Load a web page (or render raw HTML) and take a screenshot; returns the image.

        Args:
            url: URL of the page to load
            html: raw HTML to render instead of loading a URL
            full_page: the whole scrollable page instead of the viewport
        """
        # PNG (or JPEG) bytes: stored as the AI SDK's content output (`think_nb.messages.media`), so a
        # vision model receives the image and the panel shows it in the tool's card
        part = await self._visit(url, html, lambda page: page.screenshot(full_page))
        return base64.b64decode(part["url"].split(",", 1)[1])


# -- browser_execute ---------------------------------------------------------------------------------
class _Lazy:
    """The page of one `browser_execute` call: opened at the first page function, closed at the end."""

    def __init__(self, settings: Settings, options: Options) -> None:
        self.settings, self.options = settings, options
        self.page: Page | None = None

    async def use(self, fn: Callable[[Page], Awaitable[Any]]) -> Any:
        async def on_page(browser: Any) -> Any:
            if self.page is None:
                self.page = await Page(self.options).open(browser)
            async with _deadline(self.options):
                return await fn(self.page)

        return await HOST.run(self.settings, on_page)

    async def close(self) -> None:
        if self.page is not None:
            page = self.page
            await HOST.run(self.settings, lambda _browser: page.close())


def _current() -> _Lazy:
    lazy = _PAGE.get()
    if lazy is None:
        raise RuntimeError("page functions run only inside browser_execute")
    return lazy


def _page_functions() -> list[Tool]:
    """The functions the sandboxed code calls (tools of the inner `execute` runner)."""

    async def goto(url: str) -> dict:
        """Load a URL in the page."""
        return await _current().use(lambda p: p.goto(url))

    async def markdown() -> str:
        """The page as markdown."""
        return await _current().use(lambda p: p.markdown())

    async def html(selector: str | None = None) -> str:
        """The page's HTML, or the first match's outer HTML."""
        return await _current().use(lambda p: p.html(selector))

    async def text(selector: str) -> list:
        """The text of every element matching the selector."""
        return await _current().use(lambda p: p.extract(selector))

    async def query(selector: str) -> list:
        """Every element matching the selector: text, html, attributes."""
        found = await _current().use(lambda p: p.scrape([selector]))
        return found[0]["results"] if isinstance(found, list) and found else found

    async def links() -> list:
        """Every link of the page."""
        return await _current().use(lambda p: p.links())

    async def click(selector: str) -> bool:
        """Click the first element matching the selector."""
        return await _current().use(lambda p: p.act("click", selector))

    async def fill(selector: str, value: str) -> bool:
        """Fill the first input matching the selector."""
        return await _current().use(lambda p: p.act("fill", selector, value))

    async def press(selector: str, key: str = "Enter") -> bool:
        """Press a key in the first element matching the selector."""
        return await _current().use(lambda p: p.act("press", selector, key))

    async def evaluate(expression: str) -> Any:
        """Evaluate JavaScript in the page; its JSON value."""
        return await _current().use(lambda p: p.evaluate(expression))

    async def screenshot() -> dict:
        """A screenshot of the viewport, as an image part."""
        return await _current().use(lambda p: p.screenshot())

    async def cdp(method: str, params: dict | None = None) -> Any:
        """A Chrome DevTools Protocol command on the page."""
        return await _current().use(lambda p: p.cdp(method, params))

    async def blocked() -> list:
        """The requests of the page that were refused."""
        return await _current().use(lambda p: _async(list(p.guard.blocked)))

    return [from_function(f) for f in (goto, markdown, html, text, query, links, click, fill, press, evaluate,
                                       screenshot, cdp, blocked)]


async def _async(value: Any) -> Any:
    return value


def _execute_tool(settings: Settings, options: Options, timeout: float,
                  approval: bool | Callable[[dict], Any]) -> Tool:
    """`execute`'s runner over the page functions. No agent is given to it: no page function needs
    approval, so nothing in the code pauses; `approval` gates the whole call, before it runs."""
    from think_nb.workspace.execute import execute_tool

    inner = execute_tool(tools=_page_functions(), name="browser_execute", timeout=timeout)
    assert inner.function is not None
    run = inner.function

    async def browser_execute(code: str) -> dict:
        """Run Python code that drives a browser page (goto, markdown, click, evaluate, cdp, ...).

        Args:
            code: Python source; the value of its last expression is returned
        """
        lazy = _Lazy(settings, options)
        token = _PAGE.set(lazy)
        try:
            return await run(code=code)
        finally:
            _PAGE.reset(token)
            await lazy.close()

    return from_function(browser_execute, name="browser_execute", description=EXECUTE_DESCRIPTION,
                         needs_approval=approval)
