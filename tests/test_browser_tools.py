"""The browser tools (think_nb/browser/, issue 31 §2) in the system chromium against local HTTP
servers on 127.0.0.1: each quick action and `browser_execute`; the fetch tool's guard on every
request the page makes — a page whose script, image, frame, stylesheet, beacon and WebSocket try
a port that is not allowed (counted at that server: zero requests), a redirect to a link-local
address and to that port, the test page itself refused until loopback is allowed; a huge page
(stopped at `max_bytes`); a page that never finishes loading (what arrived, within `timeout`); a
download (refused). The kernel-level check that no browser process outlives its kernel is
tests/kernel/test_browser_processes_kernel.py."""

from __future__ import annotations

import base64
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness import wait_until
from think_nb.browser import browser_tools, close_browser
from think_nb.browser.host import HOST
from think_nb.browser.page import BrowserError
from think_nb.tools.tool import Tool, ToolInputError

HUGE_BYTES = 40_000_000
release = threading.Event()  # set at teardown: the never-ending page's handler returns


def page_html(forbidden: str) -> str:
    return f"""<html><head><title>Shop</title></head><body>
<h1>Fruit</h1><p>Fresh <b>today</b>, see <a href="/about">about us</a>.</p>
<ul><li class="item" data-price="3">Apple</li><li class="item" data-price="5">Pear</li></ul>
<a href="https://example.com/x">elsewhere</a><a href="/about">again</a>
<button id="more" onclick="document.getElementById('out').textContent = 'clicked'">More</button>
<input id="q"><div id="out"></div>
<p hidden>secret {forbidden}</p>
</body></html>"""


def sneaky_html(forbidden: str) -> str:
    return f"""<html><head><title>Sneaky</title><link rel="stylesheet" href="{forbidden}/css">
<script src="{forbidden}/script.js"></script></head><body><h1>Sneaky</h1>
<img src="{forbidden}/img.png"><iframe src="{forbidden}/frame"></iframe>
<script>
fetch("{forbidden}/xhr").catch(() => {{}});
navigator.sendBeacon("{forbidden}/beacon", "x");
try {{ new WebSocket("{forbidden.replace('http', 'ws')}/ws"); }} catch (e) {{}}
window.open("{forbidden}/popup");
</script></body></html>"""


class Server:
    """A ThreadingHTTPServer on 127.0.0.1 that records each request's path."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.requests: list[str] = []
        self.sent = 0
        server = self

        class Bound(handler):  # type: ignore[valid-type, misc]
            owner = server

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Bound)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


class Counting(BaseHTTPRequestHandler):
    owner: Server

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.owner.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_POST = do_GET


class Site(Counting):
    forbidden = ""

    def _send(self, status: int, body: bytes, ctype: str = "text/html", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k.replace("_", "-"), v)
        self.end_headers()
        self.wfile.write(body)

    def _huge(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        chunk = b"<p>" + b"lorem ipsum " * 80 + b"</p>\n"
        try:
            self.wfile.write(b"<html><body><h1>Huge</h1>")
            while self.owner.sent < HUGE_BYTES:
                self.wfile.write(chunk)
                self.owner.sent += len(chunk)
        except OSError:  # the browser stopped reading
            return

    def _hang(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><body><h1>Partial</h1><p>first part</p>")
        self.wfile.flush()
        release.wait(120)

    def do_GET(self) -> None:
        self.owner.requests.append(self.path)
        forbidden = type(self).forbidden
        routes = {
            "/page": lambda: self._send(200, page_html(forbidden).encode()),
            "/sneaky": lambda: self._send(200, sneaky_html(forbidden).encode()),
            "/to-forbidden": lambda: self._send(302, b"", Location=f"{forbidden}/landing"),
            "/to-link-local": lambda: self._send(302, b"", Location="http://169.254.169.254/latest/meta-data/"),
            "/to-page": lambda: self._send(301, b"", Location="/page"),
            "/download": lambda: self._send(200, b"a,b\n1,2\n", "text/csv", Content_Disposition="attachment; x.csv"),
            "/cookie": lambda: self._send(200, b"<h1>set</h1><script>new WebSocket('ws://' + location.host + '/ws')"
                                              b"</script>", Set_Cookie="sid=abc; Path=/"),
            "/echo": lambda: self._send(200, f"<p>{self.headers.get('Cookie', '-')}</p>".encode()),
            "/huge": self._huge,
            "/hang": self._hang,
        }
        routes.get(self.path, lambda: self._send(404, b"<h1>missing</h1>"))()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Server, Server]]:
    """(the site, allowed; the forbidden server on another port, never allowed)."""
    release.clear()
    forbidden = Server(Counting)
    Site.forbidden = forbidden.url
    site = Server(Site)
    try:
        yield site, forbidden
    finally:
        release.set()
        HOST.close_sync()
        site.stop()
        forbidden.stop()


@pytest.fixture
def site(servers: tuple[Server, Server]) -> Server:
    servers[0].requests.clear()
    servers[1].requests.clear()
    return servers[0]


@pytest.fixture
def forbidden(servers: tuple[Server, Server]) -> Server:
    return servers[1]


def tools(site: Server, **kw: object) -> dict[str, Tool]:
    """The tools with the site's port allowed (loopback must be allowed explicitly, as a user would)."""
    hosts = [f"127.0.0.1:{site.port}", "169.254.169.254"]
    return {t.name: t for t in browser_tools(allow_hosts=hosts, allow_private=["127.0.0.1"], **kw)}  # type: ignore[arg-type]


