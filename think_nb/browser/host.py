"""The kernel's browser: one Chromium per process, driven by Playwright on a thread of its own.

Playwright (its driver, a Node process, and the browser it launches) lives on a private event
loop in a daemon thread, so importing it (~0.3 s), launching Chromium (seconds) and decoding its
messages (a screenshot is megabytes of base64) never run on the kernel's loop: the browser tools
`await run(settings, fn)`, which runs `fn(browser)` on that loop and waits for it without blocking.

- Started on first use: nothing is imported or launched until a browser tool runs.
- One browser per launch setting (normally one per kernel): `executable` (default the system
  `/usr/bin/chromium`; Playwright's own browser download is not needed) or `cdp_endpoint` (an
  already running Chrome, `http://127.0.0.1:9222` or a `ws://` URL: connected to, never closed).
- Chromium runs under think_nb's process guard (think_nb/procs/guard.py): its owner is the
  Playwright driver, which exits when the kernel's end of its stdin closes, however the kernel
  ends (SIGKILL included), and the guard then kills Chromium's whole process group. Chromium's
  crash handler (crashpad) double-forks out of that group and exits when the browser does; every
  process of the browser carries `THINK_NB_BROWSER_OWNER=<kernel pid>` in its environment, which is
  how tests/kernel/test_browser_processes_kernel.py finds them all.
- `close()` (awaitable, from `Think.shutdown()`) and an `atexit` handler (kernel shutdown, restart)
  close the browsers and the driver; the next browser tool call starts them again.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from think_nb.browser.netguard import DEAD_PROXY

T = TypeVar("T")
SYSTEM_CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless=new",
    "--dns-prefetch-disable",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",  # no ICE candidates to the local network
    "--force-webrtc-ip-handling-policy",
    # every request is made by the guard (think_nb/browser/netguard.py); one it did not see goes nowhere
    f"--proxy-server={DEAD_PROXY}",
    "--proxy-bypass-list=<-loopback>",
]
CLOSE_WAIT_S = 10.0
OWNER_ENV = "THINK_NB_BROWSER_OWNER"


@dataclass(frozen=True)
class Settings:
    """How the browser is reached: a Chromium executable to launch, or a CDP endpoint to connect to."""

    executable: str = SYSTEM_CHROMIUM
    cdp_endpoint: str | None = None


class _Host:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._playwright: Any = None
        self._browsers: dict[Settings, Any] = {}
        self._starting: dict[Settings, asyncio.Future[Any]] = {}
        self.launches = 0  # browsers started (or connected to) in this process

    # -- the thread and its loop ----------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="think-nb-browser", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
                atexit.register(self.close_sync)
            return self._loop

    async def run(self, settings: Settings, fn: Callable[[Any], Awaitable[T]]) -> T:
        """`await fn(browser)` on the browser thread; cancelling the caller cancels it there."""
        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(self._with_browser(settings, fn), loop)
        return await asyncio.wrap_future(future)

    async def _with_browser(self, settings: Settings, fn: Callable[[Any], Awaitable[T]]) -> T:
        return await fn(await self._browser(settings))

    # -- on the browser thread --------------------------------------------------------------------
    async def _browser(self, settings: Settings) -> Any:
        browser = self._browsers.get(settings)
        if browser is not None and browser.is_connected():
            return browser
        starting = self._starting.get(settings)
        if starting is None:
            starting = asyncio.ensure_future(self._start(settings))
            self._starting[settings] = starting
            starting.add_done_callback(lambda _: self._starting.pop(settings, None))
        return await asyncio.shield(starting)

    async def _start(self, settings: Settings) -> Any:
        if self._playwright is None:
            from playwright.async_api import async_playwright

            self._playwright = await async_playwright().start()
        chromium = self._playwright.chromium
        if settings.cdp_endpoint:
            browser = await chromium.connect_over_cdp(settings.cdp_endpoint)
        else:
            from think_nb.procs import guarded_binary

            env = {**os.environ, OWNER_ENV: str(os.getpid())}
            browser = await chromium.launch(executable_path=guarded_binary(settings.executable), args=ARGS, env=env,
                                            handle_sigint=False, handle_sigterm=False, handle_sighup=False)
        self._browsers[settings] = browser
        self.launches += 1
        return browser

    async def _close_all(self) -> None:
        browsers, self._browsers = list(self._browsers.values()), {}
        for browser in browsers:
            with contextlib.suppress(Exception):  # already gone (crashed, or the endpoint went away)
                await browser.close()
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            with contextlib.suppress(Exception):  # the driver already exited
                await playwright.stop()

    # -- closing ------------------------------------------------------------------------------------
    def _submit_close(self) -> concurrent.futures.Future[None] | None:
        with self._lock:
            loop = self._loop
        if loop is None or loop.is_closed() or not loop.is_running():
            return None
        return asyncio.run_coroutine_threadsafe(self._close_all(), loop)

    async def close(self) -> None:
        """Close every browser of this process and the Playwright driver (awaitable from any loop)."""
        future = self._submit_close()
        if future is not None:
            await asyncio.wrap_future(future)

    def close_sync(self) -> None:
        """`close()` for `atexit`: waits at most `CLOSE_WAIT_S` (the process guard covers the rest)."""
        future = self._submit_close()
        if future is not None:
            with contextlib.suppress(Exception):  # exiting anyway: the guard kills what is left
                future.result(timeout=CLOSE_WAIT_S)


HOST = _Host()
"""The process's browser host (one per kernel)."""


async def close_browser() -> None:
    """Close the kernel's browser(s) and Playwright's driver; the next browser tool starts them again."""
    await HOST.close()
