"""The user's class belongs to the user: any name that is not Think's may be defined on a subclass
or an instance, and the agent keeps working (turns, approvals, a panel, a restart); Think's own
names (`think_nb.names.RESERVED`) are refused in one line at the class statement or the assignment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agents import add
from think_nb import Think, ToolCallDecision, names, tool
from think_nb.errors import UserError
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S

COMMON_NAMES = ["store", "key", "db", "config", "client", "cache", "logger", "data", "history", "engine",
                "conversation", "tools", "model", "state", "memory", "queue", "listeners", "runtime", "hub",
                "recorder", "scheduler", "submissions", "mcp", "children", "settings", "files", "log", "prompt",
                "vector_store", "api_key", "tracer", "connection", "sandbox", "tasks", "_engine", "_session",
                "_store", "_mcp", "_runtime", "_workspace"]
"""Names a user's class plausibly holds, including every name the machinery itself used to keep on
the agent (`store`, `conversation`, `key`, `_engine`, ...)."""

METHOD_NAMES = ["workspace_tools", "subscribe", "overrides", "observes", "session_ready", "mcp_tools",
                "extension_tools", "extension_hook", "client_tool_specs", "client_tool_names", "set_client_tools",
                "streaming_turns", "replay_stream", "pending_turns", "last_terminal", "has_listeners", "recovering",
                "recover_stalled_turn", "mcp_ready", "mcp_state", "debouncing_turns", "session_configured"]
"""Method names a user may define: the engine's and the hub's needs used to be public on Think."""


@tool(needs_approval=True)
def transfer(amount: float) -> str:
    """Transfer money."""
    return f"sent {amount}"


def _user_class(script: S) -> type[Think]:
    """A subclass that defines every common name as a class attribute and a method, and sets the
    attribute names again on the instance in `__init__` (before and after `super().__init__`)."""
    body: dict[str, Any] = {name: f"class-{name}" for name in COMMON_NAMES}
    body |= {name: (lambda self, _n=name: f"mine:{_n}") for name in METHOD_NAMES}

    def __init__(self: Think, name: str, *, db: Path) -> None:
        self.store = {"vectors": [1, 2, 3]}  # before super().__init__: a plain attribute
        super(cls, self).__init__(name, db=db)
        for attr in COMMON_NAMES:
            setattr(self, attr, f"instance-{attr}")
        self.store = {"vectors": [1, 2, 3]}
        self.key = "sk-user-api-key"

    body |= {
        "__init__": __init__,
        "get_model": lambda self: script.model,
        "get_tools": lambda self: [add, transfer],
        "include_workspace_tools": False,
        "before_tool_call": lambda self, ctx: ToolCallDecision.allow(),
    }
    cls = type("Mine", (Think,), body)
    return cls


async def test_a_subclass_with_common_names_runs_turns_approvals_a_panel_and_a_restart(tmp_path: Path) -> None:
    script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("42.")],
                [S.tool_call("transfer", {"amount": 5})], [S.text("Sent.")]])
    cls = _user_class(script)
    agent = cls("names", db=tmp_path / "n.sqlite")
    panel = ChatPanel(agent)  # a view on it, as %think shows

    first = await agent.send("2+40?")
    assert first.status == "completed", first.error
    result = await agent.send("send 5")
    assert agent.pending_approvals()[0]["tool_name"] == "transfer"
    task = agent.approve(agent.pending_approvals()[0]["tool_call_id"])
    assert task is not None
    done = await task
    assert (result.status, done.status) == ("completed", "completed"), (result.error, done.error)
    parts = [p for m in agent.messages for p in m["parts"] if p["type"].startswith("tool-")]
    assert [(p["type"], p["state"], p.get("output")) for p in parts] == [
        ("tool-add", "output-available", 42.0), ("tool-transfer", "output-available", "sent 5.0")]
    assert [m["role"] for m in panel.messages] == [m["role"] for m in agent.messages]

    # the user's values are untouched by the turns
    assert agent.store == {"vectors": [1, 2, 3]} and agent.key == "sk-user-api-key"
    assert all(getattr(agent, n) == f"instance-{n}" for n in COMMON_NAMES if n not in ("store", "key"))
    assert all(getattr(agent, n)() == f"mine:{n}" for n in METHOD_NAMES)

    panel.close()
    restarted = cls("names", db=tmp_path / "n.sqlite")  # a new kernel: the same class, the same file
    assert restarted.messages == agent.messages
    assert restarted.store == {"vectors": [1, 2, 3]}


@pytest.mark.parametrize("attr", sorted(names.RESERVED))
def test_a_subclass_redefining_a_reserved_name_is_refused_at_the_class_statement(attr: str) -> None:
    with pytest.raises(UserError) as caught:
        type("Clash", (Think,), {attr: "mine"})
    message = str(caught.value)
    assert "\n" not in message
    assert f"class Clash defines {attr!r}" in message and "call yours something else, e.g. " in message


@pytest.mark.parametrize("attr", sorted(set(names.RESERVED) - names.ASSIGNABLE))
def test_assigning_a_reserved_name_on_an_instance_is_refused_and_changes_nothing(attr: str, tmp_path: Path) -> None:
    agent = Think("assign", db=tmp_path / "a.sqlite")
    before = getattr(agent, attr)
    with pytest.raises(UserError, match=re.escape(f"Think(...).{attr} = ...: {attr!r} is ")):
        setattr(agent, attr, object())
    after = getattr(agent, attr)
    assert after == before or (callable(before) and callable(after))


def test_the_two_mistakes_of_the_issue_say_whose_name_it_is(tmp_path: Path) -> None:
    agent = Think("mistakes", db=tmp_path / "m.sqlite")
    with pytest.raises(UserError) as caught:
        agent.session = object()  # e.g. requests.Session()
    assert str(caught.value) == ("Think(...).session = ...: 'session' is a name of Think's (the agent's memory), so "
                                 "the agent cannot hold yours under that name; call yours something else, e.g. "
                                 "'http_session' (see think_nb.names).")
    with pytest.raises(UserError, match=r"'messages' is a name of Think's \(the transcript\).*'my_messages'"):
        agent.messages = []


def test_overridables_and_settings_may_be_redefined_and_set(tmp_path: Path) -> None:
    class Tuned(Think):
        max_steps = 3
        default_model = "think-scripted/none"

        def get_system_prompt(self) -> str:
            return "Be brief."

    agent = Tuned("tuned", db=tmp_path / "t.sqlite")
    agent.max_steps = 5
    agent.workspace_approval = True
    assert (agent.max_steps, agent.workspace_approval, agent.get_system_prompt()) == (5, True, "Be brief.")


def test_every_public_name_of_think_is_declared_once() -> None:
    """`think_nb.names` is the one list: each public name on Think is reserved, overridable or a
    setting, exactly one of them, and nothing is declared that Think does not have."""
    public = {n for n in dir(Think) if not n.startswith("_")}
    declared = [set(names.RESERVED), set(names.OVERRIDABLE), set(names.SETTINGS)]
    assert public == set().union(*declared)
    assert sum(len(d) for d in declared) == len(public)


def test_a_subclass_init_that_forgets_super_says_so(tmp_path: Path) -> None:
    class Forgot(Think):
        def __init__(self, name: str) -> None:
            self.label = name

    agent = Forgot("x")
    with pytest.raises(UserError, match=r"Forgot was not set up: its __init__ must call super\(\).__init__"):
        agent.messages  # noqa: B018
    assert repr(agent) == "<Forgot (not set up: its __init__ must call super().__init__(name))>"  # a repr never raises


@pytest.mark.parametrize("attr", ["session", "messages", "name", "run"])
def test_a_mixin_before_think_may_not_shadow_a_reserved_name_either(attr: str) -> None:
    mixin = type("HttpMixin", (), {attr: "mine"})
    with pytest.raises(UserError, match=re.escape(f"class Clash defines {attr!r} (from HttpMixin): {attr!r} is ")):
        type("Clash", (mixin, Think), {})
    type("Fine", (Think, mixin), {})  # after Think in the MRO it shadows nothing: Think's own names win


def test_a_class_whose_init_takes_only_name_works_with_the_magic_and_as_a_sub_agent(tmp_path: Path,
                                                                                      monkeypatch: Any) -> None:
    """`%think Calc` makes `Calc("default")` and `sub_agent(Child, "c")` makes `Child("c")`: a
    user's `__init__(self, name)` is enough (both passed `db=` it did not take: TypeError)."""
    from IPython.testing.globalipapp import get_ipython

    from think_nb.frontends.magic.core import SHOWN

    monkeypatch.chdir(tmp_path)

    class Calc(Think):
        def __init__(self, name: str = "default") -> None:
            super().__init__(name)
            self.store = {}

    class Child(Think):
        def __init__(self, name: str) -> None:
            super().__init__(name)
            self.key = "sk-child"

    class NeedsKey(Think):
        def __init__(self, name: str, api_key: str) -> None:
            super().__init__(name)

    shell = get_ipython()
    shell.run_line_magic("load_ext", "think_nb")
    shell.user_ns.update(Calc=Calc, NeedsKey=NeedsKey)
    try:
        from think_nb.frontends.magic.core import ThinkMagics  # how `%think Calc` finds its agent

        magics = ThinkMagics(shell)
        agent = magics.resolve_agent("Calc", "default", None)
        assert isinstance(agent, Calc) and agent.name == "default" and agent.store == {}
        with pytest.raises(UserError, match=r"cannot make the agent as NeedsKey\('default'\): missing a required "
                                            r"argument: 'api_key'; .*agent = NeedsKey\(\.\.\.\)"):
            magics.resolve_agent("NeedsKey", "default", None)
        child = agent.sub_agent(Child, "c")
        assert child.key == "sk-child" and child.db_path == agent.db_path and child.parent is agent
        assert agent.sub_agent(Child, "c") is child
        with pytest.raises(UserError, match=r"cannot make the agent as NeedsKey\('n'\)"):
            agent.sub_agent(NeedsKey, "n")
    finally:
        for k in [k for k in SHOWN if k[0] in (Calc, NeedsKey)]:
            SHOWN.pop(k)


