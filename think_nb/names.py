"""Which names of `Think` a subclass may reuse, declared in one place.

A subclass of `Think` is the user's class. It may:

- override the methods and hooks of `OVERRIDABLE` (Think's `getModel`, `beforeTurn`, ...);
- set the settings of `SETTINGS` in the class body or on an instance (`max_steps = 3`,
  `agent.default_model = "openai/gpt-4o-mini"`);
- define any other name it likes (`self.store`, `self.key`, `self.db`, a `workspace_tools` method):
  think_nb keeps its machinery in `think_nb.runtime.AgentRuntime`, not on the agent.

It may not redefine or assign Think's own methods and properties, `RESERVED` (`messages`,
`session`, `send`, ...): `Think.__init_subclass__` refuses such a class and `Think.__setattr__` such
an assignment, with `clash()`'s one line naming the clash and what to call yours instead. Of those,
only `ASSIGNABLE` ones may be assigned on an instance (`agent.workspace = fsspec.filesystem(...)`).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ASSIGNABLE", "OVERRIDABLE", "RESERVED", "SETTINGS", "clash", "hook_problem", "setting_problem"]

OVERRIDABLE = frozenset({
    "get_model", "get_system_prompt", "get_tools", "get_extensions", "get_skills", "get_scheduled_tasks",
    "configure_session", "before_turn", "before_step", "before_tool_call", "after_tool_call", "on_chunk",
    "on_step_finish", "on_chat_response", "on_chat_error", "on_chat_recovery", "repair_interrupted_tool_part",
    "configure_channels", "on_submission_status", "get_actions", "authorize_turn", "authorize_action",
    "classify_chat_error", "should_keep_recovering", "on_exhausted",
})
"""Methods and hooks a subclass overrides (Think's, in snake_case)."""

SETTINGS = frozenset({
    "max_steps", "hydration_limit", "message_concurrency", "chat_stream_stall_timeout", "chat_recovery",
    "chat_recovery_max_attempts", "chat_recovery_max_recovery_work", "chat_recovery_no_progress_timeout",
    "include_mcp_tools", "wait_for_mcp_connections", "include_extension_tools",
    "extension_timeout", "extension_hook_timeout", "extension_allowed_hosts", "extension_allow_private",
    "schedule_clock", "default_model", "include_workspace_tools", "workspace_approval",
    "include_kernel_tools", "send_reasoning", "action_ledger_pending_retry_lease", "context_overflow",
    "media_eviction",
})
"""Class attributes a subclass or an instance sets (read at each use)."""

RESERVED: dict[str, str] = {
    # identity and state
    "name": "the agent's name", "db_path": "the agent's SQLite file", "parent": "the agent that made this sub-agent",
    "messages": "the transcript", "session": "the agent's memory", "session_id": "the active session's id",
    "workspace": "the agent's file system", "is_running": "whether a turn runs",
    "recovery_task": "the task recovering a dead kernel's turns", "submissions_task": "the submission drain",
    "schedules_task": "the scheduled-task runner",
    # messages and config
    "get_messages": "a method", "clear_messages": "a method", "export": "a method", "import_messages": "a method",
    "configure": "a method", "get_config": "a method", "get_branches": "a method", "switch_branch": "a method",
    "get_on_start_degradations": "a method",
    # turns
    "submit": "a method", "send": "a method", "run": "a method", "save_messages": "a method",
    "add_messages": "a method", "run_turn": "a method", "stash": "a method",
    "continue_last_turn": "a method", "regenerate": "a method", "step": "a method", "abort_request": "a method",
    "abort_all_requests": "a method", "has_pending_interaction": "a method", "wait_until_stable": "a method",
    "pending_approvals": "a method", "approve": "a method", "deny": "a method", "add_tool_output": "a method",
    "undo": "a method", "pending_executions": "a method", "approve_execution": "a method",
    "reject_execution": "a method",
    # channels and notices
    "active_channel": "the running turn's channel", "active_turn_metadata": "the latest turn's metadata",
    "deliver_notice": "a method",
    # observing
    "trace": "a method", "recording": "a method", "replay": "a method", "turns": "a method",
    "fork": "a method", "compare": "a method",
    # sub-agents
    "sub_agent": "a method", "chat": "a method", "cancel_chat": "a method", "delegate": "a method",
    "has_sub_agent": "a method", "list_sub_agents": "a method", "abort_sub_agent": "a method",
    "delete_sub_agent": "a method", "parent_agent": "a method", "agent_tool_runs": "a method",
    # memory
    "context_blocks": "a method", "messages_df": "a method", "tool_calls_df": "a method", "usage_df": "a method",
    "search": "a method", "compact": "a method", "sessions": "a method", "create_session": "a method",
    "switch_session": "a method", "rename_session": "a method", "fork_session": "a method",
    "delete_session": "a method", "list_sessions": "a method",
    # durable work and schedules
    "submit_messages": "a method", "inspect_submission": "a method", "list_submissions": "a method",
    "cancel_submission": "a method", "delete_submissions": "a method", "delete_submission": "a method",
    "schedule": "a method", "schedule_every": "a method", "cancel_schedule": "a method", "get_schedule": "a method",
    "get_schedules": "a method",
    # batch runs (think_nb.batch)
    "map": "a method", "run_map": "a method", "runs": "a method", "cancel_run": "a method",
    "compare_runs": "a method",
    # MCP, extensions, workspace, views
    "add_mcp_server": "a method", "remove_mcp_server": "a method", "mcp_servers": "a method",
    "load_extension": "a method", "unload_extension": "a method", "extensions": "a method", "shutdown": "a method",
    "workspace_df": "a method", "panel": "a method", "marimo_chat": "a method",
}
"""Think's own methods and properties: `{name: what it is}`. A subclass may not redefine them."""

ASSIGNABLE = frozenset({"workspace"})
"""Reserved names an instance may assign (a property with a setter that checks the value)."""

_SUGGEST = {"session": "http_session", "messages": "my_messages", "name": "label", "run": "run_job",
            "search": "search_docs", "workspace": "files", "chat": "chat_with", "schedule": "timetable"}


def clash(attr: str, where: str) -> str:
    """The one-line error for reusing Think's name `attr` (`where`: the class or the assignment)."""
    what = RESERVED[attr]
    kind = f"a name of Think's ({what})" if what != "a method" else f"a method of Think's (agent.{attr}(...))"
    return (f"{where}: {attr!r} is {kind}, so the agent cannot hold yours under that name; call yours "
            f"something else, e.g. {_SUGGEST.get(attr, 'my_' + attr)!r} (see think_nb.names).")


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _mcp_wait(value: object) -> bool:
    """`wait_for_mcp_connections`: a bool, or seconds in [0, 600] bare or as `{"timeout": s}`."""
    if isinstance(value, bool):
        return True
    if isinstance(value, dict):
        return set(value) <= {"timeout"} and _seconds_up_to_600(value.get("timeout", 10))
    return _seconds_up_to_600(value)


def _seconds_up_to_600(value: object) -> bool:
    return _number(value) and 0 <= value <= 600  # type: ignore[operator]


def _strings(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


_SETTING_RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "max_steps": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "a whole number >= 1, e.g. 10"),
    "hydration_limit": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0),
                        "a whole number of messages >= 0, or None for the whole history"),
    "chat_stream_stall_timeout": (lambda v: v is None or _positive(v),
                                  "seconds (a number > 0), or None for no stall timeout"),
    "chat_recovery": (lambda v: isinstance(v, bool), "True or False"),
    "chat_recovery_max_attempts": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                                   "a whole number >= 0"),
    "chat_recovery_max_recovery_work": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                                        "a whole number of parts >= 0"),
    "chat_recovery_no_progress_timeout": (lambda v: v is None or _positive(v),
                                          "seconds (a number > 0), or None for no limit"),
    "include_mcp_tools": (lambda v: isinstance(v, bool), "True or False"),
    "send_reasoning": (lambda v: isinstance(v, bool), "True or False"),
    "include_extension_tools": (lambda v: isinstance(v, bool), "True or False"),
    "workspace_approval": (lambda v: isinstance(v, bool), "True or False"),
    "include_workspace_tools": (lambda v: v is None or isinstance(v, bool),
                                "True, False, or None (all but the embedded model)"),
    "include_kernel_tools": (lambda v: isinstance(v, bool) or v in ("ask", "allow", "off"),
                             'True, False, "ask", "allow" or "off"'),
    "extension_timeout": (_positive, "seconds, a number > 0"),
    "extension_hook_timeout": (_positive, "seconds, a number > 0"),
    "extension_allowed_hosts": (_strings, 'a list of host names, e.g. ["api.example.com"]'),
    "extension_allow_private": (_strings, "a list of host names"),
    "wait_for_mcp_connections": (_mcp_wait,
                                 ("True (10 s), False, seconds up to 600, or {'timeout': seconds up to 600}; "
                                  "Think's {'timeout': 5000} is milliseconds: write {'timeout': 5} or 5")),
    "action_ledger_pending_retry_lease": (lambda v: v is False or (_number(v) and v >= 0),  # type: ignore[operator]
                                          "seconds (a number >= 0), or False to never run a pending call again"),
    "schedule_clock": (lambda v: v is None or callable(getattr(v, "now", None)),
                       "None, or a clock with a now() method (e.g. a datetime-like class)"),
}
"""What each setting takes (the others, `default_model` and `message_concurrency`, are checked where
they are read)."""


