"""A stdio MCP server's stderr log: what the server prints, scrubbed before any file holds it.

The MCP SDK hands `errlog` to the child process as its stderr file descriptor, so the bytes a
server writes there reach no Python code on their way to the file. Handing it the log file itself
(as think_nb did) stored whatever the server printed: a resolved `${VAR}` secret, a literal
`--api-key`, a provider key echoed in an auth error (issue 28 §5).

`StderrLog.attempt()` makes one pipe per connection attempt instead: the write end goes to the
child; a daemon thread reads it line by line, passes each line through `scrub` (the connection's
secrets and the environment's provider keys) and appends it to `<db>.mcp/<server>.log`. A line is
kept up to `LINE_LIMIT` characters and the rest of it dropped (a secret cut there is removed
whole), so a server that prints without newlines holds a bounded buffer; a file over `LOG_LIMIT`
bytes is rotated to `<server>.log.1`, so a crash-looping server holds at most twice that.
`drained()` waits (off the event loop) until the child's end is
closed and every line is in the file; `tail()` is this attempt's text, for `last_error`.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TextIO

LINE_LIMIT = 64 * 1024
"""Characters kept of one stderr line; the rest of the line is dropped."""
LOG_LIMIT = 1024 * 1024
"""Bytes a log file may reach before it is rotated to `<server>.log.1` (one old file is kept)."""
DRAIN_S = 2.0
"""How long `drained()` waits for the server's end of the pipe to close (a grandchild may hold it)."""


class StderrLog:
    """The stderr log of one server (see the module docstring). `path` is appended to;
    `scrub(text, cut)` maps one line to what may be stored (`cut`: the line was cut off at
    `LINE_LIMIT`, so a secret's beginning at its end must go too); `on_end()` is called from the
    reader thread when an attempt's pipe reaches its end (the server and all that held its stderr
    have exited, once think_nb closed its own copy)."""

    def __init__(self, path: Path, scrub: Callable[[str, bool], str],
                 on_end: Callable[[int], None] | None = None) -> None:
        self.path = path
        self._scrub = scrub
        self._on_end = on_end
        self.attempts = 0  # attempts made; `on_end` is given the number of the attempt whose pipe ended
        self._start = 0  # where this attempt's text starts in the file
        self._writer: TextIO | None = None
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()  # one writer of the file at a time (an old attempt may still drain)
        self._out: IO[str] | None = None  # the log file, open for appending

    def attempt(self) -> TextIO:
        """A new pipe for the next attempt: returns its write end, to pass as the SDK's `errlog`."""
        self.close_writer()
        self.attempts += 1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._start = self.path.stat().st_size if self.path.exists() else 0
        read_fd, write_fd = os.pipe()
        os.set_inheritable(write_fd, True)
        self._writer = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        # newline="\n": a lone "\r" (a progress bar) is part of a line, not the end of one
        reader = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace", newline="\n")
        self._reader = threading.Thread(target=self._copy, args=(reader, self.attempts), daemon=True,
                                        name=f"think-mcp-stderr-{self.path.stem}")
        self._reader.start()
        return self._writer

    def close_writer(self) -> None:
        """Close think_nb's copy of the write end (the child keeps its own until it exits)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    async def drained(self, timeout: float = DRAIN_S) -> None:
        """Wait up to `timeout` s, in a worker thread, for this attempt's reader to reach the end."""
        reader = self._reader
        if reader is not None and reader.is_alive():
            await asyncio.to_thread(reader.join, timeout)

    def tail(self) -> str:
        """What this attempt's server wrote to stderr so far (scrubbed), or "" if nothing."""
        try:
            with self._lock, self.path.open("rb") as f:
                f.seek(min(self._start, self.path.stat().st_size))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _copy(self, reader: IO[str], attempt: int) -> None:
        with reader:
            while True:
                line = reader.readline(LINE_LIMIT)
                if not line:
                    break
                cut = not line.endswith("\n")
                if cut:
                    while (rest := reader.readline(LINE_LIMIT)) and not rest.endswith("\n"):
                        pass  # the rest of an over-long line is dropped
                self._append(self._scrub(line.rstrip("\n"), cut) + "\n")
        if self._on_end is not None:
            self._on_end(attempt)

    def _append(self, text: str) -> None:
        with self._lock:
            if self._out is None or self._out.closed:
                self._out = self.path.open("a", encoding="utf-8", errors="replace")
            elif self._out.tell() > LOG_LIMIT:
                self._out.close()
                self.path.replace(self.path.with_name(self.path.name + ".1"))
                self._out = self.path.open("a", encoding="utf-8", errors="replace")
                self._start = 0
            self._out.write(text)
            self._out.flush()  # what tail() reads is in the file

    def close(self) -> None:
        """Close the pipe's write end and the log file (a reader still draining reopens it)."""
        self.close_writer()
        with self._lock:
            if self._out is not None:
                self._out.close()