async def test_markdown_of_a_page_and_of_raw_html(site: Server) -> None:
    md = await tools(site)["browser_markdown"].invoke({"url": f"{site.url}/page"})
    assert md.splitlines()[:4] == ["Shop", "", "# Fruit", ""]
    assert "Fresh **today**, see [about us](/about)." in md
    assert "* Apple\n* Pear" in md
    assert await tools(site)["browser_markdown"].invoke({"html": "<h2>Hi</h2><p>there</p>"}) == "## Hi\n\nthere"
    assert site.requests == ["/page"]
    with pytest.raises(ToolInputError, match="Provide either 'url' or 'html'"):
        await tools(site)["browser_markdown"].invoke({})


async def test_extract_links_and_scrape(site: Server) -> None:
    t = tools(site)
    url = f"{site.url}/page"
    assert await t["browser_extract"].invoke({"url": url, "selector": "li.item"}) == ["Apple", "Pear"]
    assert await t["browser_extract"].invoke({"url": url, "selector": "li", "attribute": "data-price"}) == ["3", "5"]
    assert await t["browser_links"].invoke({"url": url}) == [f"{site.url}/about", "https://example.com/x"]
    assert await t["browser_scrape"].invoke({"url": url, "selectors": ["h1", "li.item"]}) == [
        {"selector": "h1", "results": [{"text": "Fruit", "html": "Fruit", "attributes": []}]},
        {"selector": "li.item", "results": [
            {"text": "Apple", "html": "Apple", "attributes": [{"name": "class", "value": "item"},
                                                              {"name": "data-price", "value": "3"}]},
            {"text": "Pear", "html": "Pear", "attributes": [{"name": "class", "value": "item"},
                                                            {"name": "data-price", "value": "5"}]}]}]
    with pytest.raises(BrowserError, match="invalid_selector"):
        await t["browser_extract"].invoke({"url": url, "selector": "li[[["})


async def test_results_are_bounded_like_thinks(site: Server) -> None:
    t = tools(site, max_chars=40)
    md = await t["browser_markdown"].invoke({"html": "<p>" + "word " * 100 + "</p>"})
    assert md == "word " * 7 + "word \n\n[truncated 459 characters]"
    items = await t["browser_extract"].invoke({"html": "<li>aaaa</li>" * 30, "selector": "li"})
    assert items == ["aaaa"] * 5  # the leading items whose JSON fits in 40 characters


async def test_screenshot_is_an_image(site: Server) -> None:
    shot = await tools(site, viewport=(640, 360))["browser_screenshot"].invoke({"url": f"{site.url}/page"})
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", shot[16:24]) == (640, 360)


async def test_a_screenshot_in_a_turn_is_stored_as_an_image_and_the_model_receives_it(site: Server) -> None:
    """The screenshot's PNG is the tool's content output (`think_nb.messages.media`, issue 31 §1): the
    stored part holds the image, and the model's next request carries it as an image, not as text."""
    from think_nb import Think
    from think_nb.testing import ScriptedModel as S

    script = S([[S.tool_call("browser_screenshot", {"url": f"{site.url}/page"})], [S.text("A fruit shop.")]])

    class Looker(Think):
        include_workspace_tools = False

        def get_model(self):  # type: ignore[no-untyped-def]
            return script.model

        def get_tools(self):  # type: ignore[no-untyped-def]
            return browser_tools(allow_hosts=[f"127.0.0.1:{site.port}"], allow_private=["127.0.0.1"],
                                 actions=["screenshot"], viewport=(320, 200))

    agent = Looker("looker")
    assert (await agent.send("what does it look like?")).status == "completed"
    part = next(p for p in agent.messages[-1]["parts"] if p["type"] == "tool-browser_screenshot")
    (item,) = part["output"]["value"]
    assert (part["output"]["type"], item["type"], item["mediaType"]) == ("content", "image-data", "image/png")
    png = base64.b64decode(item["data"])
    assert struct.unpack(">II", png[16:24]) == (320, 200)
    sent = str(script.requests[1]["messages"])
    assert f"data:image/png;base64,{item['data']}" in sent
    await agent.shutdown()


