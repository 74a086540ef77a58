"""The `execute` tool: Python the model writes, run in a pydantic-monty sandbox (Think's codemode
`createExecuteTool`).

    class Coder(Think):
        def get_tools(self):
            return [add, execute_tool(self)]

The code runs in a Monty worker process (a Python-subset interpreter written in Rust): no host
file system (file calls raise `PermissionError`), no network, no environment, no imports beyond
Monty's standard modules. It sees only:

- `tools.<name>(...)` for each of the agent's tools (workspace tools included; not `execute`
  itself), and the same as plain functions `<name>(...)` when the name is not a Python builtin;
  keyword or positional arguments (positional ones follow the tool's parameter order). A call
  returns the tool's JSON output; a failing call raises `RuntimeError` (bad input: `ValueError`).
- `state.read(path) -> str`, `state.write(path, content)`, `state.list(path="/") -> list[str]`,
  `state.glob(pattern) -> list[str]`, `state.exists(path) -> bool`, `state.delete(path)` over the
  agent's workspace (writes and deletes go through the `write`/`delete` tools, so their approval
  setting applies).

The tool returns `{"result": <the code's last expression>, "stdout": "...", "calls": <inner calls>}`
Limits (each a tool error naming it):
`timeout` seconds of sandbox execution, `max_memory` bytes of heap, `max_output` bytes printed,
`max_recursion` frames, `max_calls` inner calls. The kernel's event loop never waits on the sandbox.

Approval inside code: when the code calls a tool that needs approval, the run is dumped (a Monty
snapshot: the interpreter's whole state, bytes), stored in the agent's SQLite with the stdout so
far, and the call pauses like a direct gated call: the stream emits `tool-approval-request` for the
`execute` call, with `approval.descriptor = {"kind": "execute", "code", "call": {"tool", "input"},
"stdout"}` shown by the approval card. `approve()` then continues the turn; the continuation runs
`execute` again for the same call id, which restores the snapshot in a fresh worker, runs the
approved inner call once, and resumes the code from that point (nothing before it runs again; a
kernel restart in between is fine). Any number of gated calls works: each one reached after a
resume pauses again with a new approval id (the part goes back to `approval-requested`, with the
new inner call in its descriptor), and the turn waits for that decision before calling the model.

`deny()` denies the whole `execute` call, as it denies a direct call: the part becomes
`output-denied` (the model sees the denial), the code never continues, the gated inner call never
runs (inner calls made before the pause keep their effects), and the stored snapshot is deleted
(so is the snapshot of a pause superseded by a new message, or of a cleared conversation). The
pause record is claimed (deleted) before the inner call runs, so an inner tool never runs twice,
and the record names the approval id it waits for, so no other decision opens it.

Gating the whole call (`execute_tool(self, needs_approval=True)`, or a predicate on `{"code": ...}`)
asks before any code runs, as for any gated tool; once approved the code runs from its start (the
call's own approval, not a pause's: a pause's approval id is `PAUSE_APPROVAL`-prefixed, so only an
approved pause whose record is gone is refused as "its paused state is gone"), and a gated inner
call it reaches pauses it as above.

Hooks: each inner tool call (`tools.<name>(...)`, and `state.write` / `state.delete`, which are the
`write` / `delete` tools) goes through `before_tool_call` and `after_tool_call` like a direct call
(block, substitute, a new input; their contexts carry `parent_tool_call_id`, and the inner call id
is `<execute call id>.<n>`); a gated inner call's hooks fire once it is approved, as a direct
call's do. `state.read/list/glob/exists` are workspace reads, not tool calls: no hooks.
"""

from __future__ import annotations

import base64
import builtins
import keyword
from collections.abc import Callable, Mapping
from typing import Any

from think_nb.aio import maybe_await
from think_nb.binding import runtime_of
from think_nb.errors import ToolRaised, UserError, describe
from think_nb.messages.ids import new_id
from think_nb.procs import monty_pool
from think_nb.tools.tool import (
    CURRENT_TOOL_CALL,
    CURRENT_TOOL_RUNNER,
    PAUSE_PREFIX,
    ApprovalRequired,
    Tool,
    ToolInputError,
    dump_output,
    dump_output_later,
    from_function,
)
from think_nb.tools.toolset import resolve_tools
from think_nb.workspace import ops

