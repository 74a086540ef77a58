"""`kernel_tools(run=...)`: the kernel tools an agent returns from `get_tools()` (or sets
`include_kernel_tools` for).

    def get_tools(self):
        return [*kernel_tools(run="ask").values(), my_tool]    # or {**kernel_tools(), ...}

`run`: "ask" (default) — `run_code` needs the user's approval for every call (the card shows the
code; the user may edit it: `agent.approve(id, code=...)`); "allow" — it runs without asking;
"off" — no `run_code`, only the three read tools. The read tools never need approval: they
read names and IPython's history, and run no user code but bounded reprs.

The tool functions are `async`: they run on the kernel's event loop thread, where the user's
objects live (a plain function would run on a worker thread). `describe_variable` of a DataFrame
describes a `data_context.snapshot` in a worker thread, so the kernel's loop is not held (~0.1 s
for 1,000,000 rows).
"""

from __future__ import annotations

import ast
import asyncio
from typing import Annotated, Literal

from pydantic import AfterValidator

from think_nb.errors import UserError
from think_nb.tools.tool import CURRENT_TOOL_CALL, CURRENT_TOOL_EDITED, CURRENT_TOOL_RUNNER, Tool, from_function

RunMode = Literal["ask", "allow", "off"]
RUN_MODES = ("ask", "allow", "off")
KERNEL_TOOL_NAMES = ("list_variables", "notebook_history", "describe_variable", "run_code")


def _owner() -> object | None:
    """The agent (its runtime) a call runs for: the key of its undo records."""
    runner = CURRENT_TOOL_RUNNER.get()
    hooks = getattr(runner, "hooks", None)
    return getattr(hooks, "host", None)



def _parses(code: str) -> str:
    """`code`, when it is Python that parses (top-level `await` included, refused later with its own
    message); else a `ValueError` that says why. What a person edits before approving is checked
    here, while the call still waits: an empty box or a typo never uses up the approval."""
    if not code.strip():
        raise ValueError("the code is empty; approve the proposed code, or deny the call")
    try:
        compile(code, "<run_code>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        raise ValueError(f"the code does not parse (SyntaxError: {exc.msg}, line {exc.lineno})") from None
    return code


Code = Annotated[str, AfterValidator(_parses)]
"""run_code's `code`: Python that parses (see `_parses`)."""

def kernel_tools(run: RunMode = "ask") -> dict[str, Tool]:
    """`{name: Tool}`: `list_variables`, `notebook_history`, `describe_variable` and (unless
    `run="off"`) `run_code` (see the module docstring; outputs: `think_nb.kernel`).

    Raises:
        UserError: `run` is not "ask", "allow" or "off".
    """
    if run not in RUN_MODES:
        raise UserError(f"kernel_tools(run={run!r}): pass 'ask' (run_code needs approval), 'allow' (it runs "
                        "without asking) or 'off' (no run_code).")
    from think_nb.kernel import history, namespace
    from think_nb.kernel import run as runner
    from think_nb.kernel import shell as kernel_shell

    async def list_variables(pattern: str | None = None, include_callables: bool = False) -> dict:
        """List the notebook's variables (the user's names in the live kernel) with type, shape and a
        short preview. Leaves out modules, IPython's own names, private names and functions/classes
        (include_callables=true lists functions and classes too). Long lists are cut: narrow with pattern.

        Args:
            pattern: a glob such as df* or a substring of the names to list
            include_callables: also list functions and classes
        """
        shell, ns = kernel_shell.namespace()
        hidden = getattr(shell, "user_ns_hidden", None)
        return namespace.list_variables(ns, hidden, pattern=pattern, include_callables=include_callables)

    async def notebook_history(last: int = 10) -> dict:
        """The cells the person ran in this kernel so far (source and result), oldest first: what they
        did before asking.

        Args:
            last: how many of the latest cells (1-100)
        """
        shell, _ = kernel_shell.namespace()
        return history.notebook_history(shell, last)

    async def describe_variable(name: str) -> dict:
        """Describe one notebook variable: a DataFrame's shape, dtypes, first and last rows and
        describe(); an array's shape, dtype and values; any other object's bounded repr.

        Args:
            name: the variable's name, e.g. df
        """
        from think_nb.data_context import _is_frame, snapshot

        _, ns = kernel_shell.namespace()
        if not isinstance(name, str) or name not in ns:
            close = [n for n in ns if isinstance(n, str) and not n.startswith("_") and name.lower() in n.lower()][:10]
            raise LookupError(f"There is no variable named {name!r} in the kernel"
                              + (f"; similar names: {', '.join(sorted(close))}" if close else "")
                              + ". Call list_variables to see the names.")
        value = ns[name]
        if _is_frame(value):
            copy = snapshot(value)  # on the kernel's thread; described in a worker thread
            return await asyncio.get_running_loop().run_in_executor(None, namespace.describe_value, name, copy)
        return namespace.describe_value(name, value)

    async def run_code(code: Code) -> dict:
        """Run Python code in the notebook's live kernel, in the user's namespace, as a cell would: it
        can read and change the notebook's variables. Returns what it printed, the value of its last
        expression, tables and figures (matplotlib figures come back as images shown to the user), and
        which names it bound, rebound or deleted. Keep it short; one step at a time.

        Args:
            code: the Python code to run
        """
        return runner.run(code, call_id=CURRENT_TOOL_CALL.get() or "", edited=CURRENT_TOOL_EDITED.get(),
                          owner=_owner())

    tools = {"list_variables": from_function(list_variables), "notebook_history": from_function(notebook_history),
             "describe_variable": from_function(describe_variable)}
    if run != "off":
        tools["run_code"] = from_function(run_code, needs_approval=run == "ask")
    return tools
