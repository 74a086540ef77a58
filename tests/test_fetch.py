"""The `fetch` tool against a local HTTP server on 127.0.0.1: the allowlist, the SSRF guard
(loopback refused unless allowed, a redirect to a private address refused), the size cap, HTML
to markdown, long bodies written to the workspace, structured errors."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from think_nb.workspace.fetch import ACCEPT, fetch_tool

PAGE = ("<html><head><title>T</title><style>p {color: red}</style><script>alert(1)</script></head>"
        "<body><h1>Title</h1><p>Hello <b>world</b>, see <a href='/docs'>the docs</a>.</p></body></html>")
requests: list[str] = []
received: list[dict[str, str]] = []  # the request headers of each GET /headers, names lowercased
trickled = threading.Event()  # never set: a pause the server thread can take


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str, length: bool = True, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for k, v in headers.items():
            self.send_header(k.replace("_", "-"), v)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self) -> None:
        """A byte every 0.2 s for 8 s: each read is quick, the whole answer is slow."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        for _ in range(40):
            try:
                self.wfile.write(b"z")
                self.wfile.flush()
            except OSError:  # the client gave up
                requests.append("/trickle dropped by the client")
                return
            trickled.wait(0.2)

    def do_GET(self) -> None:
        requests.append(f"{self.path} Host={self.headers['Host']}")
        if self.path == "/headers":
            received.append({k.lower(): v for k, v in self.headers.items()})
        port = self.server.server_address[1]
        routes = {
            "/headers": lambda: self._send(200, b"seen", "text/plain"),
            "/to-headers": lambda: self._send(302, b"", "text/plain", Location="/headers"),
            "/to-localhost": lambda: self._send(302, b"", "text/plain", Location=f"http://localhost:{port}/headers"),
            "/page": lambda: self._send(200, PAGE.encode(), "text/html; charset=utf-8"),
            "/json": lambda: self._send(200, b'{"a": 1}', "application/json"),
            "/text": lambda: self._send(200, b"plain " * 100, "text/plain"),
            "/big": lambda: self._send(200, b"x" * 5000, "text/plain"),
            "/stream": lambda: self._send(200, b"y" * 5000, "text/plain", length=False, Connection="close"),
            "/image": lambda: self._send(200, b"\x89PNG....", "image/png"),
            "/missing": lambda: self._send(404, b"nope", "text/plain"),
            "/to-private": lambda: self._send(302, b"", "text/plain", Location="http://10.1.2.3/secret"),
            "/to-other": lambda: self._send(302, b"", "text/plain", Location="http://evil.test/x"),
            "/to-page": lambda: self._send(301, b"", "text/plain", Location="/page"),
            "/loop": lambda: self._send(302, b"", "text/plain", Location="/loop"),
            "/trickle": self._trickle,
            "/to-trickle": lambda: self._send(302, b"", "text/plain", Location="/trickle"),
        }
        routes.get(self.path, lambda: self._send(404, b"", "text/plain"))()


@pytest.fixture
def server() -> Iterator[str]:
    requests.clear()
    received.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def local(**kw: object):  # the loopback server is allowed explicitly, as a user would
    return fetch_tool(allowed_hosts=["127.0.0.1", "10.1.2.3", "evil.test"], allow_private=["127.0.0.1"], **kw)


async def test_html_becomes_markdown(server: str) -> None:
    out = await local().invoke({"url": f"{server}/page"})
    assert out == {"ok": True, "url": f"{server}/page", "status": 200, "contentType": "text/html", "bytes": len(PAGE),
                   "content": "T\n\n# Title\n\nHello **world**, see [the docs](/docs)."}
    assert requests == [f"/page Host={server.removeprefix('http://')}"]


async def test_json_and_text_come_back_as_text(server: str) -> None:
    assert (await local().invoke({"url": f"{server}/json"}))["content"] == '{"a": 1}'
    assert (await local().invoke({"url": f"{server}/text"}))["content"] == "plain " * 100


async def test_fetch_is_off_by_default_and_only_allowed_hosts_are_fetched(server: str) -> None:
    assert await fetch_tool().invoke({"url": f"{server}/page"}) == {
        "ok": False, "code": "not_allowed",
        "message": "fetch is off: no hosts are allowed (fetch_tool(allowed_hosts=[...]))"}
    assert await fetch_tool(allowed_hosts=["example.com"]).invoke({"url": f"{server}/page"}) == {
        "ok": False, "code": "not_allowed", "message": "host '127.0.0.1' is not in the allowed hosts"}
    assert requests == []


async def test_loopback_is_refused_unless_explicitly_allowed(server: str) -> None:
    for url in [f"{server}/page", f"http://localhost:{server.rsplit(':', 1)[1]}/page"]:
        out = await fetch_tool(allowed_hosts=["127.0.0.1", "localhost"]).invoke({"url": url})
        assert out["ok"] is False and out["code"] == "blocked_address"
        assert "private or loopback address" in out["message"]
    assert requests == []  # refused before any connection


