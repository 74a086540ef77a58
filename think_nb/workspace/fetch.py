"""The `fetch` tool: read a web page safely (Think's `fetch_url`, `packages/think/src/tools/fetch.ts`).

    fetch_tool(allowed_hosts=["docs.python.org", "*.example.com"], workspace=agent.workspace)

- GET only, `http`/`https` only, no credentials in the URL.
- Hosts must be on `allowed_hosts` (exact, or `*.domain` for subdomains); empty (the default)
  means fetch is off and every call is refused.
- SSRF guard: the host is resolved first and every address checked; loopback, private,
  link-local, multicast, reserved and unspecified addresses are refused unless listed in
  `allow_private` (addresses or networks, e.g. `["127.0.0.1"]`). An `http` request then connects
  to the address that was checked (no second lookup); `https` verifies the certificate of the name.
  Redirects are followed by hand (at most `max_redirects`), each target checked the same way.
- At most `max_bytes` of body are read (`truncated: true`); a `Content-Length` above it is refused
  (`too_large`) without reading.
- HTML becomes markdown (markdownify: MIT licensed and maintained, on BeautifulSoup; html2text is
  GPL-3.0, which this MIT package does not take on); JSON and text are returned as text; other
  content types are refused (`unsupported_content`).
- A body longer than `inline_chars` is written to the workspace (`/fetched/<host>/<name>.md`)
  when a `workspace` is given, and the result carries its `path` and a `preview`.
- Request headers (Think's header allowlist): exactly `User-Agent: think-nb-fetch`, `Host`, the
  fixed `headers=` of `fetch_tool` (server-side: never set by the model, never echoed), the
  model's `headers` whose names are on `model_header_allowlist` (Think's default: `accept`,
  `accept-language`, `range`; any other, `authorization`, `cookie`, ..., is dropped), fixed ones
  winning a name, and `Accept: default_accept` (markdown first, Think's) unless one of those set
  it (`default_accept=""`: none). Nothing else (httpx's own defaults are not sent). A redirect to
  another origin carries only `User-Agent` and the default `Accept`, as in Think.

Success: `{ok: true, url, status, contentType, content | (path, preview), bytes, truncated?}`.
Failure: `{ok: false, code, message}` with code in `not_allowed`, `invalid_url`, `blocked_address`,
`dns_error`, `too_many_redirects`, `too_large`, `http_error` (+ `status`), `unsupported_content`,
`timeout`, `network_error`. Failures are outputs, not exceptions (Think's structured errors).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from think_nb import events
from think_nb.errors import UserError
from think_nb.tools.tool import Tool, from_function

if TYPE_CHECKING:
    import httpx

ACCEPT = "text/markdown, text/plain;q=0.9, application/json;q=0.8, text/html;q=0.5, */*;q=0.1"
"""The default `Accept` (Think's `DEFAULT_ACCEPT`: markdown first, anything accepted)."""
MODEL_HEADERS = ("accept", "accept-language", "range")
"""Header names the model may set by default (Think's `DEFAULT_MODEL_HEADER_ALLOWLIST`)."""
USER_AGENT = "think-nb-fetch"
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/ld+json")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class _Refused(Exception):
    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code, self.extra = code, extra

    def result(self) -> dict:
        return {"ok": False, "code": self.code, "message": str(self), **self.extra}


def fetch_tool(*, allowed_hosts: Iterable[str] = (), allow_private: Iterable[str] = (), max_bytes: int = 1_000_000,
               timeout: float = 15.0, max_redirects: int = 5, workspace: Any = None, inline_chars: int = 20_000,
               name: str = "fetch", headers: dict[str, str] | None = None,
               model_header_allowlist: Iterable[str] = MODEL_HEADERS, default_accept: str = ACCEPT) -> Tool:
    """Make the `fetch` tool (see the module docstring).

    Args:
        allowed_hosts: host names the model may fetch (`"example.com"`, `"*.example.com"`); empty: off.
        allow_private: addresses or networks (`"127.0.0.1"`, `"10.0.0.0/8"`) allowed despite the SSRF guard.
        max_bytes: body bytes read at most. timeout: seconds for the whole fetch (lookups, redirects,
            headers and body: one deadline, not one per read). max_redirects: redirects followed.
        workspace: fsspec file system where long bodies are written (e.g. `agent.workspace`); None keeps
            them inline (cut at `inline_chars`, `truncated: true`).
        inline_chars: characters of content returned inline.
        headers: fixed request headers sent with every fetch (e.g. an API key for an allowed
            host), never settable by the model and never in its result; they win over the model's.
        model_header_allowlist: header names (any case) the model's `headers` may set; others
            are dropped (Think's `modelHeaderAllowlist`).
        default_accept: the `Accept` sent when no header sets one; "" sends none.

    Raises:
        UserError: a malformed host pattern or network, a limit that is not positive, or headers
            that are not a dict of header names to strings.
    """
    hosts = [h.strip().lower() for h in allowed_hosts]
    for h in hosts:
        if not re.fullmatch(r"(\*\.)?[a-z0-9.-]+|\[?[0-9a-f:.]+\]?", h):
            raise UserError(f"fetch_tool(allowed_hosts=...): {h!r} is not a host name; pass e.g. 'example.com' "
                            "or '*.example.com'.")
    private = private_networks(allow_private, "fetch_tool")
    for label, value in (("max_bytes", max_bytes), ("timeout", timeout), ("inline_chars", inline_chars)):
        if not isinstance(value, (int, float)) or value <= 0:
            raise UserError(f"fetch_tool({label}={value!r}): pass a positive number.")
    fetcher = _Fetcher(hosts, private, int(max_bytes), float(timeout), int(max_redirects), workspace,
                       int(inline_chars), _Headers(headers, model_header_allowlist, default_accept))

    async def fetch(url: str, headers: dict[str, str] | None = None) -> dict:
        """Fetch a web page or document with GET and return it as markdown or text. Only allowed hosts work.

        Args:
            url: the http(s) URL to read
            headers: optional request headers; only safe read headers (accept, accept-language, range) are sent
        """
        try:
            result = await fetcher.get(url, headers)
        except _Refused as refused:
            result = refused.result()
        _fetched(name, url, result)
        return result

    return from_function(fetch, name=name)


def private_networks(allow_private: Iterable[str], where: str) -> list[Network]:
    """`allow_private`'s addresses and networks (`"127.0.0.1"`, `"10.0.0.0/8"`) as networks, for
    `UrlGuard`; `UserError` naming `where(allow_private=...)` (`fetch_tool`, `browser_tools`) otherwise."""
    try:
        return [ipaddress.ip_network(p, strict=False) for p in allow_private]
    except ValueError as exc:
        raise UserError(f"{where}(allow_private=...): {exc}; pass addresses or networks like '127.0.0.1'.") from None


def _fetched(tool: str, url: str, result: dict) -> None:
    """The `tool:fetch` event of one call (Think's `FetchToolEvent`), refused calls included."""
    fields: dict[str, Any] = {"tool": tool, "ok": result["ok"], "requested_url": url, "final_url": result.get("url"),
                              "status": result.get("status"), "bytes": result.get("bytes"),
                              "truncated": bool(result.get("truncated", False))}
    if not result["ok"]:
        fields["code"] = result["code"]
    events.emit("tool:fetch", fields)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110)


