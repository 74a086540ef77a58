"""The fetch tool's guard on every request a page makes, not only the address the model typed.

The browser itself never reaches the network. Each browser tool call gets a fresh browser
context (no cookies, cache or storage shared with another call) set up by `guarded_context`:

- every HTTP(S) request of the context (the page, its scripts, images, stylesheets, frames,
  XHR/fetch, beacons, popups) is paused by Playwright's request interception (`context.route`),
  checked with `think_nb.workspace.fetch.UrlGuard` — the host allowlist (`"host"`, `"*.domain"`,
  `"host:port"`), then every address the name resolves to (loopback, private, link-local,
  multicast, reserved refused unless in `allow_private`) — and, when allowed, made by the guard
  itself (httpx; an `http` request connects to the address that was checked) and handed to the
  page with `route.fulfill`. Redirects are followed by the guard, each hop checked the same way
  (Playwright lets a browser-made redirect through unseen, so the browser never makes one). A
  refused request is aborted and recorded in `Guard.blocked` as `{url, code, message}`; any other
  scheme (`file:`, `ftp:`, `chrome:`) is refused too.
- Chromium is started with a proxy that does not exist (`--proxy-server=127.0.0.1:9`, loopback
  included), so anything interception would not see (a preconnect, a request of a kind Playwright
  does not route) cannot connect anywhere.
- WebSockets are closed (`context.route_web_socket`; the guard does not relay them); service
  workers are blocked and downloads refused (`accept_downloads=False`). Cookies the responses set
  stay in the call's context (a later request of the same call sends them).
- Caps: the bodies of one context add up to at most `max_bytes` (past it, the response being read
  is cut and `Guard.over` set); a response still arriving at the page's deadline is cut there
  (`Guard.cut`), so a page that never finishes shows what arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from think_nb.workspace.fetch import UrlGuard, _origin, _Refused, pinned

ROUTED_SCHEMES = ("http", "https")
MAX_REDIRECTS = 10
DEAD_PROXY = "http://127.0.0.1:9"
"""Where Chromium would send a request interception did not catch: the discard port, nothing listens."""
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host",
               "proxy-connection", "upgrade", "te", "trailer"}
_CROSS_ORIGIN_DROPPED = {"cookie", "authorization", "proxy-authorization"}


class Guard:
    """The request policy of one browser context, and what it refused or cut."""

    def __init__(self, urls: UrlGuard, max_bytes: int, timeout: float) -> None:
        self.urls, self.max_bytes, self.timeout = urls, max_bytes, timeout
        self.blocked: list[dict[str, str]] = []
        self.fetched: list[str] = []
        self.received = 0
        self.over = False
        self.cut: list[str] = []
        self.deadline: float | None = None  # loop time; set by the page's load
        self._client: Any = None

    async def refusal(self, url: str) -> dict[str, str] | None:
        """None when `url` may be requested, else `{url, code, message}`."""
        scheme = urlsplit(url).scheme.lower()
        if scheme in ("ws", "wss"):
            parts = urlsplit(url)
            url = urlunsplit(("http" if scheme == "ws" else "https", *parts[1:]))
        elif scheme not in ROUTED_SCHEMES:
            return {"url": url[:200], "code": "invalid_url", "message": f"{scheme}: URLs are not loaded"}
        try:
            await self.urls.check(url)
        except _Refused as refused:
            return {"url": url[:200], "code": refused.code, "message": str(refused)}
        return None

    # -- one intercepted request ------------------------------------------------------------------
    async def _route(self, route: Any) -> None:
        request = route.request
        try:
            answer = await self._fetch(request.method, request.url, await request.all_headers(),
                                       request.post_data_buffer)
        except _Refused as refused:
            self.blocked.append({"url": refused.extra.get("url", request.url)[:200], "code": refused.code,
                                 "message": str(refused)})
            with contextlib.suppress(Exception):
                await route.abort("blockedbyclient")
            return
        except Exception as exc:  # noqa: BLE001 - a network failure is the page's failed request
            with contextlib.suppress(Exception):
                await route.abort("timedout" if isinstance(exc, TimeoutError) else "failed")
            return
        status, headers, body = answer
        with contextlib.suppress(Exception):  # the page may be gone already
            await route.fulfill(status=status, headers=headers, body=body)

    def _remaining(self) -> float:
        if self.deadline is None:
            return self.timeout
        return max(0.05, self.deadline - asyncio.get_running_loop().time())

    async def _fetch(self, method: str, url: str, headers: dict[str, str],
                     body: bytes | None) -> tuple[int, dict[str, str], bytes]:
        """Make the request as the page asked, following redirects by hand (each hop checked)."""
        client = await self._http()
        sent = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP and not k.startswith(":")}
        first = url
        for _ in range(MAX_REDIRECTS + 1):
            checked = await self._checked(url)
            answer = await self._hop(client, method, url, checked, sent, body)
            if isinstance(answer[1], str):  # a redirect: (status, location), the next hop
                status, location = answer
                if _origin(location) != _origin(url):
                    sent = {k: v for k, v in sent.items() if k.lower() not in _CROSS_ORIGIN_DROPPED}
                if status in (301, 302, 303) and method not in ("GET", "HEAD"):  # as browsers do; 307/308 keep it
                    method, body = "GET", None
                    sent = {k: v for k, v in sent.items() if k.lower() != "content-type"}
                url = location
                continue
            self.fetched.append(url)
            return answer
        raise _Refused("too_many_redirects", f"{first} redirected more than {MAX_REDIRECTS} times", url=first)

    async def _checked(self, url: str) -> str:
        """The address to connect to for `url` (checked), or `_Refused` carrying the URL."""
        if urlsplit(url).scheme.lower() not in ROUTED_SCHEMES:
            raise _Refused("invalid_url", f"{urlsplit(url).scheme}: URLs are not loaded", url=url)
        try:
            _, _, address = await self.urls.check(url)
        except _Refused as refused:
            raise _Refused(refused.code, str(refused), url=url) from None
        return address

    async def _hop(self, client: Any, method: str, url: str, address: str, headers: dict[str, str],
                   body: bytes | None) -> tuple[int, str] | tuple[int, dict[str, str], bytes]:
        target, sent = pinned(url, address, headers)  # connect to the address that was checked
        async with asyncio.timeout(self._remaining()) as until_headers:
            async with client.stream(method, target, headers=sent, content=body) as response:
                until_headers.reschedule(None)  # the body has its own deadline (`_read`: cut, not failed)
                if response.is_redirect and response.headers.get("location"):
                    return response.status_code, urljoin(url, response.headers["location"])
                out = {k: v for k, v in response.headers.multi_items() if k.lower() not in _HOP_BY_HOP}
                return response.status_code, _joined(out, response), await self._read(url, response)

    async def _read(self, url: str, response: Any) -> bytes:
        data = bytearray()
        try:
            async with asyncio.timeout(self._remaining()):
                async for chunk in response.aiter_bytes():
                    room = self.max_bytes - self.received
                    self.received += min(len(chunk), room)
                    data += chunk[:room]
                    if len(chunk) > room:
                        self.over = True
                        break
        except TimeoutError:
            self.cut.append(url)
        return bytes(data)

    async def _http(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=self.timeout)
            self._client.headers.clear()
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def _websocket(self, ws: Any) -> None:
        """Every WebSocket is closed: the guard does not relay them, and the browser has no network
        of its own (an allowed one is recorded as `not_supported`)."""
        refused = await self.refusal(ws.url) or {
            "url": ws.url[:200], "code": "not_supported", "message": "WebSockets are not relayed by the browser tools"}
        self.blocked.append(refused)
        with contextlib.suppress(Exception):
            await ws.close(code=1008, reason="blocked by think-nb")


def _joined(headers: dict[str, str], response: Any) -> dict[str, str]:
    """Response headers for `route.fulfill` (one value per name; repeated `set-cookie` joined by newlines,
    as Playwright expects)."""
    cookies = response.headers.get_list("set-cookie")
    if cookies:
        headers = {k: v for k, v in headers.items() if k.lower() != "set-cookie"}
        headers["set-cookie"] = "\n".join(cookies)
    return headers


def _every(url: str) -> bool:
    return True


async def guarded_context(browser: Any, guard: Guard, viewport: tuple[int, int]) -> Any:
    """A fresh browser context under `guard` (see the module docstring)."""
    context = await browser.new_context(accept_downloads=False, service_workers="block",
                                        viewport={"width": viewport[0], "height": viewport[1]})
    await context.route(_every, guard._route)
    await context.route_web_socket(_every, guard._websocket)
    return context