async def test_no_request_of_the_page_reaches_a_host_that_is_not_allowed(site: Server, forbidden: Server) -> None:
    md = await tools(site)["browser_markdown"].invoke({"url": f"{site.url}/sneaky"})
    assert md.startswith("Sneaky\n\n# Sneaky")
    assert "request(s) of the page were refused" in md
    assert forbidden.requests == []  # script, stylesheet, image, frame, fetch, beacon, WebSocket, popup
    assert site.requests == ["/sneaky"]
    # the control: with that port allowed too, the same page does reach it (through the guard)
    both = browser_tools(allow_hosts=[f"127.0.0.1:{site.port}", f"127.0.0.1:{forbidden.port}"],
                         allow_private=["127.0.0.1"], actions=["markdown"])[0]
    await both.invoke({"url": f"{site.url}/sneaky"})
    assert {"/css", "/script.js", "/img.png", "/frame"} <= set(forbidden.requests), forbidden.requests


async def test_every_request_of_browser_execute_is_checked_too(site: Server, forbidden: Server) -> None:
    code = f"""
goto({site.url + '/sneaky'!r})
evaluate("fetch('{forbidden.url}/late').then(() => 1, () => 0)")
refused = sorted(set(b['code'] for b in blocked()))
try:
    goto({forbidden.url + '/typed'!r})
    typed = 'loaded'
except RuntimeError as e:
    typed = str(e)
try:
    cdp('Page.navigate', {{'url': 'file:///etc/passwd'}})
    local = 'loaded'
except RuntimeError as e:
    local = str(e)
[refused, typed, local]
"""
    out = await tools(site)["browser_execute"].invoke({"code": code})
    assert out["result"] == [
        ["not_allowed"],
        f"goto: BrowserError: not_allowed: host '127.0.0.1:{forbidden.port}' is not in the allowed hosts",
        "cdp: BrowserError: invalid_url: file: URLs are not loaded"]
    assert forbidden.requests == []


async def test_redirects_are_rechecked(site: Server, forbidden: Server) -> None:
    t = tools(site)
    with pytest.raises(BrowserError, match="blocked_address") as link_local:
        await t["browser_markdown"].invoke({"url": f"{site.url}/to-link-local"})
    assert "169.254.169.254" in str(link_local.value)
    with pytest.raises(BrowserError, match="not_allowed"):
        await t["browser_markdown"].invoke({"url": f"{site.url}/to-forbidden"})
    assert forbidden.requests == []
    followed = await t["browser_markdown"].invoke({"url": f"{site.url}/to-page"})
    assert "# Fruit" in followed
    assert site.requests == ["/to-link-local", "/to-forbidden", "/to-page", "/page"]


async def test_loopback_is_refused_unless_allowed(site: Server) -> None:
    unlisted = {t.name: t for t in browser_tools(allow_hosts=[f"127.0.0.1:{site.port}"])}
    with pytest.raises(BrowserError, match=r"blocked_address: '127\.0\.0\.1' resolves to 127\.0\.0\.1"):
        await unlisted["browser_markdown"].invoke({"url": f"{site.url}/page"})
    off = {t.name: t for t in browser_tools()}
    with pytest.raises(BrowserError, match="not_allowed: the browser tools load nothing"):
        await off["browser_links"].invoke({"url": f"{site.url}/page"})
    with pytest.raises(BrowserError, match="invalid_url"):
        await tools(site)["browser_markdown"].invoke({"url": "file:///etc/passwd"})
    assert site.requests == []


async def test_a_huge_page_is_stopped_at_max_bytes(site: Server) -> None:
    md = await tools(site, max_bytes=1_000_000, max_chars=5000)["browser_markdown"].invoke({"url": f"{site.url}/huge"})
    assert md.startswith("# Huge\n\nlorem ipsum")
    assert "[truncated " in md and "passed 1000000 bytes and was stopped" in md
    assert site.sent < HUGE_BYTES  # the browser stopped reading long before the end


async def test_a_page_that_never_finishes_gives_what_arrived(site: Server) -> None:
    md = await tools(site, timeout=2)["browser_markdown"].invoke({"url": f"{site.url}/hang"})
    assert md == "# Partial\n\nfirst part\n\n[the page did not finish loading within 2 s; this is what had arrived]"