class _Headers:
    """The request headers of a fetch (see the module docstring)."""

    def __init__(self, fixed: Any, allowlist: Iterable[str], default_accept: str) -> None:
        if fixed is not None and (not isinstance(fixed, dict) or not all(
                isinstance(k, str) and _HEADER_NAME.fullmatch(k) and isinstance(v, str) for k, v in fixed.items())):
            raise UserError(f"fetch_tool(headers={fixed!r:.60}): pass a dict of header names to string values, "
                            "e.g. {'X-Api-Key': os.environ['KEY']}.")
        if isinstance(allowlist, str) or not all(isinstance(n, str) for n in allowlist):
            raise UserError("fetch_tool(model_header_allowlist=...): pass a list of header names, e.g. ['accept'].")
        if not isinstance(default_accept, str):
            raise UserError(f"fetch_tool(default_accept={default_accept!r}): pass the Accept value as text, or \"\" "
                            "for none.")
        self.fixed = {k.lower(): v for k, v in (fixed or {}).items()}
        self.allowlist = {n.lower() for n in allowlist}
        self.default_accept = default_accept

    def first(self, model: Any) -> dict[str, str]:
        """The headers of the first request: the model's allowlisted ones, the fixed ones over
        them, then the default `Accept` if none is set; names lowercased (one of each)."""
        out = {k.lower(): v for k, v in (model or {}).items()
               if isinstance(k, str) and k.lower() in self.allowlist and isinstance(v, str)
               and _HEADER_NAME.fullmatch(k) and "\n" not in v and "\r" not in v}
        return self._base({**out, **self.fixed})

    def cross_origin(self) -> dict[str, str]:
        """The headers after a redirect to another origin: the default `Accept` only."""
        return self._base({})

    def _base(self, headers: dict[str, str]) -> dict[str, str]:
        if self.default_accept and "accept" not in headers:
            headers["accept"] = self.default_accept
        return {"user-agent": USER_AGENT, **headers}