PAUSE_KEY = PAUSE_PREFIX
"""agent_state key prefix of a paused run (`PAUSE_KEY + toolCallId`): `{approval_id, snapshot (base64),
stdout, call, calls}`; the engine deletes it when the call can no longer resume."""

PAUSE_APPROVAL = "approval_execute"
"""Prefix (`new_id(PAUSE_APPROVAL)`) of the approval ids of `execute`'s pauses, telling them from the
approval of the call's own gate (`needs_approval`), whose ids are the engine's `approval_<hex>`."""

DESCRIPTION = (
    "Run Python code in a sandbox (a Python subset: no imports of host modules, no files, no network). "
    "Call your tools as functions: tools.<name>(arg=...) or <name>(...). Use state.read(path), "
    "state.write(path, content), state.list(path), state.glob(pattern), state.exists(path), "
    "state.delete(path) for workspace files. The value of the last expression is returned, with "
    "everything printed. Use it to combine several tool calls in one step.")


class ExecuteError(Exception):
    """The code failed or passed a limit; the text (with the stdout so far) goes back to the model."""


def execute_tool(agent: Any = None, *, tools: Any = None, workspace: Any = None, name: str = "execute",
                 timeout: float = 10.0, max_memory: int = 64 * 1024 * 1024, max_output: int = 64 * 1024,
                 max_recursion: int = 200, max_calls: int = 1000,
                 needs_approval: bool | Callable[[dict], Any] = False) -> Tool:
    """Make the `execute` tool.

    Args:
        agent: the Think agent whose tools (the built-in families with `in_execute`, i.e. its
            `workspace_tools()`, then its `get_tools()`, read at call time, minus this tool),
            workspace and approvals the code uses. Without it, pass `tools` and/or `workspace`;
            gated tools then cannot pause (their calls raise in the code).
        tools: tools for the code instead of the agent's (list or dict, as `get_tools()` returns).
        workspace: fsspec file system for `state.*` (default: `agent.workspace`).
        name: the tool's name.
        timeout: seconds of sandbox execution (time spent in inner tool calls is not counted).
        max_memory: bytes of sandbox heap. max_output: bytes of printed text kept.
        max_recursion: call-stack depth. max_calls: inner tool and state calls per run.
        needs_approval: gate the whole call before its code runs (True, or a predicate on
            `{"code": ...}`, as `@tool`'s); gated inner calls pause it either way.

    Raises:
        UserError: neither `agent` nor `tools`/`workspace` given, or a limit that is not positive.
    """
    if agent is None and tools is None and workspace is None:
        raise UserError("execute_tool() needs the agent (execute_tool(self)) or tools=/workspace= to give the code.")
    for label, value in (("timeout", timeout), ("max_memory", max_memory), ("max_output", max_output),
                         ("max_recursion", max_recursion), ("max_calls", max_calls)):
        if not isinstance(value, (int, float)) or value <= 0:
            raise UserError(f"execute_tool({label}={value!r}): pass a positive number.")
    host = runtime_of(agent) if agent is not None else None  # its tools, workspace and store
    runner = _Runner(host, tools, workspace, name, timeout, max_memory, max_output, max_recursion, max_calls)

    async def execute(code: str) -> dict:
        """Run Python code that may call your tools (tools.<name>(...)) and workspace files (state.*).

        Args:
            code: Python source; the value of its last expression is returned
        """
        return await runner.run(code)

    return from_function(execute, name=name, description=DESCRIPTION, needs_approval=needs_approval)


