"""Extensions (issue 15 item 3): sandboxed Python extensions, static and model-loaded, in the real
pydantic-monty sandbox, a real SQLite file and a ScriptedModel at the model seam."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.extensions import ExtensionError
from think_nb.testing import ScriptedModel as S

MATH = '''
def add(a, b):
    return {"result": a + b}

tools = {"add": {"description": "Add two numbers",
                 "parameters": {"a": {"type": "number"}, "b": {"type": "number"}},
                 "required": ["a", "b"], "function": add}}
'''

FILES = '''
async def read(path):
    return await read_file(path)

async def write(path, content):
    await write_file(path, content)
    return "written"

async def get(url):
    return await fetch(url)

tools = {"read": {"description": "Read a file", "parameters": {"path": {"type": "string"}}, "function": read},
         "write": {"description": "Write a file", "parameters": {"path": {"type": "string"},
                   "content": {"type": "string"}}, "function": write},
         "get": {"description": "Fetch a URL", "parameters": {"url": {"type": "string"}}, "function": get}}
'''


def make(script: S, tmp_path: Path, name: str = "x", **attrs: object) -> Think:
    cls = type("Ext", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False,
                                "max_steps": 4, **attrs})
    return cls(name, db=tmp_path / "ext.sqlite")


def tool_parts(agent: Think) -> list[dict]:
    return [p for m in agent.messages for p in m["parts"] if p["type"].startswith("tool-")]


def statics(*configs: tuple[dict, str]) -> object:
    return lambda self: [{"manifest": m, "source": s} for m, s in configs]


async def test_static_extension_tool_is_namespaced_called_and_listed(tmp_path: Path) -> None:
    script = S([[S.tool_call("math_add", {"a": 2, "b": 40})], [S.text("42")]])
    agent = make(script, tmp_path, get_extensions=statics(({"name": "math", "version": "1.0.0"}, MATH)))
    result = await agent.send("add")
    assert result.status == "completed"
    [part] = tool_parts(agent)
    assert (part["type"], part["state"], part["output"]) == ("tool-math_add", "output-available", {"result": 42})
    sent = {t["function"]["name"]: t["function"] for t in script.requests[0]["tools"]}
    assert sent == {"math_add": {"name": "math_add", "description": "[math] Add two numbers", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}
    frame = agent.extensions()
    assert frame[["name", "origin", "state", "calls"]].to_dict("records") == [
        {"name": "math", "origin": "static", "state": "loaded", "calls": 1}]
    assert frame.loc[0, "tools"] == ["math_add"] and frame.loc[0, "load_ms"] > 0
    assert runtime_of(agent).store.extensions.all() == []  # static extensions come from the class, not the file
    await agent.shutdown()


async def test_model_loads_an_extension_and_uses_it_next_turn_and_it_is_restored(tmp_path: Path) -> None:
    script = S([[S.tool_call("load_extension", {"name": "math", "version": "1.0.0", "source": MATH})],
                [S.text("Loaded.")],
                [S.tool_call("math_add", {"a": 1, "b": 2})], [S.text("3")],
                [S.tool_call("list_extensions", {})], [S.text("listed")]])
    agent = make(script, tmp_path, include_extension_tools=True)
    assert (await agent.send("make an adder")).status == "completed"
    loaded = tool_parts(agent)[0]["output"]
    assert loaded == {"loaded": True, "name": "math", "prefix": "math", "version": "1.0.0", "tools": ["math_add"],
                      "message": 'Extension "math" loaded. Call these tools by their full name: math_add.'}
    first = {t["function"]["name"] for t in script.requests[0]["tools"]}
    assert first == {"load_extension", "list_extensions"}
    assert (await agent.send("1 + 2")).status == "completed"
    assert tool_parts(agent)[1]["output"] == {"result": 3}
    await agent.shutdown()

    again = make(script, tmp_path, include_extension_tools=True)  # a new kernel: restored from SQLite
    assert again.extensions()["name"].tolist() == ["math"]  # listed at once, before its restore has run
    assert (await again.send("what is loaded?")).status == "completed"
    listed = tool_parts(again)[2]["output"]
    assert listed == {"count": 1, "extensions": [{"name": "math", "version": "1.0.0", "description": "",
                                                  "tools": ["math_add"], "state": "loaded", "error": None,
                                                  "permissions": {"workspace": "none", "network": []}}]}
    assert "math_add" in {t["function"]["name"] for t in script.requests[-1]["tools"]}
    assert again.extensions().loc[0, "origin"] == "loaded"
    assert await again.unload_extension("math") is True
    await again.shutdown()
    third = make(script, tmp_path)
    assert third.extensions().empty or (await runtime_of(third).extension_tools()) == {}
    await third.shutdown()


async def test_an_extension_that_raises_at_load_is_reported_and_the_agent_works(tmp_path: Path) -> None:
    broken = "raise ValueError('no config')\n"
    script = S([[S.tool_call("load_extension", {"name": "bad", "version": "1", "source": broken})],
                [S.text("sorry")]])
    agent = make(script, tmp_path, include_extension_tools=True,
                 get_extensions=statics(({"name": "boom", "version": "1"}, "tools = {'x': 1}\n")))
    assert (await agent.send("load")).status == "completed"
    [part] = tool_parts(agent)
    assert part["output"]["loaded"] is False
    assert part["output"]["error"] == "loading failed: ValueError: no config"
    frame = agent.extensions().set_index("name")
    assert frame.loc["boom", "state"] == "error"
    assert frame.loc["boom", "error"] == "tool 'x' needs a dict with a 'function' (a def)"
    assert frame.loc["bad", "state"] == "error"
    assert runtime_of(agent).store.extensions.all() == []  # a failed load is not stored
    await agent.shutdown()


async def test_an_extension_that_loops_forever_is_stopped_at_load_and_in_a_call(tmp_path: Path) -> None:
    spin = "while True:\n    pass\n"
    slow_tool = "def spin():\n    while True:\n        pass\ntools = {'spin': {'function': spin}}\n"
    script = S([[S.tool_call("slow_spin", {})], [S.text("it failed")]])
    agent = make(script, tmp_path, extension_timeout=0.5,
                 get_extensions=statics(({"name": "spin", "version": "1"}, spin),
                                        ({"name": "slow", "version": "1"}, slow_tool)))
    assert (await agent.send("spin")).status == "completed"
    frame = agent.extensions().set_index("name")
    assert frame.loc["spin", "state"] == "error"
    assert frame.loc["spin", "error"].startswith("loading failed: time limit exceeded: it ran longer than 0.5 s")
    [part] = tool_parts(agent)
    assert part["state"] == "output-error"
    assert "tool 'spin' failed: time limit exceeded: it ran longer than 0.5 s" in part["errorText"]
    await agent.shutdown()


@pytest.fixture
def web() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"hello from the test server"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        server.shutdown()
        server.server_close()


async def run_files(tmp_path: Path, permissions: dict, calls: list[tuple[str, dict]], name: str = "x",
                    **attrs: object) -> list[dict]:
    script = S([[S.tool_call(tool, args, id=f"c{i}") for i, (tool, args) in enumerate(calls)], [S.text("done")]])
    agent = make(script, tmp_path, name, get_extensions=statics(({"name": "fs", "version": "1",
                                                            "permissions": permissions}, FILES)), **attrs)
    agent.workspace.pipe_file("/notes.txt", b"secret notes")
    assert (await agent.send("go")).status == "completed"
    parts = tool_parts(agent)
    await agent.shutdown()
    return parts


async def test_no_permission_means_no_workspace_and_no_network(tmp_path: Path, web: str) -> None:
    parts = await run_files(tmp_path, {}, [("fs_read", {"path": "/notes.txt"}),
                                           ("fs_write", {"path": "/x.txt", "content": "x"}),
                                           ("fs_get", {"url": web})],
                            extension_allowed_hosts=["127.0.0.1"], extension_allow_private=["127.0.0.1"])
    assert [p["state"] for p in parts] == ["output-error"] * 3
    needs = "PermissionError: read_file() is not granted to this extension; its manifest needs "
    assert needs + "permissions.workspace='read'" in parts[0]["errorText"]
    assert "permissions.workspace='read-write'" in parts[1]["errorText"]
    assert "PermissionError: fetch() is not granted" in parts[2]["errorText"]


async def test_read_permission_reads_but_cannot_write(tmp_path: Path) -> None:
    parts = await run_files(tmp_path, {"workspace": "read"}, [("fs_read", {"path": "/notes.txt"}),
                                                              ("fs_write", {"path": "/x.txt", "content": "x"})])
    assert (parts[0]["state"], parts[0]["output"]) == ("output-available", "secret notes")
    assert parts[1]["state"] == "output-error" and "permissions.workspace='read-write'" in parts[1]["errorText"]


async def test_read_write_permission_writes_the_agents_workspace(tmp_path: Path) -> None:
    script = S([[S.tool_call("fs_write", {"path": "/out/x.txt", "content": "from the extension"})], [S.text("ok")]])
    agent = make(script, tmp_path, get_extensions=statics(({"name": "fs", "version": "1",
                                                            "permissions": {"workspace": "read-write"}}, FILES)))
    assert (await agent.send("write")).status == "completed"
    assert tool_parts(agent)[0]["output"] == "written"
    assert agent.workspace.cat_file("/out/x.txt") == b"from the extension"
    await agent.shutdown()


async def test_network_needs_the_manifest_and_the_agents_allowlist(tmp_path: Path, web: str) -> None:
    granted = {"network": ["127.0.0.1"]}
    denied = await run_files(tmp_path, granted, [("fs_get", {"url": web})])  # the agent allows no host
    assert "PermissionError: fetch() is not granted" in denied[0]["errorText"]
    allowed = await run_files(tmp_path, granted, [("fs_get", {"url": web})], "y", extension_allowed_hosts=["127.0.0.1"],
                              extension_allow_private=["127.0.0.1"])
    assert allowed[0]["output"]["content"] == "hello from the test server"


async def test_the_sandbox_reaches_no_host_file_environment_or_module(tmp_path: Path) -> None:
    source = '''
def probe(what):
    if what == "file":
        return open("/etc/hostname").read()
    if what == "env":
        import os
        return os.getenv("HOME")
    import subprocess
    return "imported"
tools = {"probe": {"parameters": {"what": {"type": "string"}}, "function": probe}}
'''
    script = S([[S.tool_call("p_probe", {"what": w}, id=w) for w in ("file", "env", "module")], [S.text("no")]])
    agent = make(script, tmp_path, get_extensions=statics(({"name": "p", "version": "1"}, source)))
    assert (await agent.send("probe")).status == "completed"
    errors = [p["errorText"] for p in tool_parts(agent)]
    assert "PermissionError: Permission denied: '/etc/hostname'" in errors[0]
    assert "'os.getenv' is not supported" in errors[1]
    assert "ModuleNotFoundError: No module named 'subprocess'" in errors[2]
    await agent.shutdown()


async def test_name_collisions_documented_winners(tmp_path: Path) -> None:
    def math_add(a: float, b: float) -> str:
        """A local tool with the extension's namespaced name."""
        return "local"

    script = S([[S.tool_call("math_add", {"a": 1, "b": 1})], [S.text("2")]])
    agent = make(script, tmp_path, include_extension_tools=True, get_tools=lambda self: [math_add],
                 get_extensions=statics(({"name": "math", "version": "1"}, MATH)))
    assert (await agent.send("add")).status == "completed"
    assert tool_parts(agent)[0]["output"] == {"result": 2}  # extensions merge after get_tools(): they win
    with pytest.raises(UserError, match=r"Extension 'math' is already loaded\. Unload it first"):
        await agent.load_extension({"name": "math", "version": "2"}, MATH)  # the static one keeps its name
    await agent.shutdown()


