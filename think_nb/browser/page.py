"""One browser tool call's page: a fresh guarded context, a load within the time cap, and what
the quick actions read from it (markdown, selected text, links, scraped elements, a screenshot,
CDP commands). Runs on the browser thread (think_nb/browser/host.py).

Results are bounded as Think's quick actions bound them (`maxChars`, default 50 000): text is cut
with a `[truncated N characters]` note, lists keep the leading items that fit.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any

from think_nb.browser.netguard import Guard, guarded_context
from think_nb.workspace.fetch import UrlGuard

CDP_DOMAINS = frozenset({"Accessibility", "Animation", "CSS", "DOM", "DOMSnapshot", "Emulation", "Input", "LayerTree",
                         "Log", "Overlay", "Page", "Performance", "Runtime"})
"""CDP domains `cdp()` may use: the page's own. Not Network, Fetch, Target, Browser, Storage, IO,
Security, ServiceWorker, SystemInfo, Tracing: they reach past the page (cookies of other sites,
other targets, the file system, request interception)."""
CDP_REFUSED = frozenset({"Page.setDownloadBehavior", "DOM.setFileInputFiles", "Page.close", "Page.crash"})


class BrowserError(Exception):
    """A browser call failed or was refused: `code` as the fetch tool's (`not_allowed`,
    `blocked_address`, `invalid_url`, `timeout`, `download`, `network_error`, `invalid_selector`,
    `too_large`, `not_allowed_cdp`); the text goes back to the model."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


@dataclass(frozen=True)
class Options:
    urls: UrlGuard
    max_bytes: int
    timeout: float
    max_chars: int
    viewport: tuple[int, int]
    max_screenshot_bytes: int