class _Runner:
    def __init__(self, agent: Any, tools: Any, workspace: Any, name: str, timeout: float, max_memory: int,
                 max_output: int, max_recursion: int, max_calls: int) -> None:
        self.agent, self.explicit_tools, self.explicit_fs, self.name = agent, tools, workspace, name
        self.timeout, self.max_memory, self.max_output = float(timeout), int(max_memory), int(max_output)
        self.max_recursion, self.max_calls = int(max_recursion), int(max_calls)

    # -- what the code can reach -------------------------------------------------------------
    async def _tools(self) -> dict[str, Tool]:
        if self.explicit_tools is not None:
            found = resolve_tools(self.explicit_tools)
        else:
            reached = await self.agent.execute_tools()  # the agent's runtime: built-ins marked in_execute
            found = {**reached, **resolve_tools(await maybe_await(self.agent.get_tools()))}
        found.pop(self.name, None)
        return found

    def _fs(self) -> Any:
        return self.explicit_fs if self.explicit_fs is not None else self.agent.workspace

    def _limits(self) -> Any:
        return {"max_feed_duration_secs": self.timeout, "max_memory": self.max_memory,
                "max_recursion_depth": self.max_recursion, "max_suspensions": self.max_calls + 10}

    # -- one run -----------------------------------------------------------------------------
    async def run(self, code: str) -> dict:
        import pydantic_monty as pm

        tools = await self._tools()
        call_id = CURRENT_TOOL_CALL.get()
        store = getattr(self.agent, "store", None)
        pause = store.state.get(PAUSE_KEY + call_id) if store is not None and call_id is not None else None
        approved_call: dict | None = None
        if pause is not None:
            assert store is not None and call_id is not None
            decision = store.approvals.decision(call_id)
            store.state.delete(PAUSE_KEY + call_id)  # claimed: whatever happens next, it never resumes twice
            if not (decision and decision["approved"] and decision["approval_id"] == pause["approval_id"]):
                raise ExecuteError("The paused code was not approved; it did not continue.")
            approved_call = pause["call"]
        elif store is not None and call_id is not None and _resumed_pause(store, call_id, code):
            # a pause of this call was approved, and the resume that claimed its state never finished
            # (aborted): starting over would repeat the inner calls that already ran. (An approval of the
            # call's own gate, `needs_approval`, runs the code from its start.)
            raise ExecuteError("This execute call was approved to resume, but its paused state is gone (claimed by "
                               "an earlier resume); nothing ran again. Call execute anew.")
        stdout = pm.CollectString(max_bytes=self.max_output)
        state = _Run(self, tools, code, stdout, pause)
        pool = monty_pool(min_processes=1, max_processes=1, request_timeout=self.timeout + 30)
        async with pool, pool.checkout(script_name="execute.py", limits=self._limits(),
                                       os_policy={"sleep": "zero"}) as session:
            try:
                if pause is None:
                    await session.feed_run(_prelude(tools))
                    snap = await session.feed_start(code, print_callback=stdout)
                else:
                    snap = await session.load_snapshot(base64.b64decode(pause["snapshot"]), print_callback=stdout)
                return await state.drive(snap, approved_call, call_id)
            except pm.MontyError as exc:
                raise ExecuteError(state.describe(exc)) from None