class UrlGuard:
    """The allowlist and the SSRF guard of one URL, shared by `fetch` and the browser tools
    (think_nb/browser/): `await guard.check(url)` returns `(url, host, the checked address)` or
    raises `_Refused` (`invalid_url`, `not_allowed`, `dns_error`, `blocked_address`).

    `hosts` are lowercased patterns (`"example.com"`, `"*.example.com"`, and, for the browser tools,
    `"127.0.0.1:8000"`: that host on that port only); `private` the networks allowed despite the guard."""

    def __init__(self, hosts: list[str], private: list[Network], off: str = "fetch is off: no hosts are allowed "
                 "(fetch_tool(allowed_hosts=[...]))") -> None:
        self.hosts, self.private, self.off = hosts, private, off

    def _allowed_host(self, host: str, port: int | None = None) -> bool:
        for pattern in self.hosts:
            name, only = _host_port(pattern)
            if only is not None and port != only:
                continue
            if host == name or (name.startswith("*.") and host.endswith(name[1:])):
                return True
        return False

    async def check(self, url: str) -> tuple[str, str, str]:
        """(url, host, the checked address to connect to) or `_Refused`."""
        return await self._check(url)

    async def _check(self, url: str) -> tuple[str, str, str]:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _Refused("invalid_url", f"{url!r} is not an http(s) URL")
        if parts.username or parts.password:
            raise _Refused("invalid_url", "URLs with credentials are not fetched")
        host = parts.hostname.lower()
        if not self.hosts:
            raise _Refused("not_allowed", self.off)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise _Refused("invalid_url", f"{url!r} has an invalid port") from None
        if not self._allowed_host(host, port):
            where = f"'{host}:{port}'" if any(_host_port(h)[1] is not None for h in self.hosts) else repr(host)
            raise _Refused("not_allowed", f"host {where} is not in the allowed hosts")
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise _Refused("dns_error", f"{host!r} could not be resolved ({exc})") from None
        addresses = sorted({str(info[4][0]) for info in infos})
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%")[0])
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            inside = _embedded_ipv4(ip)
            for checked in (ip, inside) if inside is not None else (ip,):
                if _special(checked) and not any(checked in net for net in self.private):
                    shown = f"{ip} (IPv4 {inside} inside)" if inside is not None else str(ip)
                    raise _Refused("blocked_address", f"{host!r} resolves to {shown}, a private or loopback "
                                                      "address; it is refused unless allowed with allow_private")
        return url, host, addresses[0]


