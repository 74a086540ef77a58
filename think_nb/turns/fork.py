"""Time travel: fork a stored turn at any hook site, change what it saw, run the rest (issue 32).

    stepper = agent.fork(3, at="after_tool_call:call_1_0")   # or a request id; a Stepper paused there
    stepper.paused.ctx.output = 0                            # edit anything step mode can edit
    result = stepper.run()                                   # the rest runs live
    agent.compare(result.message["id"], original_id)         # think_nb.compare

Everything before the fork point is reproduced from the turn's record (`turn_record.py`): the
history is the path to the message the turn answered, each earlier step's model output is played
back exactly (no model call), each earlier tool call gets its recorded result (no tool run). After
it the turn runs live on the agent's model, on `model=` (a model spec, or `"recorded"`: the
record's own outputs, step after step), with tools run live, or with `tools="recorded"`: a call
whose tool name and arguments match a recorded call not reused yet gets that call's result
(`stepper.reused` lists them). Hooks run again everywhere (they are the code being looked at).

The fork is a new branch: its reply is a sibling of the original (stored as a regenerate is, with
`metadata.fork = {of, request, at, edited, reused, label}`); the original message and trace are
never changed. A gated tool that runs live after the fork point asks for approval again (the gate
is before the recorded-result check). A turn that cannot be reproduced is refused in one line
naming why (`UserError`): recovered after a kill, from another session, run on an older version of
the class, compacted since, or flagged by its record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from think_nb.errors import UserError
from think_nb.turns import turn_record
from think_nb.turns.stepper import HookEvent, Stepper

SITE_KINDS = ("before_turn", "before_step", "before_tool_call", "after_tool_call", "on_step_finish",
              "on_chat_response")
TOOLS_MODES = ("live", "recorded")


@dataclass
class ForkPlan:
    """What a forked turn reproduces and from where it runs live (the runner and `StepTools` ask it).

    Attributes:
        request_id: the original turn. site: the fork point. parent_id: the message it answered.
        message_id: the original reply. continuation: the original was a continuation.
        live_from: the first step whose model call is live. prefix: call ids reproduced from the record.
        reused: call ids after the fork point given a recorded result (`tools="recorded"`).
        edited: what was changed at the fork point ("result", "system prompt", ...).
    """

    request_id: str
    site: str
    record: dict
    reply: dict | None
    parent_id: str | None
    message_id: str | None
    continuation: bool
    live_model: Any = None
    tools: str = "live"
    live_from: int = 0
    prefix: set[str] = field(default_factory=set)
    reused: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    reached: bool = False
    _results: dict = field(default_factory=dict)
    _pool: list[tuple[str, str, Any]] = field(default_factory=list)  # (call id, name, arguments) not reused yet
    _script: Any = None

    def step_model(self, step: int) -> Any:
        """The `ModelConfig` playing step `step` back from the record, or None (the step is live)."""
        recorded = self.live_model == "recorded"
        if step >= len(self.record["steps"]) or (step >= self.live_from and not recorded):
            return None if not recorded else self._script_model()  # its script is used up: says so
        return self._script_model()

    def _script_model(self) -> Any:
        from think_nb.models.resolve import resolve_model
        from think_nb.testing import ScriptedModel

        if self._script is None:  # one script per fork, consumed step by step
            self._script = ScriptedModel(turn_record.script_steps(self.record, self.reply), record=False)
        return resolve_model(self._script.model)

    def recorded_outcome(self, call_id: str, name: str, arguments: Any) -> tuple[tuple[bool, Any, str | None],
                                                                               list[dict]] | None:
        """`((success, output, error), chunks it emitted while it ran)` recorded for a call before the
        fork point, or after it with `tools="recorded"` when a recorded call of the same name and
        arguments is left; else None."""
        if call_id in self.prefix and call_id in self._results:
            self._take(call_id)
            return self._results[call_id], self._emitted(call_id)
        if self.tools != "recorded":
            return None
        for n, (recorded_id, recorded_name, recorded_args) in enumerate(self._pool):
            if recorded_name == name and _same(recorded_args, arguments) and recorded_id in self._results:
                del self._pool[n]
                self.reused.append(recorded_id)
                return self._results[recorded_id], self._emitted(recorded_id)
        return None

    def _emitted(self, call_id: str) -> list[dict]:
        return [dict(chunk) for chunk in self.record.get("emitted", {}).get(call_id, [])]

    def _take(self, call_id: str) -> None:
        self._pool = [entry for entry in self._pool if entry[0] != call_id]

    def label(self) -> str:
        """`forked at after_tool_call(add) — result edited` (the panel's versions switcher shows it)."""
        kind, _, arg = self.site.partition(":")
        where = f"{kind}({self._names.get(arg, arg)})" if kind.endswith("tool_call") else self.site
        return f"forked at {where}" + (f" — {', '.join(self.edited)} edited" if self.edited else "")

    @property
    def _names(self) -> dict[str, str]:
        return {i[1]: i[2] for s in self.record["steps"] for i in s["out"] if i[0] == "c"}

    def metadata(self) -> dict[str, Any]:
        """The fork's reply's `metadata.fork`."""
        return {"of": self.message_id, "request": self.request_id, "at": self.site, "edited": list(self.edited),
                "reused": list(self.reused), "label": self.label()}


def plan(runtime: Any, turn: Any, at: str, model: Any = None, tools: str = "live") -> ForkPlan:
    """Check that turn `turn` (a request id, or an index into `agent.turns()`) can be forked at site
    `at` and say what its fork reproduces. Raises `UserError` (one line naming why) otherwise."""
    store = runtime.store
    request_id = _request_id(store, turn)
    row = store.turn_log.get(request_id)
    if row is None:
        raise UserError(f"No turn {request_id!r} in this agent's turn log; see agent.turns().")
    if str(row.get("trigger") or "").startswith("recovery") or row.get("status") == "interrupted":
        raise UserError(f"Cannot fork turn {request_id!r}: it was recovered after its kernel was killed, so no "
                        "record holds what its hooks saw; fork a turn that ran to its end.")
    found = _load(store, request_id)
    if found is None:
        raise UserError(f"Cannot fork turn {request_id!r}: it has no record (it ran before think_nb kept turn "
                        "records, or its conversation was cleared).")
    damage = damaged(found.record)
    if damage:
        raise UserError(f"Cannot fork turn {request_id!r}: its stored record is damaged ({damage}); run the turn "
                        "again instead.")
    if found.conversation_key != store.messages.key:
        raise UserError(f"Cannot fork turn {request_id!r}: it belongs to another session "
                        f"({_session_of(found.conversation_key)!r}); agent.switch_session() to it first.")
    version = turn_record.class_version(type(runtime.agent))
    if found.class_version != version:
        raise UserError(f"Cannot fork turn {request_id!r}: its hooks ran on an older version of "
                        f"{type(runtime.agent).__name__} (the class's code changed since), so the fork would not "
                        "reproduce it; run the turn again instead.")
    record = found.record
    for flag in record.get("flags", []):
        raise UserError(f"Cannot fork turn {request_id!r}: {turn_record.FLAG_TEXT.get(flag, flag)}.")
    if len(store.compactions().load()) > int(record.get("compactions") or 0):
        raise UserError(f"Cannot fork turn {request_id!r}: the conversation was compacted after it, so its history "
                        "is no longer what the turn saw.")
    conversation = runtime.conversation
    reply = conversation.get(found.message_id) if found.message_id else None
    if (found.message_id and reply is None) or (found.parent_id and conversation.get(found.parent_id) is None):
        raise UserError(f"Cannot fork turn {request_id!r}: its messages were deleted.")
    if at not in sites(record):
        raise UserError(f"Turn {request_id!r} has no hook site {at!r}; its sites: {', '.join(sites(record))}.")
    if tools not in TOOLS_MODES:
        raise UserError(f"fork(tools={tools!r}): use 'live' (run the tools after the fork point) or 'recorded' "
                        "(reuse a recorded result when the call's name and arguments match).")
    if model is not None and model != "recorded":
        from think_nb.models.resolve import resolve_model
        from think_nb.testing import FunctionModel, ScriptedModel

        if isinstance(model, (ScriptedModel, FunctionModel)):
            model = model.model

        resolve_model(model)  # a UserError naming what a model spec is
    out = ForkPlan(request_id, at, record, reply, found.parent_id, found.message_id,
                   bool(record.get("continuation")), live_model=model, tools=tools)
    out.live_from, out.prefix = _split(record, at)
    out._results = turn_record.tool_results(reply)
    out._pool = [(i[1], i[2], _arguments(i[3])) for s in record["steps"] for i in s["out"] if i[0] == "c"]
    return out


def damaged(record: Any) -> str | None:
    """What makes a stored record (read back from SQLite, so untrusted) unusable for a fork, or None:
    every field `plan`, `sites` and `_split` read must have the shape `turn_record` writes."""
    if not isinstance(record, dict):
        return "not an object"
    steps, fired, flags = record.get("steps"), record.get("sites", []), record.get("flags", [])
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        return "steps"
    for step in steps:
        calls, out = step.get("calls"), step.get("out")
        if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls):
            return "a step's calls"
        if not isinstance(out, list) or not all(_item_ok(i) for i in out):
            return "a step's output"
        if not isinstance(step.get("usage") or {}, dict):
            return "a step's usage"
    if not isinstance(fired, list) or not all(isinstance(s, str) for s in fired):
        return "sites"
    if any(s.partition(":")[0] in ("before_step", "on_step_finish") and not s.partition(":")[2].isdigit()
           for s in fired):
        return "a step site"
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        return "flags"
    compactions = record.get("compactions") or 0
    if not isinstance(compactions, int) or isinstance(compactions, bool):
        return "compactions"
    emitted = record.get("emitted", {})
    if not isinstance(emitted, dict) or not all(isinstance(v, list) and all(isinstance(c, dict) for c in v)
                                                for v in emitted.values()):
        return "emitted chunks"
    return None