async def test_a_stored_extension_does_not_replace_a_static_one_of_the_same_name(tmp_path: Path) -> None:
    script = S([[S.text("hi")]])
    plain = make(script, tmp_path)
    await plain.load_extension({"name": "math", "version": "9"}, MATH)
    await plain.shutdown()
    static = make(script, tmp_path, get_extensions=statics(({"name": "math", "version": "1"}, MATH)))
    await runtime_of(static).extension_tools()
    assert static.extensions()[["name", "version", "origin"]].to_dict("records") == [
        {"name": "math", "version": "1", "origin": "static"}]
    assert await static.unload_extension("math")  # the static one goes; the stored one is kept
    assert [r["manifest"]["version"] for r in runtime_of(static).store.extensions.all()] == ["9"]
    await static.shutdown()


async def test_two_names_that_make_the_same_tool_prefix_cannot_both_load(tmp_path: Path) -> None:
    agent = make(S([[S.text("hi")]]), tmp_path)
    await agent.load_extension({"name": "my-x", "version": "1"}, MATH)
    with pytest.raises(UserError, match="would name its tools my_x_<tool>, as the loaded extension 'my-x'"):
        await agent.load_extension({"name": "my_x", "version": "1"}, MATH)
    assert list(agent.extensions()["name"]) == ["my-x"]
    await agent.shutdown()