class _Run:
    """Drives one feed: answers each suspension (tool call, state call, OS call) until it completes."""

    def __init__(self, runner: _Runner, tools: dict[str, Tool], code: str, stdout: Any, pause: dict | None) -> None:
        self.runner, self.tools, self.code, self.stdout = runner, tools, code, stdout
        self.before = (pause or {}).get("stdout", "")
        self.calls = int((pause or {}).get("calls", 0))

    def output(self) -> str:
        return self.before + self.stdout.output

    def describe(self, exc: Exception) -> str:
        import pydantic_monty as pm

        text = exc.display("type-msg") if isinstance(exc, (pm.MontyRuntimeError, pm.MontySyntaxError)) else str(exc)
        if text.startswith("MemoryError") and f"> {self.runner.max_output} bytes" in text:  # the print collector's
            text = f"output limit exceeded: the code printed more than {self.runner.max_output} bytes"
        elif text.startswith("TimeoutError"):
            text = f"time limit exceeded: the code ran longer than {self.runner.timeout:g} s ({text})"
        elif text.startswith("MemoryError"):
            text = f"memory limit exceeded: the code used more than {self.runner.max_memory} bytes ({text})"
        elif text.startswith("RecursionError"):
            text = f"recursion limit exceeded: deeper than {self.runner.max_recursion} calls ({text})"
        out = self.output()
        return text + (f"\nstdout so far:\n{out[-2000:]}" if out else "")

    async def drive(self, snap: Any, approved_call: dict | None, call_id: str | None) -> dict:
        import pydantic_monty as pm

        from think_nb.turns.hooks import HookError

        while not isinstance(snap, pm.MontyComplete):
            if isinstance(snap, pm.AsyncNameLookupSnapshot):
                snap = await snap.resume()  # an undefined name: NameError in the code
                continue
            if isinstance(snap, pm.AsyncFutureSnapshot):
                raise ExecuteError("the code awaited something that is not a tool call; call tools directly")
            if snap.is_os_function:
                snap = await snap.resume_not_handled()  # no host files, environment or clock access
                continue
            if snap.function_name != "_think_call":
                snap = await snap.resume({"exception": NameError(f"name {snap.function_name!r} is not defined")})
                continue
            kind, name, args, kwargs = snap.args
            self.calls += 1
            if self.calls > self.runner.max_calls:
                raise ExecuteError(f"call limit exceeded: the code made more than {self.runner.max_calls} tool calls")
            label = name if kind == "tools" else f"state.{name}"
            approved = approved_call is not None and approved_call["tool"] == label and \
                approved_call["input"] == _jsonable(self._input(kind, name, args, kwargs))
            if approved_call is not None:
                approved_call = None  # the snapshot re-announces exactly the approved call first
                if not approved:
                    raise ExecuteError("the restored code did not reach the approved call; nothing ran")
            try:
                value = await self._call(kind, name, args, kwargs, approved, snap, call_id)
                result: dict = {"return_value": value}
            except (ApprovalRequired, ExecuteError, HookError):
                raise
            except ToolInputError as exc:
                result = {"exception": ValueError(str(exc))}
            except Exception as exc:  # noqa: BLE001 - a failing tool is an exception in the code, not the host
                raised = exc.original if isinstance(exc, ToolRaised) else exc
                result = {"exception": RuntimeError(f"{name}: {describe(raised)}")}
            snap = await snap.resume(result)
        return {"result": dump_output(snap.output), "stdout": self.output(), "calls": self.calls}

    def _input(self, kind: str, name: str, args: tuple, kwargs: dict) -> dict:
        if kind == "state":
            return {"op": name, "args": list(args), "kwargs": dict(kwargs)}
        tool = self.tools.get(name)
        names = list((tool.parameters.get("properties") or {}) if tool else {})
        if len(args) > len(names):
            raise ToolInputError(f"{name}() takes {len(names)} arguments ({', '.join(names)}), {len(args)} given")
        return {**dict(zip(names, args, strict=False)), **kwargs}

    async def _call(self, kind: str, name: str, args: tuple, kwargs: dict, approved: bool, snap: Any,
                    call_id: str | None) -> Any:
        if kind == "state":
            return await self._state(name, args, kwargs, approved, snap, call_id)
        tool = self.tools.get(name)
        if tool is None:
            raise LookupError(f"there is no tool named {name!r}")
        arguments = self._input(kind, name, args, kwargs)
        await self._gate(tool, name, arguments, approved, snap, call_id)
        return await self._hooked(tool, arguments, call_id)

    async def _hooked(self, tool: Tool, arguments: dict, call_id: str | None) -> Any:
        """Run an inner tool call, through the turn's `before_tool_call` / `after_tool_call` when
        there is a turn (`CURRENT_TOOL_RUNNER`), directly otherwise."""
        async def run(given: dict) -> Any:
            return await dump_output_later(await tool.invoke(given))

        runner = CURRENT_TOOL_RUNNER.get()
        if runner is None or call_id is None:
            return await run(arguments)
        return await runner.call_inner(call_id, f"{call_id}.{self.calls}", tool.name, arguments, run)

    async def _gate(self, tool: Tool, name: str, arguments: dict, approved: bool, snap: Any,
                    call_id: str | None) -> None:
        from think_nb.turns.tool_calls import needs_approval

        if approved or not tool.needs_approval:
            return
        await tool.prepare()
        try:
            arguments = tool.validate(arguments)  # the predicate sees what the tool would run with
        except ToolInputError:
            return  # invalid input never opens an approval: the run reports it (a ValueError in the code)
        if not await needs_approval(tool, arguments):
            return
        agent = self.runner.agent
        if agent is None or call_id is None:
            raise ExecuteError(f"the code called {name!r}, which needs approval, and this execute tool has no agent "
                               "to ask; call the tool directly")
        approval_id = new_id(PAUSE_APPROVAL)
        call = {"tool": name, "input": _jsonable(arguments)}
        agent.store.state.set(PAUSE_KEY + call_id, {
            "approval_id": approval_id, "snapshot": base64.b64encode(snap.dump()).decode(), "stdout": self.output(),
            "call": {"tool": name, "input": _jsonable(self._raw_input(snap))}, "calls": self.calls - 1})
        raise ApprovalRequired(approval_id, {"kind": "execute", "code": self.code, "call": call,
                                             "stdout": self.output()[-2000:]})

    def _raw_input(self, snap: Any) -> dict:
        kind, name, args, kwargs = snap.args
        return self._input(kind, name, args, kwargs)

    async def _state(self, op: str, args: tuple, kwargs: dict, approved: bool, snap: Any,
                     call_id: str | None) -> Any:
        import asyncio

        fs = self.runner._fs()
        params = {"read": ["path"], "write": ["path", "content"], "list": ["path"], "glob": ["pattern"],
                  "exists": ["path"], "delete": ["path", "recursive"]}
        if op not in params:
            raise AttributeError(f"state has no function {op!r}; use {', '.join(params)}")
        given = {**dict(zip(params[op], args, strict=False)), **kwargs}
        if op in ("write", "delete"):
            from think_nb.workspace.tools import delete_tool, write_tool

            approval = bool(getattr(self.runner.agent, "workspace_approval", False))
            tool = write_tool(fs, approval=approval) if op == "write" else delete_tool(fs, approval=approval)
            await self._gate(tool, f"state.{op}", given, approved, snap, call_id)
            return await self._hooked(tool, given, call_id)

        def sync() -> Any:
            if op == "glob":
                return ops.glob(fs, given.get("pattern", ""))
            path = given.get("path", "/")
            if op == "exists":
                return ops.exists(fs, path)
            if op == "list":
                return ops.list_paths(fs, path)
            return ops.read_text(fs, path)

        return await asyncio.to_thread(sync)


