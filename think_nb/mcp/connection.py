"""One live connection to an MCP server, kept in the kernel's event loop.

A `Connection` runs a task that enters the SDK's `mcp.Client` (the SDK needs its context entered
and left in one task), lists the server's tools, and then waits until it is told to stop or a
call finds the connection broken. On failure it retries with exponential backoff (0.5 s doubling
to 30 s); `state` is `connecting` | `connected` | `failed` (retrying) | `closed`, `last_error`
says why; a stdio server's stderr is scrubbed of its secrets and appended to `<db>.mcp/<server>.log`
(`think_nb.mcp.stderr`). An attempt that has not
finished the MCP handshake (`initialize` and the tool listing) within `handshake_timeout()` seconds
(`THINK_NB_MCP_HANDSHAKE_TIMEOUT`, default 30) fails naming the server and what it printed instead
of JSON-RPC; a server that exits says its exit code (`think_nb.procs` runs it under a guard that
writes it to its stderr, and that kills it with the kernel). `close()` on a connection still
connecting cancels the attempt at once. Calls come from turns
(other tasks) and are bounded: a call ends with a `McpCallError`
when the server answers an error, when it times out, or when the connection breaks under it (a
server killed mid-call never hangs a turn).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from pathlib import Path
from typing import Any

from think_nb.mcp.config import SECRET_NOT_STORED, ServerConfig, referenced, resolve, resolve_args
from think_nb.mcp.stderr import StderrLog
from think_nb.redact import env_secrets, scrub, scrub_cut

log = logging.getLogger("think_nb")
_LIVE: weakref.WeakSet[Connection] = weakref.WeakSet()  # started and not closed: their secrets scrub SDK logs
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
HANDSHAKE_TIMEOUT_S = 30.0
"""Default of `handshake_timeout()`."""
CONNECTION_CLOSED = -32000  # JSON-RPC code the SDK gives pending requests when the connection closes


class McpCallError(Exception):
    """A call to an MCP tool failed (the message names the server and the tool)."""


def handshake_timeout() -> float:
    """Seconds an attempt may take to finish the MCP handshake: `THINK_NB_MCP_HANDSHAKE_TIMEOUT`
    (seconds > 0), else `HANDSHAKE_TIMEOUT_S` (an unusable value is logged and ignored)."""
    import os

    raw = os.environ.get("THINK_NB_MCP_HANDSHAKE_TIMEOUT")
    if raw:
        try:
            value = float(raw)
            if value > 0:
                return value
        except ValueError:
            pass
        log.warning("THINK_NB_MCP_HANDSHAKE_TIMEOUT=%r: use seconds > 0; using %g", raw, HANDSHAKE_TIMEOUT_S)
    return HANDSHAKE_TIMEOUT_S


class Connection:
    """A connection to one server (see the module docstring)."""

    def __init__(self, config: ServerConfig, log_path: Path | None = None) -> None:
        self.config = config
        self.log_path = log_path
        """Where a stdio server's stderr goes (appended)."""
        self._stderr: StderrLog | None = None  # made on the first stdio attempt
        self._loop: asyncio.AbstractEventLoop | None = None
        self.state = "connecting"
        self.last_error: str | None = None
        self.tools: list[Any] = []  # mcp_types.Tool of the last listing
        self.calls = 0
        self._client: Any = None
        self._secrets: set[str] = config.secrets()  # scrubbed from all a server says (resolved per attempt)
        self._printed: list[str] = []  # what the server wrote to stdout that was not JSON-RPC (this attempt)
        self._attempt: Any = None  # the anyio CancelScope of the attempt under way
        self._task: asyncio.Task | None = None
        self._stop = asyncio.Event()
        self._broken = asyncio.Event()
        self._changed = asyncio.Event()
        self.on_change: Any = None
        """Called with no argument after every state change (the panel's `mcp_servers` frame)."""

    def start(self, loop: asyncio.AbstractEventLoop) -> asyncio.Task:
        self._loop = loop
        _LIVE.add(self)
        self._task = loop.create_task(self._run(), name=f"think-mcp-{self.config.name}")
        return self._task

    async def settled(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the first attempt to end (connected or failed); True if connected."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self.state == "connecting":
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
        return self.state == "connected"

    async def close(self) -> None:
        self._stop.set()
        if self.state != "connected" and self._attempt is not None:
            self._attempt.cancel()  # connecting (a handshake that may never end): no reason to wait for it
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            if not self._task.done():
                self._task.cancel()
        if self._stderr is not None:
            self._stderr.close()
        _LIVE.discard(self)
        self._set("closed", self.last_error)

    async def call(self, tool: str, arguments: dict) -> Any:
        """Call `tool`; returns the SDK's `CallToolResult`. Raises `McpCallError`."""
        where = f"MCP server {self.config.name!r}, tool {tool!r}"
        if self.state != "connected" or self._client is None:
            raise McpCallError(f"{where}: not connected ({self.state}"
                               f"{': ' + self.last_error if self.last_error else ''}); try again once it reconnects.")
        self.calls += 1
        call = asyncio.ensure_future(self._client.call_tool(tool, arguments))
        broken = asyncio.ensure_future(self._broken.wait())
        try:
            done, _ = await asyncio.wait({call, broken}, timeout=self.config.timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the turn was stopped: the call is abandoned, its outcome not wanted
            call.cancel()
            call.add_done_callback(_consume)
            raise
        finally:
            broken.cancel()
        if call not in done:
            call.cancel()
            if broken in done:
                raise McpCallError(f"{where}: the connection broke during the call ({self.last_error}).")
            raise McpCallError(f"{where}: no answer after {self.config.timeout:g} s.")
        try:
            return call.result()
        except Exception as exc:  # noqa: BLE001 (any failure of the SDK or its transport is the tool's error)
            from mcp.shared.exceptions import MCPError

            text = self._with_stderr(self._describe(exc))
            code = getattr(getattr(exc, "error", None), "code", None)
            if not isinstance(exc, MCPError) or code == CONNECTION_CLOSED:  # the transport failed: reconnect
                self._set("failed", text)  # at once: a reader never sees "connected" on a dead server
                self._broken.set()
            raise McpCallError(self._scrub(f"{where}: the call failed ({text}).")) from None

    def _stderr_log(self) -> StderrLog:
        if self._stderr is None:
            if self.log_path is None:
                import tempfile

                self.log_path = Path(tempfile.gettempdir()) / f"think-nb-mcp-{self.config.name}.log"
            self._stderr = StderrLog(self.log_path, self._scrub, on_end=self._pipe_ended)
        return self._stderr

    def _pipe_ended(self, attempt: int) -> None:
        """From the stderr reader: an attempt's pipe reached its end. While connected that means
        the server exited (think_nb's copy of the pipe is closed once connected): fail now, so a
        dead server is never shown `connected` nor its tools offered, and reconnect."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._server_exited, attempt)

    def _server_exited(self, attempt: int) -> None:
        if self._stderr is None or attempt != self._stderr.attempts or self.state != "connected" or \
                self._stop.is_set():
            return
        self._client = None
        self._set("failed", self._with_stderr("the server exited"))
        self._broken.set()

    def _with_stderr(self, text: str) -> str:
        """`text` plus the last lines a stdio server wrote to stderr in this attempt (why it
        exited: a traceback's last line, a usage message), so the error names the cause."""
        if "; stderr: " in text:
            return text  # already says it (a failure reported while connected, raised again)
        written = self._stderr.tail() if self._stderr is not None else ""
        lines = [line.strip() for line in written.splitlines() if line.strip()]
        return f"{text}; stderr: {' | '.join(lines[-2:])[-300:]}" if lines else text

    def _scrub(self, text: str, cut: bool = False) -> str:
        """`text` without the connection's secrets: literal ones of its args/env, the values its
        `${VAR}` references resolve to, and the provider keys of the environment. `cut`: the text
        was cut off after its end, so a secret's beginning there is removed too (`scrub_cut`)."""
        return (scrub_cut if cut else scrub)(text, self._secrets | env_secrets())

    def scrub_value(self, value: Any) -> Any:
        """`value` (a tool's result: strings, lists, dicts) with the connection's secrets scrubbed
        from every string in it (a server may return its own key)."""
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, list):
            return [self.scrub_value(v) for v in value]
        if isinstance(value, dict):
            return {self.scrub_value(k) if isinstance(k, str) else k: self.scrub_value(v) for k, v in value.items()}
        return value

    def _describe(self, exc: BaseException) -> str:
        """One line naming `exc`, scrubbed before it is cut to 300 characters."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        text = str(exc) or type(exc).__name__
        return self._scrub(f"{type(exc).__name__}: {' '.join(text.split())}")[:300]

    def _set(self, state: str, error: str | None) -> None:
        error = self._scrub(error) if error else error  # every last_error passes here: panel, table, logs
        changed = (state, error) != (self.state, self.last_error)
        self.state, self.last_error = state, error
        self._changed.set()
        if self.on_change is not None and (changed or state == "connected"):
            self.on_change()

    async def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                await self._session()
                attempt = 0
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 (an anyio ExceptionGroup, a transport error: retried)
                self._client = None
                if self._stderr is not None:
                    await self._stderr.drained()  # every line the server wrote before it went is in the log
                self._set("failed", self._with_stderr(self._describe(exc)))
                log.info("MCP server %s: %s", self.config.name, self.last_error)
            if self._stop.is_set():
                break
            delay = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
            attempt += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            if not self._stop.is_set():
                self._set("connecting", self.last_error)

    async def _session(self) -> None:
        await _import_sdk(self.config.transport)
        import anyio
        from mcp import Client, StdioServerParameters

        from think_nb.procs import guarded

        config = self.config
        self._printed = []
        self._secrets = config.secrets() | referenced(config.env) | referenced(config.headers) | \
            referenced(config.args)
        lost = config.unstored()
        if lost:
            raise ConnectionError(SECRET_NOT_STORED.format(name=config.name, what=lost))
        if config.transport == "stdio":
            from mcp.client.stdio import stdio_client

            env = {**_inherited_env(), **resolve(config.env, "env", config.name)}
            # it never outlives the kernel
            command, args = guarded(config.target, resolve_args(config.args, config.name))
            params = StdioServerParameters(command=command, args=args, env=env)
            # the server's stderr goes to a pipe whose reader scrubs it into the log file (a kernel's
            # sys.stderr has no file descriptor, and the file must never hold a secret)
            server: Any = stdio_client(params, errlog=self._stderr_log().attempt())
        else:
            from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

            headers = resolve(config.headers, "header", config.name)
            server = streamable_http_client(config.target, http_client=create_mcp_http_client(headers=headers))
        limit = handshake_timeout()
        with anyio.CancelScope() as attempt:
            self._attempt = attempt
            try:
                with anyio.move_on_after(limit) as handshake:
                    async with Client(server, mode="legacy", message_handler=self._on_message) as client:
                        listing = await client.list_tools()
                        handshake.deadline = float("inf")
                        await self._serve(client, listing)
            finally:
                self._attempt = None
                if self._stderr is not None:
                    self._stderr.close_writer()  # the server is gone: its stderr reader reaches the end
            if handshake.cancelled_caught:
                printed = f"; it printed instead of JSON-RPC: {' | '.join(self._printed)[-300:]}" \
                    if self._printed else ""
                raise ConnectionError(f"MCP server {config.name!r} did not finish the MCP handshake (initialize, "
                                      f"tools/list) within {limit:g} s (THINK_NB_MCP_HANDSHAKE_TIMEOUT){printed}")
        if attempt.cancelled_caught:
            return  # closed while connecting
        if not self._stop.is_set():
            raise ConnectionError(self.last_error or "the connection broke")

    async def _serve(self, client: Any, listing: Any) -> None:
        self.tools = list(listing.tools)
        self._client = client
        self._broken.clear()
        self._set("connected", None)
        if self._stderr is not None and self.config.transport == "stdio":
            self._stderr.close_writer()  # the server has its own copy: the pipe now ends when it exits
        stop, broken = (asyncio.ensure_future(e.wait()) for e in (self._stop, self._broken))
        try:
            await asyncio.wait({stop, broken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            broken.cancel()
            self._client = None

    async def _on_message(self, message: Any) -> None:
        """The SDK's `message_handler`: keeps what a server printed that is not JSON-RPC (the
        transport hands each such line over as an exception), for the handshake's error."""
        if isinstance(message, Exception) and len(self._printed) < 20:
            errors = getattr(message, "errors", None)
            try:
                line = errors()[0].get("input") if callable(errors) else None
            except Exception:  # noqa: BLE001 - not a pydantic error: its text will do
                line = None
            text = self._scrub(" ".join(str(line if isinstance(line, str) else message).split()))
            self._printed.append(text[:200])  # scrubbed, then cut: a cut never leaves part of a secret


async def _import_sdk(transport: str) -> None:
    """Import the MCP SDK (its transport, and what it imports lazily on a call) in a worker thread
    the first time: ~0.3 s + ~1 s of CPU that must not hold the kernel's event loop."""
    import sys

    # jsonschema: the SDK imports it lazily to validate the first tool result (~1 s of CPU, on the loop)
    # anyio._backends._asyncio: anyio imports its backend on the first CancelScope (~80 ms)
    names = ["mcp", "mcp.client.stdio" if transport == "stdio" else "mcp.client.streamable_http", "jsonschema",
             "anyio._backends._asyncio"]
    missing = [n for n in names if n not in sys.modules]
    if missing:
        import importlib

        await asyncio.to_thread(lambda: [importlib.import_module(n) for n in missing])
    _scrub_sdk_logs()


class _ScrubSdkLog(logging.Filter):
    """Scrubs the MCP SDK's own log records (e.g. "Failed to parse JSONRPC message" quoting a
    server's stdout line) of every live connection's secrets, before a handler (the kernel's
    stderr, a notebook cell's output) sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = set().union(*(c._secrets for c in list(_LIVE))) | env_secrets()
        if secrets:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
                record.exc_info, record.exc_text = None, None
            record.msg, record.args = scrub(text, secrets), ()
        return True


_SDK_FILTER = _ScrubSdkLog()


def _scrub_sdk_logs() -> None:
    """Put `_SDK_FILTER` on every logger of the SDK (filters are not inherited by child loggers)."""
    for name in ["mcp", *(n for n in logging.root.manager.loggerDict if n.startswith("mcp."))]:
        logger = logging.getLogger(name)
        if _SDK_FILTER not in logger.filters:
            logger.addFilter(_SDK_FILTER)


def _inherited_env() -> dict[str, str]:
    from mcp.client.stdio import get_default_environment

    return get_default_environment()


def _consume(task: asyncio.Future) -> None:
    """Retrieve an abandoned call's outcome, so asyncio never logs "exception was never retrieved"."""
    if not task.cancelled():
        task.exception()