async def test_redirects_are_rechecked(server: str) -> None:
    private = await local().invoke({"url": f"{server}/to-private"})
    assert private == {"ok": False, "code": "blocked_address",
                       "message": "'10.1.2.3' resolves to 10.1.2.3, a private or loopback address; it is refused "
                                  "unless allowed with allow_private"}
    other = await fetch_tool(allowed_hosts=["127.0.0.1"], allow_private=["127.0.0.1"]).invoke(
        {"url": f"{server}/to-other"})
    assert other == {"ok": False, "code": "not_allowed", "message": "host 'evil.test' is not in the allowed hosts"}
    followed = await local().invoke({"url": f"{server}/to-page"})
    assert followed["ok"] is True and followed["url"] == f"{server}/page"
    assert (await local(max_redirects=3).invoke({"url": f"{server}/loop"}))["code"] == "too_many_redirects"


async def test_the_size_cap(server: str) -> None:
    too_large = await local(max_bytes=1000).invoke({"url": f"{server}/big"})
    assert too_large == {"ok": False, "code": "too_large",
                         "message": "the body is 5000 bytes, more than max_bytes=1000"}
    cut = await local(max_bytes=1000).invoke({"url": f"{server}/stream"})
    assert cut["ok"] is True and cut["truncated"] is True and cut["content"] == "y" * 1000 and cut["bytes"] == 1000


async def test_structured_errors(server: str) -> None:
    assert await local().invoke({"url": f"{server}/missing"}) == {
        "ok": False, "code": "http_error", "message": "HTTP 404 from '127.0.0.1'", "status": 404}
    assert (await local().invoke({"url": f"{server}/image"}))["code"] == "unsupported_content"
    assert (await local().invoke({"url": "ftp://127.0.0.1/x"}))["code"] == "invalid_url"
    assert (await local().invoke({"url": f"http://user:pw@{server.removeprefix('http://')}/page"}))["code"] == \
        "invalid_url"


async def test_one_deadline_for_the_whole_fetch(server: str) -> None:
    """A server answering a byte every 0.2 s passes a per-read timeout of 1 s for ever (issue 28 §9):
    the timeout is the whole fetch's, redirects included."""
    for path in ("/trickle", "/to-trickle"):
        assert await local(timeout=1).invoke({"url": f"{server}{path}"}) == {
            "ok": False, "code": "timeout", "message": "no complete answer from '127.0.0.1' within 1 s"}


async def test_long_bodies_go_to_the_workspace_with_a_pointer(server: str) -> None:
    memory = MemoryFileSystem(skip_instance_cache=True)
    memory.store.clear()
    out = await local(workspace=memory, inline_chars=100).invoke({"url": f"{server}/text"})
    assert out == {"ok": True, "url": f"{server}/text", "status": 200, "contentType": "text/plain", "bytes": 600,
                   "path": "/fetched/127.0.0.1/text.md", "preview": "plain " * 100,
                   "note": "The whole content (600 characters) was written to /fetched/127.0.0.1/text.md; read or "
                           "grep it there."}
    assert memory.cat("/fetched/127.0.0.1/text.md") == b"plain " * 100
    memory.store.clear()


def test_bad_settings_are_refused_in_one_line() -> None:
    with pytest.raises(Exception, match="is not a host name"):
        fetch_tool(allowed_hosts=["http://x.com/"])
    with pytest.raises(Exception, match="pass addresses or networks"):
        fetch_tool(allow_private=["not-an-ip"])


# -- the header allowlist (Think's fetch-tools.test.ts "fetch — header allowlist") --------------------
def sent_to(server: str, **headers: str) -> dict[str, str]:
    """The headers every fetch sends besides the ones a test sets."""
    return {"host": server.removeprefix("http://"), "user-agent": "think-nb-fetch", **headers}


async def test_only_allowlisted_model_headers_and_fixed_headers_are_sent(server: str) -> None:
    """Think: "forwards allowlisted model headers and fixed headers, drops the rest"."""
    model = {"accept": "application/json", "Authorization": "secret", "Cookie": "s=1", "Accept-Language": "fr",
             "Range": "bytes=0-3", "X-Forwarded-For": "10.0.0.1"}
    out = await local(headers={"X-Agent": "think"}).invoke({"url": f"{server}/headers", "headers": model})
    assert out["ok"] is True and "think" not in str(out)  # a fixed header is never echoed
    assert received == [sent_to(server, accept="application/json", **{"accept-language": "fr"}, range="bytes=0-3",
                                **{"x-agent": "think"})]


async def test_the_default_accept_is_markdown_first_and_the_model_may_override_it(server: str) -> None:
    """Think: "sends a markdown-first default Accept header when none is set", "lets the model
    override the default Accept header"."""
    await local().invoke({"url": f"{server}/headers"})
    await local().invoke({"url": f"{server}/headers", "headers": {"Accept": "application/json"}})
    assert received == [sent_to(server, accept=ACCEPT), sent_to(server, accept="application/json")]
    assert ACCEPT.startswith("text/markdown")