HOOKED = '''
def before_turn(ctx):
    return {"system": ctx["system"] + " Extension says hi.", "max_steps": 1, "model": "ignored"}

def spin(ctx):
    while True:
        pass

tools = {}
hooks = {"before_turn": before_turn, "before_tool_call": spin}
'''


async def test_hooks_merge_before_turn_and_a_slow_hook_times_out(tmp_path: Path) -> None:
    script = S([[S.tool_call("math_add", {"a": 1, "b": 1})], [S.text("never: max_steps is 1")]])
    agent = make(script, tmp_path, extension_hook_timeout=0.3,
                 get_system_prompt=lambda self: "Base.",
                 get_extensions=statics(({"name": "h", "version": "1"}, HOOKED),
                                        ({"name": "math", "version": "1"}, MATH)))
    result = await agent.send("add")
    assert result.status == "completed"
    assert script.requests[0]["messages"][0] == {"role": "system", "content": "Base. Extension says hi."}
    assert len(script.requests) == 1  # the extension's max_steps applied
    assert tool_parts(agent)[0]["output"] == {"result": 2}  # the tool ran although the hook timed out
    frame = agent.extensions().set_index("name")
    assert frame.loc["h", "hooks"] == ["before_turn", "before_tool_call"] and frame.loc["h", "hook_errors"] == 1
    await agent.shutdown()


