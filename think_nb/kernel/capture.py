"""What one `run_code` prints and displays, captured so it lands in no cell's output.

    with Capture() as cap:     # sys.stdout / sys.stderr / IPython's display publisher swapped
        exec(...)
    cap.stdout.text(), cap.stderr.text(), cap.displays   # bounded text; [(data, metadata)]

- stdout/stderr: `BoundedText` keeps the first `MAX_STREAM_CHARS` characters and counts the rest
  (50 MB printed costs a counter, never memory). Writes from the kernel's thread and from threads
  started during the run go to the capture; other threads (started by earlier cells) keep writing
  where they did.
- displays (`display(...)`, `plt.show()` under the inline backend): IPython's
  `CapturingDisplayPublisher` for the duration, at most `MAX_DISPLAYS` kept.
- A thread the code started that is still alive when the run ends is *quarantined*: its later
  writes to `sys.stdout`/`sys.stderr` are dropped (counted in `dropped_chars()`) by a thin
  `Quarantine` wrapper left around the kernel's streams, so it never prints into other cells;
  a stream object it took during the run (the capture itself) is closed and drops its writes too.
"""

from __future__ import annotations

import io
import sys
import threading
from typing import Any

from think_nb.kernel import shell as kernel_shell

MAX_STREAM_CHARS = 100_000
"""Characters of stdout (and of stderr) kept for the panel; the model reads fewer (`report`)."""
MAX_DISPLAYS = 20


class _TextSink(io.TextIOBase):
    """A writable, non-tty, UTF-8 text stream: what code printing to `sys.stdout` asks of it."""

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


class BoundedText(_TextSink):
    """A text stream keeping the first `limit` characters and counting all of them."""

    def __init__(self, limit: int = MAX_STREAM_CHARS) -> None:
        super().__init__()
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.total = 0
        self.open = True
        self.dropped = 0

    def write(self, text: Any) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        n = len(text)
        if not self.open:
            self.dropped += n
            return n
        self.total += n
        if self.kept < self.limit:
            part = text[: self.limit - self.kept]
            self.parts.append(part)
            self.kept += len(part)
        return n

    def text(self) -> str:
        return "".join(self.parts)


class _Router(_TextSink):
    """`sys.stdout` during a run: the kernel's thread and threads started during the run write to
    `capture`, every other thread to `original`."""

    def __init__(self, capture: BoundedText, original: Any, before: set[int]) -> None:
        super().__init__()
        self.capture, self.original, self.before = capture, original, before
        self.main = threading.get_ident()

    def _target(self) -> Any:
        ident = threading.get_ident()
        return self.capture if ident == self.main or ident not in self.before else self.original

    def write(self, text: Any) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        target = self._target()
        if target is not self.capture and hasattr(target, "flush"):
            target.flush()


class Quarantine:
    """Wraps a kernel stream for good once a run left a thread printing: writes from the
    quarantined threads are dropped and counted; everything else is the wrapped stream's."""

    def __init__(self, inner: Any) -> None:
        self.__dict__["_inner"] = inner
        self.__dict__["dropped"] = 0

    def write(self, text: Any) -> int:
        current = threading.current_thread()
        if _QUARANTINED.get(current.ident or 0) is current:
            self.__dict__["dropped"] += len(text) if isinstance(text, str) else 0
            return len(text) if isinstance(text, str) else 0
        return self._inner.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "write":  # IPython's _tee patches `write` around each cell: the wrapper's own, which
            self.__dict__["write"] = value  # calls back into ours (forwarding it would recurse)
        else:
            setattr(self.__dict__["_inner"], name, value)


_QUARANTINED: dict[int, threading.Thread] = {}


def dropped_chars() -> int:
    """Characters quarantined threads tried to print since the kernel started."""
    return sum(getattr(s, "dropped", 0) for s in (sys.stdout, sys.stderr) if isinstance(s, Quarantine))


class Capture:
    """The context manager of one run (see the module docstring). After exit: `stdout`, `stderr`
    (`BoundedText`), `displays` (`[(data, metadata)]`, bounded), `displays_total`, and
    `left_running` (names of threads started during the run still alive, now quarantined)."""

    def __init__(self) -> None:
        self.stdout = BoundedText()
        self.stderr = BoundedText()
        self.displays: list[tuple[dict, dict]] = []
        self.displays_total = 0
        self.left_running: list[str] = []
        self._saved: tuple[Any, Any, Any, Any] | None = None
        self._before: set[int] = set()

    def __enter__(self) -> Capture:
        self._before = {t.ident for t in threading.enumerate() if t.ident is not None}
        shell = kernel_shell.shell()
        publisher = None
        if shell is not None:
            from IPython.core.displaypub import CapturingDisplayPublisher

            publisher = shell.display_pub
            shell.display_pub = CapturingDisplayPublisher()
        self._saved = (sys.stdout, sys.stderr, shell, publisher)
        sys.stdout = _Router(self.stdout, sys.stdout, self._before)
        sys.stderr = _Router(self.stderr, sys.stderr, self._before)
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._saved is not None
        stdout, stderr, shell, publisher = self._saved
        sys.stdout, sys.stderr = stdout, stderr
        if shell is not None:
            captured = shell.display_pub
            shell.display_pub = publisher
            outputs = list(getattr(captured, "outputs", []))
            self.displays_total = len(outputs)
            self.displays = [_display_of(o) for o in outputs[:MAX_DISPLAYS]]
        self.stdout.open = self.stderr.open = False  # a stream a thread kept drops what it writes later
        alive = [t for t in threading.enumerate() if t.ident is not None and t.ident not in self._before]
        if alive:
            for thread in alive:
                _QUARANTINED[thread.ident or 0] = thread
            if not isinstance(sys.stdout, Quarantine):
                sys.stdout = Quarantine(sys.stdout)
            if not isinstance(sys.stderr, Quarantine):
                sys.stderr = Quarantine(sys.stderr)
            self.left_running = [t.name for t in alive]
        for ident, thread in list(_QUARANTINED.items()):
            if not thread.is_alive():
                del _QUARANTINED[ident]


def _display_of(output: Any) -> tuple[dict, dict]:
    """`(data, metadata)` of one captured display: IPython's CapturingDisplayPublisher keeps dicts
    (`{"data", "metadata", ...}`: `plt.show()` and `display(...)` under the inline backend), older
    ones RichOutput objects."""
    if isinstance(output, dict):
        return dict(output.get("data") or {}), dict(output.get("metadata") or {})
    return dict(output.data), dict(output.metadata or {})