def _item_ok(item: Any) -> bool:
    """An output item as `turn_record.Capture.step` writes it (see turn_record's docstring)."""
    if not isinstance(item, list) or len(item) < 2:
        return False
    if item[0] in ("t", "r"):
        return isinstance(item[1], list) and all(isinstance(n, int) and not isinstance(n, bool) for n in item[1])
    if item[0] in ("T", "R"):
        return isinstance(item[1], list) and all(isinstance(d, str) for d in item[1])
    if item[0] == "c":
        return (len(item) == 4 and isinstance(item[1], str) and isinstance(item[2], (str, type(None)))
                and isinstance(item[3], list) and all(isinstance(p, str) for p in item[3]))
    return False


def _load(store: Any, request_id: str) -> Any:
    try:
        return store.records.load(request_id)
    except ValueError:  # not JSON: edited by hand, or torn
        raise UserError(f"Cannot fork turn {request_id!r}: its stored record is damaged (not JSON); run the turn "
                        "again instead.") from None


def sites(record: dict) -> list[str]:
    """The record's fork points in turn order (`before_step:<n>` for every step, fired or not)."""
    fired = [s for s in record.get("sites", []) if not s.startswith("before_step:")]
    out: list[str] = []
    step_of = {call: n for n, s in enumerate(record["steps"]) for call in s["calls"]}
    started: set[int] = set()
    for site in fired:
        kind, _, arg = site.partition(":")
        step = int(arg) if kind == "on_step_finish" else step_of.get(arg) if kind.endswith("tool_call") else None
        if step is not None and step not in started:
            out.append(f"before_step:{step}")
            started.add(step)
        if kind == "on_chat_response":
            out.extend(f"before_step:{n}" for n in range(len(record["steps"])) if n not in started)
            started.update(range(len(record["steps"])))
        out.append(site)
    return out