def pinned(url: str, address: str, headers: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The URL to request and the headers to send for `url`, whose host `UrlGuard.check` resolved to
    `address`: over http the request goes to that address (not to a second DNS lookup, which could
    answer otherwise) with a `Host` header naming the host; https URLs are left as they are (the
    certificate names the host). `headers` is not changed."""
    parts = urlsplit(url)
    target, sent = url, dict(headers)
    if parts.scheme == "http":
        shown = f"[{address}]" if ":" in address else address
        target = urlunsplit(("http", shown + (f":{parts.port}" if parts.port else ""), parts.path or "/",
                             parts.query, ""))
        sent["host"] = parts.netloc.rsplit("@", 1)[-1]
    return target, sent


class _Fetcher(UrlGuard):
    def __init__(self, hosts: list[str], private: list[Network], max_bytes: int, timeout: float,
                 max_redirects: int, workspace: Any, inline_chars: int, headers: _Headers) -> None:
        super().__init__(hosts, private)
        self.max_bytes, self.timeout = max_bytes, timeout
        self.max_redirects, self.workspace, self.inline_chars = max_redirects, workspace, inline_chars
        self.headers = headers

    async def get(self, url: str, headers: Any = None) -> dict:
        """The whole fetch — lookups, redirects, headers and body — within one deadline of
        `timeout` seconds: httpx's timeouts are per read, and a server sending a byte every half
        second would keep a fetch (and the turn) alive for days."""
        host = urlsplit(url).hostname or url
        try:
            async with asyncio.timeout(self.timeout):
                return await self._get(url, self.headers.first(headers))
        except TimeoutError:
            raise _Refused("timeout", f"no complete answer from {host!r} within {self.timeout:g} s") from None

    async def _get(self, url: str, headers: dict[str, str]) -> dict:
        httpx = await _import_httpx()
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False, trust_env=False) as client:
            client.headers.clear()  # httpx's defaults (Accept, Accept-Encoding, Connection, User-Agent) are not sent
            for _ in range(self.max_redirects + 1):
                url, host, address = await self._check(url)
                try:
                    response = await self._send(client, url, host, address, headers)
                except httpx.TimeoutException:
                    raise _Refused("timeout", f"no answer from {host!r} within {self.timeout:g} s") from None
                except httpx.HTTPError as exc:
                    raise _Refused("network_error", f"{type(exc).__name__}: {exc}") from None
                if response is None:
                    continue
                if isinstance(response, str):
                    if _origin(response) != _origin(url):  # Think: no headers but the default Accept cross origin
                        headers = self.headers.cross_origin()
                    url = response
                    continue
                return response
        raise _Refused("too_many_redirects", f"more than {self.max_redirects} redirects")

    async def _send(self, client: httpx.AsyncClient, url: str, host: str, address: str, sent: dict[str, str]) -> Any:
        target, headers = pinned(url, address, sent)  # connect to the address that was checked
        async with client.stream("GET", target, headers=headers) as response:
            if response.is_redirect:
                location = response.headers.get("location", "")
                return urljoin(url, location)
            if not 200 <= response.status_code < 300:
                raise _Refused("http_error", f"HTTP {response.status_code} from {host!r}", status=response.status_code)
            length = response.headers.get("content-length")
            if length and length.isdigit() and int(length) > self.max_bytes:
                raise _Refused("too_large", f"the body is {length} bytes, more than max_bytes={self.max_bytes}")
            ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype and not ctype.startswith(TEXT_TYPES):
                raise _Refused("unsupported_content", f"content type {ctype!r} is not text, HTML or JSON")
            body = bytearray()
            truncated = False
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_bytes:
                    del body[self.max_bytes:]
                    truncated = True
                    break
            text = bytes(body).decode(response.encoding or "utf-8", errors="replace")
        if ctype in ("text/html", "application/xhtml+xml") or (not ctype and "<html" in text[:1000].lower()):
            text = _markdown(text)
        return self._result(url, response.status_code, ctype, text, len(body), truncated, host)

    def _result(self, url: str, status: int, ctype: str, text: str, size: int, truncated: bool, host: str) -> dict:
        out: dict[str, Any] = {"ok": True, "url": url, "status": status, "contentType": ctype, "bytes": size}
        if truncated:
            out["truncated"] = True
        if len(text) <= self.inline_chars:
            return {**out, "content": text}
        if self.workspace is None:
            return {**out, "content": text[: self.inline_chars], "truncated": True}
        path = _spill_path(url, host)
        fs = self.workspace
        parent = path.rsplit("/", 1)[0]
        if not fs.exists(parent):
            fs.makedirs(parent, exist_ok=True)
        fs.pipe_file(path, text.encode("utf-8"))
        return {**out, "path": path, "preview": text[:2000],
                "note": f"The whole content ({len(text)} characters) was written to {path}; read or grep it there."}


def _host_port(pattern: str) -> tuple[str, int | None]:
    """`"example.com"` -> (example.com, None); `"127.0.0.1:8000"` and `"[::1]:8000"` -> (host, 8000);
    `"::1"` -> (::1, None)."""
    match = re.fullmatch(r"\[([0-9a-f:.]+)\](?::(\d+))?|([^:]+):(\d+)", pattern)
    if match is None:
        return pattern, None
    if match.group(1) is not None:
        return match.group(1), int(match.group(2)) if match.group(2) else None
    return match.group(3), int(match.group(4))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme, (parts.hostname or "").lower(), port or (443 if parts.scheme == "https" else 80)


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _embedded_ipv4(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and may reach (NAT64's well-known prefix, 6to4, Teredo's
    client, IPv4-compatible), checked as well: Python calls 64:ff9b::a00:1 global, and behind NAT64
    it is 10.0.0.1."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    return ip.teredo[1] if ip.teredo is not None else None


def _special(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
            or ip.is_unspecified or not ip.is_global)


def _markdown(html: str) -> str:
    from markdownify import MarkdownConverter

    class Converter(MarkdownConverter):  # what a reader never sees is dropped, text and all
        def convert_script(self, *args: Any, **kwargs: Any) -> str:
            return ""

        convert_style = convert_noscript = convert_template = convert_script

    return re.sub(r"\n{3,}", "\n\n", Converter(heading_style="ATX").convert(html)).strip()


def _spill_path(url: str, host: str) -> str:
    parts = urlsplit(url)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", (parts.path.strip("/") or "index"))[:80].strip("-.") or "index"
    safe_host = re.sub(r"[^A-Za-z0-9.-]+", "-", host) or "host"
    return f"/fetched/{safe_host}/{slug}.md"


async def _import_httpx() -> Any:
    """httpx, imported on first fetch in a worker thread (~25 ms and 22 modules: never on the loop,
    never for an agent that does not fetch)."""
    import sys

    module = sys.modules.get("httpx")
    if module is None:
        import importlib

        module = await asyncio.to_thread(importlib.import_module, "httpx")
    return module