async def test_context_blocks_are_namespaced_and_written_by_the_extension(tmp_path: Path) -> None:
    source = '''
async def remember(fact):
    await set_context("facts", (await get_context("facts")) + fact + "\\n")
    return "ok"
tools = {"remember": {"parameters": {"fact": {"type": "string"}}, "function": remember}}
context = {"facts": "The user likes tea.\\n"}
'''
    script = S([[S.tool_call("mem_remember", {"fact": "The user lives in Lyon."})], [S.text("noted")],
                [S.text("again")]])
    agent = make(script, tmp_path, get_extensions=statics((
        {"name": "mem", "version": "1", "context": [{"label": "facts", "description": "Facts the extension keeps"}]},
        source)))
    assert (await agent.send("remember")).status == "completed"
    block = agent.session.get_context_block("mem_facts")
    assert block is not None and block.content == "The user likes tea.\nThe user lives in Lyon.\n"
    assert (await agent.send("and?")).status == "completed"
    assert "The user lives in Lyon." in script.requests[-1]["messages"][0]["content"]
    assert await agent.unload_extension("mem") is True
    assert agent.session.get_context_block("mem_facts") is None
    await agent.shutdown()


async def test_bad_manifests_are_one_line_errors(tmp_path: Path) -> None:
    agent = make(S([]), tmp_path)
    with pytest.raises(UserError, match="extension name '1bad'"):
        await agent.load_extension({"name": "1bad", "version": "1"}, MATH)
    with pytest.raises(UserError, match=r"permissions.workspace='all'"):
        await agent.load_extension({"name": "ok", "version": "1", "permissions": {"workspace": "all"}}, MATH)
    with pytest.raises(UserError, match="get_extensions\\(\\) entry"):
        make(S([]), tmp_path, name="y", get_extensions=lambda self: ["not a dict"])
    await agent.shutdown()