@pytest.mark.parametrize(("attr", "value"), [
    ("max_steps", None), ("max_steps", 0), ("max_steps", "10"), ("max_steps", True),
    ("chat_stream_stall_timeout", "5"), ("hydration_limit", "x"), ("schedule_clock", "utc"),
    ("include_workspace_tools", "no"), ("chat_recovery", "yes"), ("include_kernel_tools", "sometimes"),
    ("extension_allowed_hosts", "api.example.com"), ("extension_timeout", -1),
    ("wait_for_mcp_connections", {"timeout": 5000}), ("wait_for_mcp_connections", 5000),
    ("wait_for_mcp_connections", {"timeout": "5"}), ("wait_for_mcp_connections", {"timeout_ms": 5000}),
])
def test_a_setting_given_a_value_it_does_not_take_is_refused_in_the_class_and_on_the_instance(
        attr: str, value: Any, tmp_path: Path) -> None:
    """Wrong setting values were accepted and failed at the turn as a think_nb internal error (or a
    raw TypeError / ValueError / AttributeError), or were silently taken as truthy."""
    with pytest.raises(UserError, match=rf"^class Bad: {attr} = .* is not a value it takes; {attr} is "):
        type("Bad", (Think,), {attr: value})
    agent = Think("fine", db=tmp_path / "f.sqlite")
    before = getattr(agent, attr)
    with pytest.raises(UserError, match=rf"^Think\(\.\.\.\): {attr} = .* is not a value it takes"):
        setattr(agent, attr, value)
    assert getattr(agent, attr) == before