async def test_fixed_headers_win_and_the_default_accept_can_be_turned_off(server: str) -> None:
    """Think: "lets fixed binding headers take precedence over model headers", "sends no default
    Accept header when disabled"."""
    await local(headers={"Accept": "application/vnd.fixed"}).invoke(
        {"url": f"{server}/headers", "headers": {"accept": "application/json"}})
    await local(default_accept="").invoke({"url": f"{server}/headers"})
    await local(model_header_allowlist=["X-Trace"]).invoke(
        {"url": f"{server}/headers", "headers": {"x-trace": "t1", "accept": "text/csv", "range": "bytes=0-1"}})
    assert received == [sent_to(server, accept="application/vnd.fixed"), sent_to(server),
                        sent_to(server, **{"x-trace": "t1"}, accept=ACCEPT)]


async def test_a_redirect_to_another_origin_carries_only_the_default_accept(server: str) -> None:
    tool = fetch_tool(allowed_hosts=["127.0.0.1", "localhost"], allow_private=["127.0.0.1", "::1"],
                      headers={"X-Api-Key": "k-123"})
    model = {"accept-language": "fr"}
    same = await tool.invoke({"url": f"{server}/to-headers", "headers": model})
    other = await tool.invoke({"url": f"{server}/to-localhost", "headers": model})
    assert (same["ok"], other["ok"]) == (True, True)
    port = server.rsplit(":", 1)[1]
    assert received == [sent_to(server, **{"accept-language": "fr", "x-api-key": "k-123"}, accept=ACCEPT),
                        {"host": f"localhost:{port}", "user-agent": "think-nb-fetch", "accept": ACCEPT}]


async def test_a_header_value_with_a_line_break_is_dropped(server: str) -> None:
    await local().invoke({"url": f"{server}/headers", "headers": {"Accept-Language": "fr\r\nX-Evil: 1"}})
    assert received == [sent_to(server, accept=ACCEPT)]


def test_bad_fixed_headers_are_refused_in_one_line() -> None:
    with pytest.raises(Exception, match="pass a dict of header names to string values"):
        fetch_tool(headers={"Bad Name": "x"})
    with pytest.raises(Exception, match="pass a list of header names"):
        fetch_tool(model_header_allowlist="accept")


async def test_stop_ends_a_fetch_in_flight_and_the_turn_settles_aborted(server: str) -> None:
    """Think (fetch-tools.test.ts, `abort`): a fetch the turn's abort reaches stops at once. The
    server trickles its answer for 8 s under a 30 s deadline; Stop (`abort_request`) once the request
    has arrived ends the turn `aborted`, the fetch's connection is dropped (the server's next write
    fails). As in Think the partial is stored as it was (the call `input-available`), and the next
    turn repairs the interrupted call before the model sees it."""
    from agents import eventually, scripted_agent
    from think_nb.testing import ScriptedModel as S

    agent = scripted_agent(S([[S.tool_call("fetch", {"url": f"{server}/trickle"})], [S.text("next")]]),
                           tools=[local(timeout=30)])
    turn = agent.submit("read it", request_id="r-fetch")
    await eventually(lambda: any(r.startswith("/trickle") for r in requests), what="the fetch reached the server")
    agent.abort_request("r-fetch")
    result = await turn
    assert result.status == "aborted"
    def fetch_part() -> dict:
        return next(p for m in agent.messages for p in m["parts"] if p["type"] == "tool-fetch")
    assert fetch_part()["state"] == "input-available"
    # the server notices at its next write
    await eventually(lambda: "/trickle dropped by the client" in requests, what="the fetch's connection dropped")
    assert (await agent.send("again")).status == "completed"
    assert fetch_part()["state"] == "output-error", fetch_part()
    assert requests.count(f"/trickle Host={server.removeprefix('http://')}") == 1


@pytest.mark.parametrize(("address", "inside"), [
    ("64:ff9b::7f00:1", "127.0.0.1"),       # NAT64's well-known prefix: a NAT64 gateway reaches the IPv4 inside
    ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
    ("64:ff9b::a00:1", "10.0.0.1"),
    ("2002:c0a8:101::1", "192.168.1.1"),    # 6to4
    ("::10.0.0.1", "10.0.0.1"),              # IPv4-compatible (deprecated)
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "10.0.0.1")])  # Teredo (the client: ~the last 32 bits)
async def test_an_ipv6_address_embedding_a_private_ipv4_one_is_refused(address: str, inside: str) -> None:
    """An IPv6 address that carries an IPv4 one (NAT64, 6to4, IPv4-compatible, Teredo) is checked by
    the IPv4 address inside it: on an IPv6-only host behind NAT64 (a cloud VPC), 64:ff9b::a00:1
    reaches 10.0.0.1, yet Python calls it global."""
    out = await fetch_tool(allowed_hosts=[address]).invoke({"url": f"http://[{address}]/"})
    assert (out["ok"], out["code"]) == (False, "blocked_address")
    assert f"resolves to {ipaddress.ip_address(address)} (IPv4 {inside} inside)" in out["message"]