def _split(record: dict, site: str) -> tuple[int, set[str]]:
    """`(live_from, prefix call ids)` for a fork at `site` (see the module docstring)."""
    calls = [s["calls"] for s in record["steps"]]
    kind, _, arg = site.partition(":")
    if kind == "before_turn":
        return 0, set()
    if kind == "on_chat_response":
        return len(calls), {c for step in calls for c in step}
    if kind in ("before_step", "on_step_finish"):
        n = int(arg) + (kind == "on_step_finish")
        return n, {c for step in calls[:n] for c in step}
    for n, step in enumerate(calls):
        if arg in step:
            i = step.index(arg) + (kind == "after_tool_call")
            return n + 1, {c for s in calls[:n] for c in s} | set(step[:i])
    return 0, set()


class ForkStepper(Stepper):
    """The step-mode stepper of a forked turn: it passes the hook sites before the fork point
    without pausing, pauses at it (`paused`), then pauses as step mode does. Create with `agent.fork`."""

    def __init__(self, engine: Any, fork: ForkPlan) -> None:
        self.fork = fork
        super().__init__(engine, None)

    @property
    def paused(self) -> HookEvent | None:
        """The pause the stepper waits at (the fork point after `agent.fork`), or None."""
        return self._current

    @property
    def reused(self) -> list[str]:
        """Call ids after the fork point that got a recorded result (`tools="recorded"`)."""
        return list(self.fork.reused)

    @property
    def label(self) -> str:
        return self.fork.label()

    def pauses(self, hook: str) -> bool:
        return True  # `before_step` too: it is a fork point

    async def _start(self, message: Any) -> Any:
        from think_nb.messages import new_id

        self._queue: list[HookEvent] = []
        self._waiter = None
        self._request_id = new_id("req")
        self.engine.steppers[self._request_id] = self
        return self.engine.start([], self._request_id, trigger="fork", continuation=self.fork.continuation,
                                 fork=self.fork)

    async def _pause(self, hook: str, ctx: Any, step: int | None, tool: str | None) -> Any:
        if self.fork.reached:
            if hook == "before_step":  # a fork point only: step mode does not pause there
                return None
            return await super()._pause(hook, ctx, step, tool)
        if turn_record.site_name(hook, step, ctx) != self.fork.site:
            return None
        self.fork.reached = True
        before = _snapshot(ctx)
        decision = await super()._pause(hook, ctx, step, tool)
        self.fork.edited.extend(_edits(before, _snapshot(ctx), decision))
        return decision


