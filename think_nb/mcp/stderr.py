"""A stdio MCP server's stderr log: what the server prints, scrubbed before any file holds it.

The MCP SDK hands `errlog` to the child process as its stderr file descriptor, so the bytes a
server writes there reach no Python code on their way to the file. Handing it the log file itself
(as think_nb did) stored whatever the server printed: a resolved `${VAR}` secret, a literal
`--api-key`, a provider key echoed in an auth error (issue 28 §5).

`StderrLog.attempt()` makes one pipe per connection attempt instead: the write end goes to the
child; a daemon thread reads it line by line, passes each line through `scrub` (the connection's
secrets and the environment's provider keys) and appends it to `<db>.mcp/<server>.log`. A line is
kept up to `LINE_LIMIT` characters and the rest of it dropped, so a server that prints without
newlines holds a bounded buffer. `drained()` waits (off the event loop) until the child's end is
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
DRAIN_S = 2.0
"""How long `drained()` waits for the server's end of the pipe to close (a grandchild may hold it)."""


class StderrLog:
    """The stderr log of one server (see the module docstring). `path` is appended to; `scrub`
    maps one line to what may be stored."""

    def __init__(self, path: Path, scrub: Callable[[str], str]) -> None:
        self.path = path
        self._scrub = scrub
        self._start = 0  # where this attempt's text starts in the file
        self._writer: TextIO | None = None
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()  # one writer of the file at a time (an old attempt may still drain)

    def attempt(self) -> TextIO:
        """A new pipe for the next attempt: returns its write end, to pass as the SDK's `errlog`."""
        self.close_writer()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._start = self.path.stat().st_size if self.path.exists() else 0
        read_fd, write_fd = os.pipe()
        os.set_inheritable(write_fd, True)
        self._writer = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        reader = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace", newline="")
        self._reader = threading.Thread(target=self._copy, args=(reader,), daemon=True,
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
                f.seek(self._start)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _copy(self, reader: IO[str]) -> None:
        with reader:
            while True:
                line = reader.readline(LINE_LIMIT)
                if not line:
                    return
                if not line.endswith("\n"):
                    line += "\n"
                    while (rest := reader.readline(LINE_LIMIT)) and not rest.endswith("\n"):
                        pass  # the rest of an over-long line is dropped
                self._append(self._scrub(line))

    def _append(self, text: str) -> None:
        with self._lock, self.path.open("a", encoding="utf-8", errors="replace") as f:
            f.write(text)