def test_think_millisecond_mcp_wait_is_refused_in_one_line_naming_both_forms() -> None:
    """Think's docs write `waitForMcpConnections: {timeout: 5000}` (milliseconds); here a timeout
    is seconds, so copied as is it waited 83 minutes. It is refused, saying what to write."""
    with pytest.raises(UserError) as caught:
        type("Copied", (Think,), {"wait_for_mcp_connections": {"timeout": 5000}})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("class Copied: wait_for_mcp_connections = {'timeout': 5000} is not a value it takes")
    assert "seconds up to 600" in message and "Think's {'timeout': 5000} is milliseconds: write {'timeout': 5}" \
        in message


def test_settings_take_their_documented_values_and_properties(tmp_path: Path) -> None:
    class Fine(Think):
        max_steps = 3
        hydration_limit = None
        chat_stream_stall_timeout = 2.5
        include_kernel_tools = "allow"
        extension_allowed_hosts = ("api.example.com",)
        wait_for_mcp_connections = 600

        @property
        def include_workspace_tools(self) -> bool:  # type: ignore[override]
            return False

    agent = Fine("ok", db=tmp_path / "ok.sqlite")
    agent.max_steps = 1
    assert (agent.max_steps, agent.include_workspace_tools, agent.include_kernel_tools) == (1, False, "allow")
    for wait in (True, False, 0, 2.5, {"timeout": 0.5}, {}):
        agent.wait_for_mcp_connections = wait
        assert agent.wait_for_mcp_connections == wait


def test_a_hook_given_as_a_value_is_refused_where_it_is_written() -> None:
    with pytest.raises(UserError, match=r"^class Bad: get_tools = \[1\] is a value, but get_tools is a method "
                                        r"Think calls; define it, e\.g\. `def get_tools\(self\): return \[1\]`"):
        type("Bad", (Think,), {"get_tools": [1]})
    with pytest.raises(UserError, match="get_model = 'openai/gpt-4o-mini' is a value"):
        type("Bad", (Think,), {"get_model": "openai/gpt-4o-mini"})


async def test_a_hook_set_on_the_instance_runs_like_a_method_of_the_class(tmp_path: Path) -> None:
    """`agent.before_turn = fn` was accepted and never called (the engine asked the class only)."""
    script = S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])

    class Plain(Think):
        include_workspace_tools = False

        def get_model(self):  # type: ignore[no-untyped-def]
            return script.model

        def get_tools(self):  # type: ignore[no-untyped-def]
            return [add]

    agent = Plain("hooks", db=tmp_path / "h.sqlite")
    calls: list[str] = []
    agent.before_turn = lambda ctx: calls.append("before_turn")
    agent.before_tool_call = lambda ctx: calls.append("before_tool_call")
    agent.after_tool_call = lambda ctx: calls.append("after_tool_call")
    agent.on_step_finish = lambda ctx: calls.append("on_step_finish")
    agent.on_chat_response = lambda result: calls.append("on_chat_response")
    assert (await agent.send("1+2?")).status == "completed"
    assert calls == ["before_turn", "before_tool_call", "after_tool_call", "on_step_finish", "on_step_finish",
                     "on_chat_response"]
