"""`run_code`: run code in the notebook's namespace on the kernel's own thread, the way a cell would.

    run(code, call_id="call_1", edited=False, owner=runtime)   # the `kernel-run` report (a dict)

The code runs synchronously in `get_ipython().user_ns` (the `__main__` namespace outside IPython)
on the calling thread: the turn is a task on the kernel's event loop, the kernel's main thread,
where user objects live (they are not thread-safe). While it runs:

- what it prints and displays is captured (`capture.Capture`): nothing lands in another cell;
- SIGINT raises `KeyboardInterrupt` inside it (`signal.default_int_handler`; ipykernel ignores
  SIGINT outside an `execute_request` it handles), so the kernel's interrupt (the toolbar's ■,
  `KernelManager.interrupt_kernel()`, `POST /api/kernels/<id>/interrupt`) stops it; the previous
  handler is back as soon as the code returns. An interrupt that landed earlier, after the call
  was announced (the card says running) and before this handler was in place, was latched by the
  turns' handler (`think_nb.interrupts.stop_pending`): then the code does not run at all (`StopTurn`,
  "Interrupted before it ran"). Handler first, latch second, so no moment of the call drops a Stop;
- the last statement, when it is an expression, is evaluated for its value (as a cell's is),
  which is neither printed nor stored in `Out`/`_`.

Afterwards new matplotlib figures are rendered to PNG and closed (so the inline backend does not
show them in the next cell), the namespace is compared with what it held before (`undo.Bindings`)
and the change is kept for `undo`. Outcomes: the report (`kernel-run`, see `think_nb.kernel`);
`RunError` (an exception, `SystemExit` included: its last traceback frames and what was printed
before); `StopTurn` (interrupted). Both keep the undo record.
"""

from __future__ import annotations

import ast
import base64
import io
import linecache
import signal
import sys
import threading
import time
import traceback
from typing import Any

from think_nb import interrupts
from think_nb.kernel import capture, undo
from think_nb.kernel.shell import namespace
from think_nb.tools.tool import StopTurn

TRACEBACK_FRAMES = 6
ERROR_CHARS = 6_000
RESULT_CHARS = 20_000
HTML_CHARS = 200_000
MAX_IMAGE_CHARS = 8_000_000
"""Longest base64 PNG kept (about 6 MB): a larger figure is replaced by a note."""
MAX_FIGURES = 10


class RunError(Exception):
    """The code raised: the text is its traceback's last frames, and what it printed before."""


class _StopHeard(Exception):
    """An interrupt latched before the code ran (`think_nb.interrupts.stop_pending`)."""


def _install_sigint(saved: list) -> None:
    """SIGINT raises `KeyboardInterrupt` from here on; the handler it replaces goes into `saved`
    first, so an interrupt landing the instant after cannot lose it."""
    if threading.current_thread() is threading.main_thread():
        saved.append(signal.getsignal(signal.SIGINT))
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _restore_sigint(saved: list) -> None:
    if saved and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, saved[0])


def _compiled(code: str, filename: str) -> tuple[Any, Any, ast.Module]:
    tree = ast.parse(code, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body[-1].value)
        tree.body.pop()
    body = compile(tree, filename, "exec")
    value = compile(last, filename, "eval") if last is not None else None
    return body, value, ast.parse(code, filename, "exec")


def _frames_text(exc: BaseException, filename: str) -> str:
    """The traceback from the code's first frame on, its last `TRACEBACK_FRAMES` frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    frames = traceback.extract_tb(tb) if tb is not None else traceback.StackSummary()
    cut = len(frames) > TRACEBACK_FRAMES
    lines = ["Traceback (most recent call last):"] + (["  …"] if cut else [])
    lines += traceback.format_list(frames[-TRACEBACK_FRAMES:])
    lines += traceback.format_exception_only(type(exc), exc)
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines).rstrip()
    return text if len(text) <= ERROR_CHARS else "…" + text[-ERROR_CHARS:]


def _figures_before() -> set[int]:
    plt = sys.modules.get("matplotlib.pyplot")
    return set(plt.get_fignums()) if plt is not None else set()


def _new_figures(before: set[int]) -> list[dict]:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    out: list[dict] = []
    for number in [n for n in plt.get_fignums() if n not in before]:
        figure = plt.figure(number)
        try:
            if len(out) < MAX_FIGURES:
                buffer = io.BytesIO()
                figure.savefig(buffer, format="png", bbox_inches="tight")
                out.append(_png(buffer.getvalue(), {"figure": number}))
        except Exception as exc:  # noqa: BLE001 - a broken figure is a note, not a failed run
            out.append({"mime": "text/plain", "data": f"[figure {number} could not be drawn: {type(exc).__name__}]"})
        finally:
            plt.close(figure)  # the inline backend would show it under the next cell otherwise
    return out


def _png(data: bytes | str, meta: dict | None = None) -> dict:
    text = data if isinstance(data, str) else base64.b64encode(data).decode("ascii")
    if len(text) > MAX_IMAGE_CHARS:
        return {"mime": "text/plain", "data": f"[an image of {len(text) * 3 // 4:,} bytes, too large to keep]"}
    return {"mime": "image/png", "data": text, **({"meta": meta} if meta else {})}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit:,} more characters)"


def _display_outputs(displays: list[tuple[dict, dict]]) -> list[dict]:
    out = []
    for data, _meta in displays:
        if "image/png" in data:
            out.append(_png(data["image/png"]))
        elif "text/html" in data:
            out.append({"mime": "text/html", "data": _cut(str(data["text/html"]), HTML_CHARS),
                        "text": _cut(str(data.get("text/plain", "")), RESULT_CHARS)})
        elif "text/plain" in data:
            out.append({"mime": "text/plain", "data": _cut(str(data["text/plain"]), RESULT_CHARS)})
    return out


def _value_outputs(shell: Any, value: Any) -> tuple[str | None, list[dict]]:
    """The last expression's text/plain and rich outputs (a table for frames/arrays, a PNG, HTML)."""
    from think_nb.data_context import _is_array, _is_frame, tool_output

    if value is None:
        return None, []
    outputs: list[dict] = []
    if _is_frame(value) or (_is_array(value) and value.size > 200):
        outputs.append({"mime": "table", "data": tool_output(value)})
    data: dict = {}
    try:
        if shell is not None:
            data, _ = shell.display_formatter.format(value)
        else:
            data = {"text/plain": repr(value)}
    except Exception as exc:  # noqa: BLE001 - a user object's repr may raise anything
        data = {"text/plain": f"<unrepresentable {type(value).__name__}: {type(exc).__name__}: {exc}>"}
    if not outputs:
        if "image/png" in data:
            outputs.append(_png(data["image/png"]))
        elif "text/html" in data:
            outputs.append({"mime": "text/html", "data": _cut(str(data["text/html"]), HTML_CHARS),
                            "text": _cut(str(data.get("text/plain", "")), RESULT_CHARS)})
    return _cut(str(data.get("text/plain", "")), RESULT_CHARS), outputs