async def test_a_page_whose_script_never_yields_cannot_hold_the_call(site: Server) -> None:
    busy = "<h1>busy</h1><script>setTimeout(() => { while (true) {} }, 0)</script>"  # loads, then never yields
    with pytest.raises(BrowserError, match=r"timeout: the page did not answer within 11 s"):
        await tools(site, timeout=1)["browser_markdown"].invoke({"html": busy})
    with pytest.raises(BrowserError, match=r"timeout: no answer from the HTML within 1 s"):  # busy before it loads
        await tools(site, timeout=1)["browser_markdown"].invoke({"html": "<script>while (true) {}</script>"})


async def test_downloads_are_refused(site: Server) -> None:
    with pytest.raises(BrowserError, match=r"download: .* downloads are refused"):
        await tools(site)["browser_markdown"].invoke({"url": f"{site.url}/download"})


async def test_browser_execute_drives_a_page(site: Server) -> None:
    code = f"""
info = goto({site.url + '/page'!r})
fill('#q', 'pears')
click('#more')
print('typed', evaluate("document.getElementById('q').value"))
three = cdp('Runtime.evaluate', {{'expression': '1 + 2', 'returnByValue': True}})['result']['value']
try:
    cdp('Network.getAllCookies')
    network = 'allowed'
except RuntimeError as e:
    network = str(e)
shot = screenshot()
{{'title': info['title'], 'status': info['status'], 'items': text('li.item'), 'out': text('#out'),
  'three': three, 'network': network, 'shot': shot['mediaType'], 'links': len(links())}}
"""
    out = await tools(site)["browser_execute"].invoke({"code": code})
    refused = ("cdp: BrowserError: not_allowed_cdp: 'Network.getAllCookies' is not available; use the domains "
               "Accessibility, Animation, CSS, DOM, DOMSnapshot, Emulation, Input, LayerTree, Log, Overlay, Page, "
               "Performance, Runtime")
    assert out == {"result": {"title": "Shop", "status": 200, "items": ["Apple", "Pear"], "out": ["clicked"],
                              "three": 3, "network": refused, "shot": "image/png", "links": 2},
                   "stdout": "typed pears\n", "calls": 10}


async def test_cookies_last_the_call_and_websockets_are_refused(site: Server) -> None:
    code = f"""
goto({site.url + '/cookie'!r})
evaluate("document.cookie = 'js=1'")
goto({site.url + '/echo'!r})
[text('p'), [b['code'] + ' ' + b['message'] for b in blocked()]]
"""
    out = await tools(site)["browser_execute"].invoke({"code": code})
    assert out["result"] == [["sid=abc; js=1"], ["not_supported WebSockets are not relayed by the browser tools"]]
    assert await tools(site)["browser_markdown"].invoke({"url": f"{site.url}/echo"}) == "-"  # a new call: no cookies
    assert site.requests == ["/cookie", "/echo", "/echo"]  # no /ws


def test_bad_settings_are_one_line_errors() -> None:
    from think_nb.errors import UserError

    with pytest.raises(UserError, match="pass a list"):
        browser_tools(allow_hosts="example.com")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="is not a host"):
        browser_tools(allow_hosts=["http://example.com/"])
    with pytest.raises(UserError, match="timeout=0"):
        browser_tools(timeout=0)
    with pytest.raises(UserError, match="unknown"):
        browser_tools(actions=["click"])
    assert [t.name for t in browser_tools(actions=["links", "markdown"])] == ["browser_markdown", "browser_links"]


async def test_close_browser_then_the_next_call_starts_it_again(site: Server) -> None:
    await tools(site)["browser_links"].invoke({"html": "<a href='https://a.example/'>a</a>"})
    launches = HOST.launches
    await close_browser()
    assert await tools(site)["browser_links"].invoke({"html": "<a href='https://b.example/'>b</a>"}) == [
        "https://b.example/"]
    assert HOST.launches == launches + 1


def browser_pids() -> set[int]:
    """Every process of this process's browser (marked THINK_NB_BROWSER_OWNER=<our pid>)."""
    import contextlib
    import os

    import psutil

    found = set()
    for proc in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("THINK_NB_BROWSER_OWNER") == str(os.getpid()):
                found.add(proc.pid)
    return found