def _resumed_pause(store: Any, call_id: str, code: str) -> bool:
    """Whether `call_id`'s approval (for exactly this code) was given to one of its pauses."""
    decision = store.approvals.decision(call_id)
    return bool(decision and str(decision["approval_id"] or "").startswith(PAUSE_APPROVAL + "_")
                and store.approvals.granted(call_id, {"code": code}))


def _jsonable(value: Any) -> Any:
    return dump_output(value)


def _prelude(tools: Mapping[str, Tool]) -> str:
    """Sandbox code defining `tools`, `state` and the plain-function aliases, all routed to `_think_call`."""
    names = [n for n in tools if n.isidentifier() and not keyword.iskeyword(n)]
    methods = "".join(f"    def {n}(self, *args, **kwargs):\n        return _think_call('tools', {n!r}, args, kwargs)\n"
                      for n in names) or "    pass\n"
    state_ops = ("read", "write", "list", "glob", "exists", "delete")
    state = "".join(f"    def {n}(self, *args, **kwargs):\n        return _think_call('state', {n!r}, args, kwargs)\n"
                    for n in state_ops)
    plain = "".join(f"def {n}(*args, **kwargs):\n    return _think_call('tools', {n!r}, args, kwargs)\n"
                    for n in names if not hasattr(builtins, n) and n not in ("tools", "state"))
    return f"class _Tools:\n{methods}tools = _Tools()\nclass _State:\n{state}state = _State()\n{plain}"