def _printed_tail(cap: capture.Capture) -> str:
    out = cap.stdout.text()[-2_000:]
    err = cap.stderr.text()[-2_000:]
    return (f"\nstdout before it stopped:\n{out}" if out else "") + (f"\nstderr:\n{err}" if err else "")


def run(code: str, *, call_id: str = "", edited: bool = False, owner: Any = None) -> dict:
    """Run `code` (see the module docstring); returns the `kernel-run` report.

    Raises:
        RunError: a syntax error, or the code raised (any exception; `SystemExit` too).
        StopTurn: the kernel's interrupt stopped it (`KeyboardInterrupt` inside the code), or
            landed before the code began (latched: none of it ran).
    """
    shell, ns = namespace()
    filename = f"<run_code {call_id or 'call'}>"
    try:
        body, last, tree = _compiled(code, filename)
    except SyntaxError as exc:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if "await" in code and "outside" in str(exc):
            text += "\n(top-level `await` is not supported by run_code: use asyncio.run, or a cell)"
        raise RunError(text) from None
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)  # tracebacks show the lines
    before = undo.Bindings.take(ns, undo.mentioned_names(tree))
    figures = _figures_before()
    value: Any = None
    failure: BaseException | None = None
    saved: list = []
    started = time.perf_counter()
    cap = capture.Capture()
    try:
        with cap:
            try:
                _install_sigint(saved)
                try:
                    if interrupts.stop_pending():  # after the install: an interrupt from now on raises
                        raise _StopHeard
                    exec(body, ns)
                    if last is not None:
                        value = eval(last, ns)
                finally:
                    _restore_sigint(saved)
            except BaseException as exc:  # noqa: BLE001 - SystemExit & co. are the run's outcome, not the kernel's
                _restore_sigint(saved)  # an interrupt may land in the finally above, before it restored
                failure = exc
    except KeyboardInterrupt as exc:  # landed in the capture's own exit
        failure = exc
    duration_ms = round((time.perf_counter() - started) * 1000, 3)
    changes = before.compare(ns)
    undo.RECORDS.keep(owner, call_id, changes)
    outputs = _display_outputs(cap.displays) + _new_figures(figures)
    notes = []
    if cap.left_running:
        notes.append(f"thread(s) it started still run ({', '.join(cap.left_running)}): what they print from now on "
                     "is dropped, so it never lands in another cell")
    if cap.displays_total > len(cap.displays):
        notes.append(f"{cap.displays_total - len(cap.displays)} more display output(s) not kept")
    if isinstance(failure, _StopHeard):
        raise StopTurn("Interrupted before it ran: the user stopped the turn (the kernel's interrupt) as the "
                       "call started; none of the code ran.")
    if isinstance(failure, KeyboardInterrupt):
        raise StopTurn(f"Interrupted after {duration_ms / 1000:.1f} s (KeyboardInterrupt): the user stopped the code; "
                       f"the turn was stopped.\n{_frames_text(failure, filename)}{_printed_tail(cap)}")
    if failure is not None:
        raise RunError(_frames_text(failure, filename) + _printed_tail(cap))
    result, rich = _value_outputs(shell, value)
    return {"type": "kernel-run", "code": code, "edited": edited,
            "stdout": cap.stdout.text(), "stderr": cap.stderr.text(),
            "stdout_chars": cap.stdout.total, "stderr_chars": cap.stderr.total,
            "result": result, "outputs": outputs + rich, "changes": changes.as_dict(),
            "undoable": changes.undoable, "undone": False, "undo_note": None, "duration_ms": duration_ms,
            "notes": notes}