async def test_a_turn_uses_the_tools_browser_execute_asks_approval_and_shutdown_closes_the_browser(
        site: Server) -> None:
    import asyncio

    from think_nb import Think
    from think_nb.testing import ScriptedModel as S

    code = f"goto({site.url + '/page'!r})\ntext('h1')"
    script = S([[S.tool_call("browser_links", {"url": f"{site.url}/page"}),
                 S.tool_call("browser_execute", {"code": code})], [S.text("Fruit it is.")]])

    class Surfer(Think):
        include_workspace_tools = False

        def get_model(self):  # type: ignore[no-untyped-def]
            return script.model

        def get_tools(self):  # type: ignore[no-untyped-def]
            return browser_tools(allow_hosts=[f"127.0.0.1:{site.port}"], allow_private=["127.0.0.1"],
                                 execute_approval=True)

    agent = Surfer("surfer")
    first = await agent.send("what is sold?")
    assert first.status == "completed" and site.requests == ["/page"]  # the links; the code waits for approval
    parts = agent.messages[-1]["parts"]
    assert parts[1] == {"type": "tool-browser_links", "toolCallId": "call_1_0", "state": "output-available",
                        "input": {"url": f"{site.url}/page"}, "output": [f"{site.url}/about", "https://example.com/x"]}
    assert parts[2]["type"] == "tool-browser_execute" and parts[2]["state"] == "approval-requested"
    done = await agent.approve("call_1_1")
    assert done.status == "completed" and site.requests == ["/page", "/page"]
    executed = next(p for m in agent.messages for p in m["parts"] if p["type"] == "tool-browser_execute")
    assert executed["state"] == "output-available"
    assert executed["output"] == {"result": ["Fruit"], "stdout": "", "calls": 2}
    assert agent.messages[-1]["parts"][-1] == {"type": "text", "text": "Fruit it is.", "state": "done"}
    assert browser_pids()  # the browser runs ...
    await agent.shutdown()
    await asyncio.to_thread(wait_until, lambda: not browser_pids(), "the agent's shutdown closed the browser",
                            timeout=30)


async def test_a_request_interception_did_not_see_goes_nowhere(site: Server) -> None:
    """The browser's own network path leads to a proxy that does not exist: a context without the
    guard's routes (as a request Playwright would not route) reaches no server."""
    from playwright.async_api import Error

    from think_nb.browser.host import Settings

    async def unguarded(browser: object) -> str:
        context = await browser.new_context()  # type: ignore[attr-defined]
        try:
            page = await context.new_page()
            with pytest.raises(Error) as failed:
                await page.goto(f"{site.url}/page", timeout=15_000)
            return str(failed.value).splitlines()[0]
        finally:
            await context.close()

    assert "net::ERR_PROXY_CONNECTION_FAILED" in await HOST.run(Settings(), unguarded)
    assert site.requests == []


async def test_another_executable_and_a_running_chrome_over_cdp(site: Server, tmp_path: object) -> None:
    """`executable=` launches that Chromium (here the binary behind Debian's wrapper script);
    `cdp_endpoint=` connects to a running one, whose requests the guard still makes, and never closes it."""
    import asyncio
    import re

    import psutil

    from think_nb.browser.netguard import DEAD_PROXY

    other = {t.name: t for t in browser_tools(allow_hosts=[f"127.0.0.1:{site.port}"], allow_private=["127.0.0.1"],
                                              executable="/usr/lib/chromium/chromium")}
    assert (await other["browser_extract"].invoke({"url": f"{site.url}/page", "selector": "h1"})) == ["Fruit"]
    chrome = await asyncio.create_subprocess_exec(
        "/usr/bin/chromium", "--headless=new", "--no-sandbox", "--remote-debugging-port=0",
        f"--user-data-dir={tmp_path}", f"--proxy-server={DEAD_PROXY}", "--proxy-bypass-list=<-loopback>",
        "about:blank", stderr=asyncio.subprocess.PIPE)
    try:
        assert chrome.stderr is not None
        line = ""
        while "DevTools listening on" not in line:
            line = (await chrome.stderr.readline()).decode()
            assert line, "chromium exited before it listened"
        endpoint = re.search(r"ws://\S+", line).group(0)  # type: ignore[union-attr]
        running = {t.name: t for t in browser_tools(allow_hosts=[f"127.0.0.1:{site.port}"],
                                                    allow_private=["127.0.0.1"], cdp_endpoint=endpoint)}
        assert await running["browser_links"].invoke({"url": f"{site.url}/page"}) == [
            f"{site.url}/about", "https://example.com/x"]
        await close_browser()
        assert psutil.Process(chrome.pid).status() != psutil.STATUS_ZOMBIE  # disconnected from, not closed
        assert await running["browser_markdown"].invoke({"html": "<h1>again</h1>"}) == "# again"
    finally:
        chrome.kill()
        await chrome.wait()
    assert site.requests == ["/page", "/page"]