OBSERVER = '''
import json

async def record(name, ctx):
    seen = await read_file("/seen.jsonl") or ""
    await write_file("/seen.jsonl", seen + json.dumps({"hook": name, "ctx": ctx}) + "\\n")

async def before_tool_call(ctx):
    await record("before_tool_call", ctx)

async def after_tool_call(ctx):
    await record("after_tool_call", ctx)

async def on_step_finish(ctx):
    await record("on_step_finish", ctx)

tools = {}
hooks = {"before_tool_call": before_tool_call, "after_tool_call": after_tool_call, "on_step_finish": on_step_finish}
'''


async def test_observation_hooks_receive_snapshots_after_the_agents_hooks(tmp_path: Path) -> None:
    import json

    script = S([[S.tool_call("math_add", {"a": 2, "b": 3}, id="call-1")], [S.text("5")]])
    agent = make(script, tmp_path, get_extensions=statics(
        ({"name": "obs", "version": "1", "permissions": {"workspace": "read-write"}}, OBSERVER),
        ({"name": "math", "version": "1"}, MATH)))
    assert (await agent.send("add")).status == "completed"
    seen = [json.loads(line) for line in agent.workspace.cat_file("/seen.jsonl").decode().splitlines()]
    assert [s["hook"] for s in seen] == ["before_tool_call", "after_tool_call", "on_step_finish", "on_step_finish"]
    assert seen[0]["ctx"] == {"tool_name": "math_add", "tool_call_id": "call-1", "input": {"a": 2, "b": 3},
                              "step_number": 0}
    after = seen[1]["ctx"]
    assert after.pop("duration_ms") >= 0
    assert after == {"tool_name": "math_add", "tool_call_id": "call-1", "input": {"a": 2, "b": 3}, "step_number": 0,
                     "success": True, "output": {"result": 5}}
    assert [(s["ctx"]["step_number"], s["ctx"]["step_type"], s["ctx"]["finish_reason"], s["ctx"]["tool_call_count"])
            for s in seen[2:]] == [(0, "initial", "tool-calls", 1), (1, "tool-result", "stop", 0)]
    assert agent.extensions().set_index("name").loc["obs", "hook_errors"] == 0
    await agent.shutdown()


async def test_a_model_loaded_extension_gets_the_workspace_access_it_asked_for(tmp_path: Path) -> None:
    script = S([[S.tool_call("load_extension", {"name": "notes", "version": "1", "source": FILES,
                                                "workspace_access": "read"})], [S.text("loaded")],
                [S.tool_call("notes_read", {"path": "/notes.txt"}, id="r"),
                 S.tool_call("notes_write", {"path": "/x.txt", "content": "x"}, id="w")], [S.text("done")]])
    agent = make(script, tmp_path, include_extension_tools=True)
    agent.workspace.pipe_file("/notes.txt", b"secret notes")
    assert (await agent.send("load")).status == "completed"
    assert (await agent.send("use")).status == "completed"
    read, write = tool_parts(agent)[1:]
    assert (read["state"], read["output"]) == ("output-available", "secret notes")
    assert write["state"] == "output-error" and "permissions.workspace='read-write'" in write["errorText"]
    assert not agent.workspace.exists("/x.txt")
    stored = runtime_of(agent).store.extensions.all()
    assert stored[0]["manifest"]["permissions"] == {"workspace": "read", "network": []}
    await agent.shutdown()


async def test_a_tool_of_an_unloaded_extension_says_so(tmp_path: Path) -> None:
    agent = make(S([]), tmp_path)
    await agent.load_extension({"name": "math", "version": "1"}, MATH)
    tool = (await runtime_of(agent).extension_tools())["math_add"]
    assert await tool.invoke({"a": 1, "b": 1}) == {"result": 2}
    await agent.unload_extension("math")
    with pytest.raises(ExtensionError, match=r'Extension "math" has been unloaded\. Tool "math_add" is no longer'):
        await tool.invoke({"a": 1, "b": 1})
    assert await runtime_of(agent).extension_tools() == {}
    await agent.shutdown()


CHUNK_COUNTER = '''
def on_chunk(ctx):
    raise RuntimeError("seen")

tools = {}
hooks = {"on_chunk": on_chunk}
'''