def start(runtime: Any, turn: Any, at: str, model: Any = None, tools: str = "live") -> ForkStepper:
    """`agent.fork`: plan the fork, start its turn and run it to the fork point. Raises `UserError`
    from inside this agent's running turn (it would wait for that turn)."""
    runtime.engine.refuse_nested("fork")
    stepper = ForkStepper(runtime.engine, plan(runtime, turn, at, model, tools))
    stepper.next()
    return stepper


EDIT_NAMES = {"system": "system prompt", "messages": "messages", "tools": "tools", "model": "model",
              "input": "arguments", "output": "result", "success": "result", "error": "result",
              "active_tools": "tools"}


def _snapshot(ctx: Any) -> dict[str, Any]:
    if not is_dataclass(ctx):
        return {}
    out = {}
    for f in fields(ctx):
        value = getattr(ctx, f.name)
        if f.name in ("tools",) and isinstance(value, dict):
            value = sorted(value)
        try:
            out[f.name] = json.loads(json.dumps(value, default=repr))
        except (TypeError, ValueError):
            out[f.name] = repr(value)
    return out


def _edits(before: dict, after: dict, decision: Any) -> list[str]:
    names: list[str] = []
    for key in before:
        name = EDIT_NAMES.get(key)
        if name and before[key] != after.get(key) and name not in names:
            names.append(name)
    if decision is not None and "result" not in names:
        names.append("result")  # substitute / block at before_tool_call
    return names


def _request_id(store: Any, turn: Any) -> str:
    if isinstance(turn, bool) or not isinstance(turn, (int, str)):
        raise UserError(f"fork(turn={turn!r}): pass a request id or an index into agent.turns().")
    if isinstance(turn, str):
        return turn
    log = store.turn_log.read()
    try:
        return str(log[turn]["request_id"])
    except IndexError:
        raise UserError(f"fork(turn={turn}): agent.turns() has {len(log)} turns.") from None


def _session_of(key: str) -> str:
    return key.split("#", 1)[1] if "#" in key else ""


def _arguments(pieces: list[str]) -> Any:
    try:
        return json.loads("".join(pieces) or "{}")
    except ValueError:
        return "".join(pieces)


def _same(a: Any, b: Any) -> bool:
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):
        return a == b


def history(runtime: Any) -> Any:
    """`%think history AGENT`: the turn log as a DataFrame with each turn's fork points: columns
    `turn` (its index in `agent.turns()`), `request_id`, `trigger`, `status`, `sites` (the hook
    sites `agent.fork` takes), `forkable` (True, or the one-line reason it is not)."""
    import pandas as pd

    rows = []
    for n, turn in enumerate(runtime.store.turn_log.read()):
        try:
            found = _load(runtime.store, turn["request_id"])
            plan(runtime, turn["request_id"], "before_turn")
            why: Any = True
        except UserError as exc:
            found, why = None, str(exc).split(": ", 1)[-1]
        whole = found is not None and not damaged(found.record)
        rows.append({"turn": n, "request_id": turn["request_id"], "trigger": turn["trigger"],
                     "status": turn["status"], "sites": sites(found.record) if whole else [], "forkable": why})
    return pd.DataFrame(rows, columns=["turn", "request_id", "trigger", "status", "sites", "forkable"])
