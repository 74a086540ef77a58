"""The agent works in the live kernel: it sees the notebook's variables and runs code there (issue 26).

    from think_nb.kernel import kernel_tools
    class Analyst(Think):
        def get_tools(self):
            return kernel_tools(run="ask")        # "ask" (default) | "allow" | "off" (no run_code)
    class Analyst(Think):
        include_kernel_tools = True               # the same, merged before get_tools(): True/"ask", "allow", "off"

Modules: `shell.py` (where the notebook is: IPython's shell and `user_ns`), `namespace.py` (which
user names the model sees; `list_variables`, `describe_variable`),
`history.py` (`notebook_history` from IPython's input/output history), `capture.py` (stdout/stderr/
display publishing captured for one run, bounded), `run.py` (runs code in `get_ipython().user_ns` on
the kernel's thread), `undo.py` (bindings before/after by identity, kept values, in-place change
digests, `undo`), `report.py` (the model's bounded text of a run), `toolset.py` (`kernel_tools`).

## Contract (for the panel and the cell-insert branches)

Tool names: `list_variables(pattern?: str, include_callables?: bool)`, `notebook_history(last?: int = 10)`,
`describe_variable(name: str)`, `run_code(code: str)`. run_code's input is `{"code": str}`.

run_code's tool part `output` (what the panel renders; the model reads `report.model_text(output)`,
a bounded text where images are a one-line note):

    {"type": "kernel-run",
     "code": str,                 # exactly what ran (the edited code when the user edited it)
     "edited": bool,              # True when approved with an edited input
     "stdout": str, "stderr": str,            # each bounded (see capture.MAX_STREAM_CHARS), cut marked
     "stdout_chars": int, "stderr_chars": int,   # how much was printed in all
     "result": str | None,        # the last expression's text/plain (None when no value / None)
     "outputs": [{"mime": "text/plain" | "image/png" | "table" | "text/html", "data": ...}],
         # text/plain: str; image/png: base64 str (figures, display(...) of images);
         # table: the bounded {"type": "table", ...} object of think_nb.data_context.tool_output;
         # text/html: str -- UNTRUSTED: the panel must never insert it unsanitised (show it as text,
         #            or in a sandboxed iframe without scripts); the model never sees it.
     "changes": {"bound": [names], "rebound": [names], "deleted": [names], "mutated": [names]},
     "undoable": bool,            # some binding can be put back
     "undone": bool,              # set (the part's output is rewritten) when agent.undo() ran
     "undo_note": str | None,     # after undo: what was restored / what cannot be undone and why
     "duration_ms": float}

A run that raises (any exception, SystemExit too) is the call's `output-error`: errorText holds
the traceback's last frames and what it printed before. A kernel interrupt while the code runs
(KeyboardInterrupt inside it) makes the call an output-error starting "Interrupted" and ends the
turn `aborted`, as Stop does; the kernel stays usable. Runs that failed keep their undo record too.

Approval with an edited input: `agent.approve(call_id, code="...")` for run_code,
`agent.approve(call_id, input={...})` for any tool; the edited input is validated against the
tool's schema before anything is recorded. The part keeps the model's `input`; the part's
`approval` gets `"input": <edited input>`; the approvals ledger records both and the engine runs
the ledger's input, never one a message claims.

Frames (think_nb/panel/protocol_spec.json):
- `tool_approval` gets an optional `input` (object: the edited tool input, e.g. {"code": "..."}),
  validated like approve(input=...).
- new panel frame `tool_undo {"toolCallId": str}` -> agent.undo(id); the outcome arrives as the
  updated message (output.undone / output.undo_note) via `message_updated`; a refusal (undone
  already, values gone after a restart, not a run_code call) is logged and changes nothing.
Widget trait: `kernel_id` (str, "" outside a Jupyter kernel): the kernel's id from ipykernel's
connection file name (`kernel-<id>.json`), so the panel can POST /api/kernels/<id>/interrupt.

`agent.undo(call_id)` returns an `UndoReport` (str() is readable: "restored: x, df; removed: y;
changed in place: df -- cannot be undone"). `%think kernel AGENT` prints what list_variables shows.
"""

from think_nb.lazy import attach as _attach

__all__ = ["kernel_tools"]

__getattr__ = _attach(__name__, {"kernel_tools": ".toolset"})  # lazy: importing think_nb.kernel costs nothing