async def test_an_extensions_on_chunk_runs_without_the_agent_overriding_on_chunk(tmp_path: Path) -> None:
    """The turn fires `on_chunk` when the class overrides it *or* an extension defines it (a raising
    extension hook is counted, never fatal)."""
    script = S([[S.text("abc", chunk_size=1)]])
    agent = make(script, tmp_path, get_extensions=statics(({"name": "counter", "version": "1"}, CHUNK_COUNTER)))
    assert (await agent.send("hi")).status == "completed"
    assert not runtime_of(agent).overrides("on_chunk") and runtime_of(agent).observes("on_chunk")
    assert agent.extensions().set_index("name").loc["counter", "hook_errors"] > 0
    await agent.shutdown()


async def test_a_model_loaded_extensions_tools_are_offered_from_the_next_step(tmp_path: Path) -> None:
    """Think: tools of an extension loaded by `load_extension` appear from the next step on, in the
    same turn (and replace a `get_tools()` tool of the same name)."""
    def calc_add(a: float, b: float) -> float:
        """A host tool the extension's tool replaces."""
        return 1000

    script = S([[S.tool_call("load_extension", {"name": "calc", "version": "1", "source": MATH})],
                [S.tool_call("calc_add", {"a": 2, "b": 40})], [S.text("42")]])
    agent = make(script, tmp_path, include_extension_tools=True, get_tools=lambda self: [calc_add])
    assert (await agent.send("load and add")).status == "completed"
    assert "calc_add" in [t["function"]["name"] for t in script.requests[1]["tools"]]
    assert tool_parts(agent)[-1]["state"] == "output-available"
    assert tool_parts(agent)[-1]["output"] == {"result": 42}
    await agent.shutdown()


async def test_a_flat_source_is_rejected_and_offers_no_tool(tmp_path: Path) -> None:
    """Think (extension-manager.test.ts, "flat format rejected"): a source that defines functions but
    no `tools`/`hooks`/`context` dict loads as an error naming the expected form, and offers nothing."""
    script = S([[S.text("nothing to call")]])
    agent = make(script, tmp_path)
    info = await agent.load_extension({"name": "flat", "version": "1"}, "def add(a, b):\n    return a + b\n")
    assert (info["state"], info["tools"], info["hooks"]) == ("error", [], [])
    assert info["error"] == "the source defines no `tools`, `hooks` or `context` dict"
    assert (await agent.send("hi")).status == "completed"
    assert not any(t["function"]["name"].startswith("flat_") for t in script.requests[0].get("tools") or [])
    await agent.shutdown()


ONLY_ON_STEP_FINISH = '''
async def on_step_finish(ctx):
    seen = await read_file("/steps.txt") or ""
    await write_file("/steps.txt", seen + str(ctx["step_number"]) + "\\n")

def before_tool_call(ctx):
    raise RuntimeError("never registered: not in hooks")

tools = {}
hooks = {"on_step_finish": on_step_finish}
'''


async def test_hooks_an_extension_does_not_declare_are_never_called(tmp_path: Path) -> None:
    """Think (extension-manager.test.ts, "hook skips"): only the hooks an extension declares in `hooks`
    run. A tool turn of two steps calls its `on_step_finish` twice; its `before_tool_call`, defined but
    not declared, never runs (it would raise), and no hook error is counted."""
    script = S([[S.tool_call("math_add", {"a": 1, "b": 2})], [S.text("3")]])
    agent = make(script, tmp_path, get_extensions=statics(
        ({"name": "only", "version": "1", "permissions": {"workspace": "read-write"}}, ONLY_ON_STEP_FINISH),
        ({"name": "math", "version": "1"}, MATH)))
    assert (await agent.send("go")).status == "completed"
    assert tool_parts(agent)[0]["output"] == {"result": 3}
    assert agent.workspace.cat_file("/steps.txt").decode() == "0\n1\n"
    frame = agent.extensions().set_index("name")
    assert (frame.loc["only", "hooks"], frame.loc["only", "hook_errors"]) == (["on_step_finish"], 0)
    await agent.shutdown()