def setting_problem(attr: str, value: object, where: str) -> str | None:
    """The one-line refusal for setting `attr` to `value` (at `where`, e.g. "class Calc"), or None
    when the value is one the setting takes. A descriptor (a property computing it) is not checked."""
    if attr == "context_overflow" and not hasattr(type(value), "__get__"):
        from think_nb.turns.overflow import problem  # its own one line names the field that is wrong

        return problem(value, where)
    rule = _SETTING_RULES.get(attr)
    if rule is None or hasattr(type(value), "__get__"):
        return None
    ok, takes = rule
    try:
        good = ok(value)
    except Exception:  # noqa: BLE001 - a value whose comparison raises is not one it takes
        good = False
    return None if good else f"{where}: {attr} = {value!r} is not a value it takes; {attr} is {takes}."


def hook_problem(attr: str, value: object, where: str) -> str | None:
    """The one-line refusal for a hook of `OVERRIDABLE` given as a value that cannot be called
    (`get_tools = [add]`), or None."""
    if attr not in OVERRIDABLE or callable(value) or isinstance(value, (staticmethod, classmethod, property)):
        return None
    return (f"{where}: {attr} = {_short(value)} is a value, but {attr} is a method Think calls; define it, "
            f"e.g. `def {attr}(self): return {_short(value)}`.")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