class Page:
    """A page of a fresh guarded context (see the module docstring); `close()` ends the context."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.guard = Guard(options.urls, options.max_bytes, options.timeout)
        self.context: Any = None
        self.page: Any = None
        self.timed_out = False
        self.status: int | None = None
        self._blocked_before = 0

    async def open(self, browser: Any) -> Page:
        self.context = await guarded_context(browser, self.guard, self.options.viewport)
        self.page = await self.context.new_page()
        return self

    async def close(self) -> None:
        if self.context is not None:
            context, self.context = self.context, None
            with contextlib.suppress(Exception):  # the browser went away with it
                await context.close()
        await self.guard.close()

    # -- loading ------------------------------------------------------------------------------------
    async def load(self, url: str | None = None, html: str | None = None) -> None:
        """Load `url` (checked first: a refused address never reaches the browser) or render `html`,
        then wait for the load event until `timeout`; past it the page stops and what arrived is used
        (`timed_out`)."""
        from playwright.async_api import Error
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.timeout
        self._blocked_before = len(self.guard.blocked)
        self.guard.deadline = loop.time() + self.options.timeout * 0.8  # what is still arriving then is cut
        if url is not None:
            refused = await self.guard.refusal(url)
            if refused is not None:
                raise BrowserError(refused["code"], refused["message"])
        try:
            if url is not None:
                response = await self.page.goto(url, wait_until="commit", timeout=self._ms(deadline))
                self.status = response.status if response is not None else None
            else:
                await self.page.set_content(html or "", wait_until="commit", timeout=self._ms(deadline))
        except PlaywrightTimeout:
            raise BrowserError("timeout", f"no answer from {url or 'the HTML'} within {self.options.timeout:g} s") \
                from None
        except Error as exc:
            raise self._failed(url or "the HTML", exc) from None
        try:
            await self.page.wait_for_load_state("load", timeout=self._ms(deadline))
        except PlaywrightTimeout:
            self.timed_out = True
            await self.stop()
        finally:
            self.guard.deadline = None

    def _ms(self, deadline: float) -> float:
        return max(1.0, (deadline - asyncio.get_running_loop().time()) * 1000)

    def _failed(self, target: str, exc: Exception) -> BrowserError:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        refused = self.guard.blocked[self._blocked_before:]
        if refused:  # the page itself or a redirect hop was refused
            first = refused[0]
            return BrowserError(first["code"], f"{target} was not loaded: {first['url']} is refused "
                                               f"({first['message']})")
        if "Download is starting" in text:
            return BrowserError("download", f"{target} is a download; downloads are refused")
        return BrowserError("network_error", f"{target}: {text}")

    async def goto(self, url: str) -> dict[str, Any]:
        """`load(url)` for code in the sandbox: `{url, status, title, timedOut}`."""
        self.timed_out = False
        await self.load(url)
        return {"url": self.page.url, "status": self.status, "title": await self.page.title(),
                "timedOut": self.timed_out}

    async def stop(self) -> None:
        session = await self.context.new_cdp_session(self.page)
        try:
            await session.send("Page.stopLoading")
        finally:
            await session.detach()

    # -- reading ------------------------------------------------------------------------------------
    def notes(self) -> list[str]:
        out = []
        if self.timed_out or self.guard.cut:
            out.append(f"the page did not finish loading within {self.options.timeout:g} s; this is what had arrived")
        if self.guard.over:
            out.append(f"the page passed {self.options.max_bytes} bytes and was stopped; this is what had arrived")
        if self.guard.blocked:
            out.append(f"{len(self.guard.blocked)} request(s) of the page were refused, e.g. "
                       f"{self.guard.blocked[0]['url']} ({self.guard.blocked[0]['code']})")
        return out

    async def html(self, selector: str | None = None) -> str:
        """The page's HTML (or the first match's outer HTML), at most `max_bytes` characters."""
        if selector is None:
            text = await self.page.content()
        else:
            found = await self._all(selector, "els => els.length ? els[0].outerHTML : ''")
            text = str(found)
        return text[: self.options.max_bytes]

    async def markdown(self) -> str:
        """The page as markdown (the fetch tool's converter, off the loop), bounded, with notes."""
        from think_nb.workspace.fetch import _markdown

        text = await asyncio.to_thread(_markdown, await self.html())
        notes = "".join(f"\n\n[{note}]" for note in self.notes())
        return bound(text, self.options.max_chars) + notes

    async def extract(self, selector: str, attribute: str | None = None) -> list[str | None]:
        """The text (or `attribute`) of every element matching `selector`, bounded."""
        found = await self._all(selector, "(els, attr) => els.map(e => attr ? e.getAttribute(attr) : e.innerText)",
                                attribute)
        return bound(found, self.options.max_chars)

    async def links(self) -> list[str]:
        """Every link's absolute URL (`a[href]`, visible or not), each once, bounded."""
        found = await self._all("a[href], area[href]", "els => els.map(e => e.href)")
        return bound(list(dict.fromkeys(u for u in found if isinstance(u, str) and u)), self.options.max_chars)

    async def scrape(self, selectors: list[str]) -> list[dict[str, Any]]:
        """`[{selector, results: [{text, html, attributes: [{name, value}]}]}]` (Browser Run's shape)."""
        script = ("els => els.map(e => ({text: e.innerText, html: e.innerHTML, "
                  "attributes: Array.from(e.attributes).map(a => ({name: a.name, value: a.value}))}))")
        out = [{"selector": s, "results": await self._all(s, script)} for s in selectors]
        return bound(out, self.options.max_chars)

    async def _all(self, selector: str, script: str, arg: Any = None) -> Any:
        from playwright.async_api import Error

        try:
            return await self.page.eval_on_selector_all(selector, script, arg)
        except Error as exc:
            raise BrowserError("invalid_selector", f"{selector!r}: {str(exc).splitlines()[0]}") from None

    async def screenshot(self, full_page: bool = False) -> dict[str, Any]:
        """An AI SDK file part `{type: "file", mediaType, url: "data:..."}`: PNG, or JPEG when the PNG
        passes `max_screenshot_bytes`."""
        shot = await self.page.screenshot(type="png", full_page=full_page, timeout=self.options.timeout * 1000)
        media = "image/png"
        for quality in (80, 60, 40, 20):
            if len(shot) <= self.options.max_screenshot_bytes:
                break
            shot = await self.page.screenshot(type="jpeg", quality=quality, full_page=full_page,
                                              timeout=self.options.timeout * 1000)
            media = "image/jpeg"
        if len(shot) > self.options.max_screenshot_bytes:
            raise BrowserError("too_large", f"the screenshot is {len(shot)} bytes even as a JPEG, more than "
                                            f"max_screenshot_bytes={self.options.max_screenshot_bytes}")
        return {"type": "file", "mediaType": media, "url": f"data:{media};base64,{base64.b64encode(shot).decode()}"}

    async def evaluate(self, expression: str) -> Any:
        """A JavaScript expression (or function) evaluated in the page; its JSON value, bounded."""
        from playwright.async_api import Error

        try:
            return bound(await self.page.evaluate(expression), self.options.max_chars)
        except Error as exc:
            raise BrowserError("script_error", str(exc).splitlines()[0]) from None

    async def act(self, action: str, selector: str, value: str | None = None) -> bool:
        """`click` / `fill` / `press` on the first element matching `selector`."""
        from playwright.async_api import Error

        locator = self.page.locator(selector).first
        timeout = self.options.timeout * 1000
        try:
            if action == "click":
                await locator.click(timeout=timeout)
            elif action == "fill":
                await locator.fill(value or "", timeout=timeout)
            else:
                await locator.press(value or "Enter", timeout=timeout)
        except Error as exc:
            raise BrowserError("action_failed", f"{action} {selector!r}: {str(exc).splitlines()[0]}") from None
        return True

    async def cdp(self, method: str, params: dict | None = None) -> Any:
        """A CDP command on this page's target, limited to `CDP_DOMAINS` (see there); `Page.navigate`
        is checked like any address."""
        if not isinstance(method, str) or method.split(".", 1)[0] not in CDP_DOMAINS or method in CDP_REFUSED:
            raise BrowserError("not_allowed_cdp", f"{method!r} is not available; use the domains "
                                                  f"{', '.join(sorted(CDP_DOMAINS))}")
        if method == "Page.navigate":
            refused = await self.guard.refusal(str((params or {}).get("url", "")))
            if refused is not None:
                raise BrowserError(refused["code"], refused["message"])
        from playwright.async_api import Error

        session = await self.context.new_cdp_session(self.page)
        try:
            return bound(await session.send(method, params or {}), self.options.max_chars)
        except Error as exc:
            raise BrowserError("cdp_error", f"{method}: {str(exc).splitlines()[0]}") from None
        finally:
            await session.detach()


def bound(value: Any, max_chars: int) -> Any:
    """Think's `boundResult`: a string cut to `max_chars` with a note; a list trimmed to the leading
    items whose JSON fits; anything else larger becomes `{truncated, note, preview}`."""
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        return f"{value[:max_chars]}\n\n[truncated {len(value) - max_chars} characters]"
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        return value
    if len(text) <= max_chars:
        return value
    if isinstance(value, list):
        out, size = [], 2
        for item in value:
            size += len(json.dumps(item, default=str)) + 1
            if size > max_chars:
                break
            out.append(item)
        if out:
            return out
    return {"truncated": True, "note": f"Result is too large ({len(text)} characters); narrow the request.",
            "preview": re.sub(r"\s+", " ", text[:max_chars])}
