"""MCP servers (issue 15 item 1), against real servers written with the SDK: a stdio subprocess
and a streamable-HTTP server on 127.0.0.1 (tests/mcp_server.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agents import eventually, scripted_agent
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S

SERVER = Path(__file__).with_name("mcp_server.py")
STDIO = f"{sys.executable} {SERVER} stdio"
CONNECT_S = 300.0
"""`connect_timeout` of the tests that need a server connected: `add_mcp_server` returns as soon as it is,
so this bounds only a failure (a loaded machine, load ~20, took over 10 s to start the Python server)."""


@pytest.fixture(autouse=True)
def _handshake_room(monkeypatch: pytest.MonkeyPatch) -> None:
    """The handshake gets as long (a test that times it sets its own `THINK_NB_MCP_HANDSHAKE_TIMEOUT`)."""
    monkeypatch.setenv("THINK_NB_MCP_HANDSHAKE_TIMEOUT", str(CONNECT_S))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def start_http(port: int) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(sys.executable, str(SERVER), "http", str(port),
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    await eventually(listening, what=f"the MCP server listening on {port}")
    return proc


@pytest.fixture
async def http_server() -> AsyncIterator[tuple[str, int]]:
    port = free_port()
    proc = await start_http(port)
    try:
        yield f"http://127.0.0.1:{port}/mcp", port
    finally:
        proc.kill()
        await proc.wait()


def agent_with(script: S, tmp_path: Path, **attrs: object) -> Think:
    cls = type("Mcp", (Think,), {"get_model": lambda self: script.model, "get_tools": lambda self: [],
                                "include_workspace_tools": False, **attrs})
    return cls("m", db=tmp_path / "mcp.sqlite")


def tool_parts(agent: Think) -> list[dict]:
    return [p for m in agent.messages for p in m["parts"] if p["type"].startswith("tool-")]


async def test_stdio_server_tools_are_merged_called_and_errors_reach_the_model(tmp_path: Path) -> None:
    script = S([[S.tool_call("demo_add", {"a": 2, "b": 40}), S.tool_call("demo_fail", {})], [S.text("42")]])
    agent = agent_with(script, tmp_path)
    info = await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S)
    assert (info["state"], info["transport"], info["tools"]) == ("connected", "stdio", 5)
    result = await agent.send("add")
    assert result.status == "completed"
    parts = tool_parts(agent)
    assert [(p["type"], p["state"]) for p in parts] == [("tool-demo_add", "output-available"),
                                                        ("tool-demo_fail", "output-error")]
    assert parts[0]["output"] == 42.0 or parts[0]["output"] == {"result": 42.0}
    assert parts[1]["errorText"] == "McpCallError: MCP server 'demo', tool 'fail': Error executing tool fail"
    sent = {t["function"]["name"]: t["function"] for t in script.requests[0]["tools"]}
    assert set(sent) == {"demo_add", "demo_echo_env", "demo_fail", "demo_slow", "demo_delete_file"}
    assert sent["demo_add"]["description"] == "Add two numbers. (MCP server demo)"
    assert sent["demo_add"]["parameters"]["required"] == ["a", "b"]
    frame = agent.mcp_servers()
    assert frame[["name", "state", "tools", "calls"]].to_dict("records") == [
        {"name": "demo", "state": "connected", "tools": 5, "calls": 2}]
    await agent.shutdown()


async def test_http_server_restored_when_the_agent_is_created_again(http_server: tuple[str, int],
                                                                     tmp_path: Path) -> None:
    url, _ = http_server
    script = S([[S.tool_call("web_add", {"a": 1, "b": 2})], [S.text("3")], [S.tool_call("web_add", {"a": 3, "b": 4})],
                [S.text("7")]])
    first = agent_with(script, tmp_path)
    assert (await first.add_mcp_server("web", url, connect_timeout=CONNECT_S))["state"] == "connected"
    await first.send("one")
    await first.shutdown()
    again = agent_with(script, tmp_path, wait_for_mcp_connections={"timeout": CONNECT_S})
    assert again.mcp_servers()["name"].tolist() == ["web"]
    await again.send("two")  # waits for the reconnection before the model call
    assert [p["state"] for p in tool_parts(again)] == ["output-available", "output-available"]
    await again.remove_mcp_server("web")
    assert again.mcp_servers().empty
    assert agent_with(script, tmp_path).mcp_servers().empty
    await again.shutdown()


async def test_a_server_killed_mid_call_is_a_tool_error_and_it_reconnects(tmp_path: Path) -> None:
    marker = tmp_path / "slow.pid"
    script = S([[S.tool_call("demo_slow", {"marker": str(marker)})], [S.text("it died")],
                [S.tool_call("demo_add", {"a": 1, "b": 1})], [S.text("2")]])
    agent = agent_with(script, tmp_path)
    await agent.add_mcp_server("demo", STDIO, timeout=120, connect_timeout=CONNECT_S)
    turn = asyncio.ensure_future(agent.send("slow"))
    await eventually(marker.exists)
    await eventually(lambda: marker.read_text().strip().isdigit())
    os.kill(int(marker.read_text()), signal.SIGKILL)
    result = await asyncio.wait_for(turn, 60)
    assert result.status == "completed"
    (part,) = tool_parts(agent)
    assert part["state"] == "output-error" and "MCP server 'demo', tool 'slow'" in part["errorText"]
    await eventually(lambda: agent.mcp_servers()["state"].tolist() == ["connected"], timeout=60)
    assert (await agent.send("again")).status == "completed"
    assert tool_parts(agent)[-1]["state"] == "output-available"
    await agent.shutdown()


def test_the_mcp_wait_is_seconds_in_every_form() -> None:
    """`wait_for_mcp_connections`: a bare number is seconds (it was read as True: 10 s), as is
    `{"timeout": s}`; True waits Think's default 10 s; False and 0 do not wait."""
    from think_nb.mcp.servers import wait_seconds

    assert [wait_seconds(w) for w in (True, False, 0, 2.5, 30, {"timeout": 0.5}, {})] == [10, 0, 0, 2.5, 30, 0.5, 10]


async def test_a_server_that_never_starts_fails_clearly_and_the_turn_runs_without_it(tmp_path: Path) -> None:
    script = S([[S.text("no tools")]])
    agent = agent_with(script, tmp_path, wait_for_mcp_connections={"timeout": 0.5})
    info = await agent.add_mcp_server("ghost", "/nonexistent/mcp-server --flag", connect_timeout=5)
    assert info["state"] in ("failed", "connecting") and info["tools"] == 0
    await eventually(lambda: agent.mcp_servers()["last_error"].tolist()[0] is not None)
    assert (await agent.send("hi")).status == "completed"
    assert script.requests[0]["tools"] in ([], None)
    await agent.shutdown()


async def test_gating_by_name_and_by_predicate_and_secrets_by_reference(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    script = S([[S.tool_call("demo_delete_file", {"path": "/tmp/x"}), S.tool_call("demo_add", {"a": 1, "b": 2})],
                [S.text("done")]])
    agent = agent_with(script, tmp_path)
    monkeypatch.setenv("DEMO_TOKEN", "s3cr3t-value")
    await agent.add_mcp_server("demo", STDIO, env={"API_TOKEN": "${DEMO_TOKEN}"}, needs_approval=["delete_file"],
                               connect_timeout=CONNECT_S)
    await agent.send("delete")
    pending = agent.pending_approvals()
    assert [p["tool_name"] for p in pending] == ["demo_delete_file"]
    raw = (tmp_path / "mcp.sqlite").read_bytes() + (tmp_path / "mcp.sqlite-wal").read_bytes()
    assert b"s3cr3t-value" not in raw and b"${DEMO_TOKEN}" in raw
    with pytest.raises(UserError, match="literal secret"):
        await agent.add_mcp_server("bad", STDIO, env={"API_TOKEN": "plain-secret"})
    seen: list = []
    await agent.add_mcp_server("demo", STDIO, needs_approval=lambda server, tool, data: seen.append(
        (server, tool, data)) or tool == "add", connect_timeout=CONNECT_S)
    assert runtime_of(agent).mcp_tools()["demo_add"].needs_approval({"a": 1, "b": 2}) is True
    assert seen == [("demo", "add", {"a": 1, "b": 2})]
    await agent.shutdown()


async def test_a_server_added_again_without_needs_approval_keeps_its_gates(tmp_path: Path) -> None:
    """Issue 27 §9: re-adding a server (another timeout, no needs_approval) used to drop the gates set
    before, silently; they stay unless needs_approval is given (False drops them)."""
    agent = agent_with(S([]), tmp_path)
    gated = lambda: {name: t.needs_approval for name, t in runtime_of(agent).mcp_tools().items()}  # noqa: E731
    await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S, needs_approval=["delete_file"])
    assert gated()["demo_delete_file"] is True and gated()["demo_add"] is False
    await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S, timeout=30)  # replaced: the gates stay
    assert gated()["demo_delete_file"] is True
    await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S,
                               needs_approval=lambda server, tool, data: tool == "add")
    await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S, timeout=20)
    assert gated()["demo_add"]({"a": 1, "b": 2}) is True
    await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S, needs_approval=False)
    assert gated()["demo_delete_file"] is False and gated()["demo_add"] is False
    await agent.shutdown()


async def test_an_mcp_tool_replaces_a_local_tool_of_the_same_name(tmp_path: Path) -> None:
    from think_nb import tool

    @tool
    def demo_add(a: float, b: float) -> str:
        """Local add."""
        return "local"

    script = S([[S.tool_call("demo_add", {"a": 1, "b": 1})], [S.text("ok")]])
    agent = scripted_agent(script, tools=[demo_add], name="clash")
    await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S)
    await agent.send("go")
    assert tool_parts(agent)[-1]["output"] in (2.0, {"result": 2.0})  # later sources win: MCP
    await agent.remove_mcp_server("demo")
    await agent.shutdown()


@pytest.mark.parametrize(("args", "needle"), [
    (("bad name!", STDIO), "MCP server name"),
    (("x", ""), "pass a URL"),
    (("x", "http://127.0.0.1:1/mcp"), None),
])
async def test_bad_arguments_are_refused_in_one_line(tmp_path: Path, args: tuple, needle: str | None) -> None:
    agent = agent_with(S([]), tmp_path)
    if needle is None:
        with pytest.raises(UserError, match="args= and env= are for commands"):
            await agent.add_mcp_server(*args, env={"A": "b"})
    else:
        with pytest.raises(UserError, match=needle):
            await agent.add_mcp_server(*args)
    await agent.shutdown()


async def test_adding_the_same_server_again_keeps_its_connection_and_another_replaces_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A re-run cell adds the same server again: one connection, no reconnect (the Agents SDK's
    `addMcpServer` is idempotent); the same name with another command replaces it, logged."""
    agent = agent_with(S([]), tmp_path)
    await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S)
    first = runtime_of(agent).mcp.live["demo"]
    assert (await agent.add_mcp_server("demo", STDIO, connect_timeout=CONNECT_S))["state"] == "connected"
    assert runtime_of(agent).mcp.live["demo"] is first
    with caplog.at_level("WARNING", logger="think_nb"):
        info = await agent.add_mcp_server("demo", STDIO, args=["--unused"], connect_timeout=CONNECT_S)
    assert info["state"] in ("connected", "failed")
    assert runtime_of(agent).mcp.live["demo"] is not first and first.state == "closed"
    assert "MCP server 'demo' replaced (args changed)" in caplog.text
    assert agent.mcp_servers()["name"].tolist() == ["demo"]
    await agent.shutdown()


async def test_a_stdio_server_that_exits_names_its_stderr_in_the_error(tmp_path: Path) -> None:
    """A server that dies at start: its last stderr line (why) is in `last_error`, not only
    "Connection closed"."""
    crash = tmp_path / "crash.py"
    crash.write_text("raise SystemExit('crash.py: no API key configured')\n")
    agent = agent_with(S([]), tmp_path)
    await agent.add_mcp_server("crashy", f"{sys.executable} {crash}", connect_timeout=30)
    await eventually(lambda: agent.mcp_servers()["last_error"][0] is not None, timeout=30)
    assert "stderr: crash.py: no API key configured" in agent.mcp_servers()["last_error"][0]
    await agent.shutdown()


# -- issue 28 §10: the handshake is bounded, an exit says its code, remove does not wait --------------------
MUTE = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(3600)"


def pid_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_a_server_that_never_answers_initialize_fails_after_the_handshake_timeout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THINK_NB_MCP_HANDSHAKE_TIMEOUT", "0.5")
    agent = agent_with(S([]), tmp_path)
    marker = tmp_path / "mute.pid"
    await agent.add_mcp_server("mute", sys.executable, args=["-c", MUTE, str(marker)], connect_timeout=0)
    await eventually(lambda: agent.mcp_servers()["state"][0] == "failed", timeout=60, what="the handshake fails")
    error = agent.mcp_servers()["last_error"][0]
    assert "MCP server 'mute' did not finish the MCP handshake" in error
    assert "within 0.5 s (THINK_NB_MCP_HANDSHAKE_TIMEOUT)" in error  # the setting to raise
    await agent.shutdown()


async def test_a_server_still_connecting_after_connect_timeout_is_named_in_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A slow start (a loaded laptop) is not a hang and not silent: `add_mcp_server` returns after
    `connect_timeout` with the server `connecting`, and a warning names the setting to raise."""
    agent = agent_with(S([]), tmp_path)
    marker = tmp_path / "mute.pid"
    with caplog.at_level("WARNING", logger="think_nb"):
        info = await agent.add_mcp_server("mute", sys.executable, args=["-c", MUTE, str(marker)], connect_timeout=0.2)
    assert info["state"] == "connecting"
    assert "MCP server 'mute' is still connecting after connect_timeout=0.2 s" in caplog.text
    assert "Pass a larger connect_timeout= to add_mcp_server" in caplog.text
    await agent.shutdown()


async def test_a_server_that_prints_non_json_fails_naming_what_it_printed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THINK_NB_MCP_HANDSHAKE_TIMEOUT", "0.5")
    agent = agent_with(S([]), tmp_path)
    chatty = "import time; print('Welcome to my server v2!', flush=True); time.sleep(3600)"
    await agent.add_mcp_server("chatty", sys.executable, args=["-c", chatty], connect_timeout=0)
    await eventually(lambda: agent.mcp_servers()["state"][0] == "failed", timeout=60, what="the handshake fails")
    error = agent.mcp_servers()["last_error"][0]
    assert "MCP server 'chatty' did not finish the MCP handshake" in error
    assert "it printed instead of JSON-RPC: Welcome to my server v2!" in error
    await agent.shutdown()


async def test_a_server_that_exits_at_start_says_its_exit_code(tmp_path: Path) -> None:
    agent = agent_with(S([]), tmp_path)
    await agent.add_mcp_server("quits", sys.executable, args=["-c", "import sys; sys.exit(3)"], connect_timeout=0)
    await eventually(lambda: (agent.mcp_servers()["last_error"][0] or "").count("exited with code 3") == 1,
                     timeout=60, what="the exit code in last_error")
    await agent.shutdown()


async def test_removing_a_connecting_server_stops_it_before_it_returns(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`remove_mcp_server` on a server stuck in its handshake cancels the attempt: when it returns
    the server process is gone (before, it waited 5 s and returned with the server still running)."""
    monkeypatch.setenv("THINK_NB_MCP_HANDSHAKE_TIMEOUT", "3600")
    agent = agent_with(S([]), tmp_path)
    marker = tmp_path / "mute.pid"
    await agent.add_mcp_server("mute", sys.executable, args=["-c", MUTE, str(marker)], connect_timeout=0)
    await eventually(lambda: marker.exists() and marker.read_text(), timeout=60, what="the server started")
    pid = int(marker.read_text())
    assert agent.mcp_servers()["state"][0] == "connecting" and pid_alive(pid)
    assert await agent.remove_mcp_server("mute") is True
    assert not pid_alive(pid), "the server still runs after remove_mcp_server returned"
    assert agent.mcp_servers().empty
    await agent.shutdown()


def test_the_guard_reports_its_commands_exit_code_and_passes_input_through() -> None:
    from think_nb.procs import GUARD, guarded

    command, args = guarded(sys.executable, ["-c", "import sys; print(sys.stdin.read().upper()); sys.exit(3)"])
    done = subprocess.run([command, *args], input="hello", capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (3, "HELLO\n")
    assert done.stderr.strip() == f"think-nb: {sys.executable} exited with code 3"
    assert args[:2] == ["-IS", GUARD]


# -- issue 28 §5: what a server says is scrubbed of its secrets; literal secrets are never stored -----------
ECHO = ("import json, os, sys; "
        "open(sys.argv[1] + '.part', 'w').write(json.dumps({'argv': sys.argv[2:], 'env': dict(os.environ)}))"
        "; os.replace(sys.argv[1] + '.part', sys.argv[1])"
        "; sys.stderr.write('auth failed for ' + ' '.join(sys.argv[2:]) + ' ' + os.environ.get('MY_GH', '') + ' '"
        " + os.environ.get('UPSTREAM', '') + ' ' + os.environ.get('OPENAI_API_KEY', '') + '\\n'); sys.exit(1)")
LITERAL_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c"
LITERAL_TOKEN = "tok_9f8e7d6c5b4a39281706"
SHAPED = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
RESOLVED = "resolved-upstream-secret-77"
PROVIDER = "sk-provider-env-key-0123456789"


def stored_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("mcp.sqlite*") if p.is_file())


async def test_a_servers_stderr_and_stored_config_never_hold_its_secrets(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_SECRET", RESOLVED)
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER)
    seen = tmp_path / "seen.json"
    agent = agent_with(S([]), tmp_path)
    await agent.add_mcp_server("leaky", sys.executable,
                               args=["-c", ECHO, str(seen), "--api-key", LITERAL_KEY, f"--token={LITERAL_TOKEN}"],
                               env={"MY_GH": SHAPED, "UPSTREAM": "${UPSTREAM_SECRET}"}, connect_timeout=0)
    await eventually(lambda: "auth failed" in (agent.mcp_servers()["last_error"][0] or ""), timeout=60,
                     what="the server's stderr in last_error")
    import json

    child = json.loads(seen.read_text())  # the real values reach the child, and only the child
    assert child["argv"] == ["--api-key", LITERAL_KEY, f"--token={LITERAL_TOKEN}"]
    assert child["env"]["MY_GH"] == SHAPED and child["env"]["UPSTREAM"] == RESOLVED
    shown = " ".join(str(v) for v in agent.mcp_servers().to_dict("records")[0].values())
    frames = json.dumps(runtime_of(agent).mcp.table())
    raw = stored_bytes(tmp_path)
    # every attempt's stderr, as the server wrote it but scrubbed
    logged = await asyncio.to_thread(Path(agent.mcp_servers()["log"][0]).read_text)
    for secret in (LITERAL_KEY, LITERAL_TOKEN, SHAPED, RESOLVED, PROVIDER):
        assert secret not in shown and secret not in frames, secret
        assert secret.encode() not in raw, secret
        assert secret not in logged, (secret, logged)
    assert "auth failed for --api-key ***" in shown
    assert "auth failed for --api-key ***" in logged
    assert b"${UPSTREAM_SECRET}" in raw  # a reference is stored as written
    await agent.shutdown()


async def test_a_restored_server_whose_literal_secret_was_not_stored_says_how_to_fix_it(tmp_path: Path) -> None:
    agent = agent_with(S([]), tmp_path)
    await agent.add_mcp_server("keyed", sys.executable, args=["-c", "import time; time.sleep(3600)",
                                                              "--api-key", LITERAL_KEY], connect_timeout=0)
    await agent.shutdown()
    again = agent_with(S([]), tmp_path)
    await eventually(lambda: "literal secret, which was not stored" in (again.mcp_servers()["last_error"][0] or ""),
                     timeout=60, what="the restore explains the missing secret")
    assert "${MY_KEY}" in again.mcp_servers()["last_error"][0]
    assert LITERAL_KEY.encode() not in stored_bytes(tmp_path)
    await again.shutdown()


async def test_a_literal_under_a_pat_name_is_refused_and_references_work_in_args(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = agent_with(S([]), tmp_path)
    with pytest.raises(UserError, match="literal secret"):
        await agent.add_mcp_server("gh", STDIO, env={"GITHUB_PAT": "github_pat_11ABCDEFG0123456789"})
    monkeypatch.setenv("MY_KEY", LITERAL_KEY)
    seen = tmp_path / "seen.json"
    await agent.add_mcp_server("ref", sys.executable, args=["-c", ECHO, str(seen), "--api-key", "${MY_KEY}"],
                               connect_timeout=0)
    await eventually(seen.exists, timeout=60, what="the server ran")
    import json

    assert json.loads(seen.read_text())["argv"] == ["--api-key", LITERAL_KEY]
    await eventually(lambda: "auth failed" in (agent.mcp_servers()["last_error"][0] or ""), timeout=60)
    assert LITERAL_KEY not in agent.mcp_servers()["last_error"][0]
    assert LITERAL_KEY.encode() not in stored_bytes(tmp_path) and b"${MY_KEY}" in stored_bytes(tmp_path)
    await agent.shutdown()


# -- issue 28 §5, second attack: cuts, the SDK's own log, tool results, names, a server that dies idle --------
WHOAMI = ("import os, sys\nfrom mcp.server.mcpserver import MCPServer\ns = MCPServer('x')\n"
          "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
          "@s.tool()\ndef whoami() -> str:\n    return 'using ' + sys.argv[-1] + ' and ' + os.environ['U']\n"
          "@s.tool()\ndef fails() -> str:\n    raise ValueError('refused ' + sys.argv[-1])\ns.run()\n")
LONG_SECRET = "resolvedUPSTREAM9z8y7x6w5v4u3t2s"


async def test_a_servers_answers_are_scrubbed_of_its_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_SECRET", RESOLVED)
    script = S([[S.tool_call("leaky_whoami", {}), S.tool_call("leaky_fails", {})], [S.text("ok")]])
    agent = agent_with(script, tmp_path)
    await agent.add_mcp_server("leaky", sys.executable, args=["-c", WHOAMI, str(tmp_path / "pid"), "--api-key",
                                                              LITERAL_KEY], env={"U": "${UPSTREAM_SECRET}"},
                               connect_timeout=CONNECT_S)
    await agent.send("who")
    whoami, fails = tool_parts(agent)
    assert whoami["output"] in ("using *** and ***", {"result": "using *** and ***"})
    assert fails["state"] == "output-error" and LITERAL_KEY not in fails["errorText"]
    import json

    sent = json.dumps(script.requests[-1]["messages"])
    await agent.shutdown()
    for secret in (LITERAL_KEY, RESOLVED):
        assert secret not in sent and secret.encode() not in stored_bytes(tmp_path)


@pytest.mark.parametrize("prefix", ["'key '", "'y' * 131", "'y' * 190"])
async def test_the_sdks_own_log_and_a_cut_handshake_error_hold_no_part_of_a_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, prefix: str) -> None:
    """A server printing its secret on stdout: the SDK logs the line it could not parse (what a
    notebook cell shows), and the handshake error quotes it, cut."""
    monkeypatch.setenv("THINK_NB_MCP_HANDSHAKE_TIMEOUT", "1")
    monkeypatch.setenv("UPSTREAM_SECRET", LONG_SECRET)
    code = f"import os, time; print({prefix} + os.environ['U'], flush=True); time.sleep(60)"
    agent = agent_with(S([]), tmp_path)
    with caplog.at_level("DEBUG"):
        await agent.add_mcp_server("chatty", sys.executable, args=["-c", code], env={"U": "${UPSTREAM_SECRET}"},
                                   connect_timeout=0)
        await eventually(lambda: agent.mcp_servers()["state"][0] == "failed", timeout=60, what="the handshake fails")
    error = agent.mcp_servers()["last_error"][0]
    await agent.shutdown()
    assert "it printed instead of JSON-RPC: " in error
    assert "Failed to parse JSONRPC message" in caplog.text  # the SDK did log the line
    for part in (LONG_SECRET, LONG_SECRET[8:31], LONG_SECRET[:12]):
        assert part not in error and part not in caplog.text, part


async def test_a_server_killed_while_idle_is_failed_at_once_not_connected(tmp_path: Path) -> None:
    agent = agent_with(S([]), tmp_path)
    pid_file = tmp_path / "pid"
    await agent.add_mcp_server("idle", sys.executable, args=["-c", WHOAMI, str(pid_file), "x"],
                               env={"U": "u"}, connect_timeout=CONNECT_S)
    assert agent.mcp_servers()["state"][0] == "connected"
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    await eventually(lambda: agent.mcp_servers()["state"][0] != "connected", timeout=30,
                     what="the dead server to stop showing connected")
    assert (agent.mcp_servers()["last_error"][0] or "").count("was killed by SIGKILL") == 1
    await agent.shutdown()


@pytest.mark.parametrize("given", [{"args": ["--key", "hunter2hunter2"]}, {"args": ["--pass", "hunter2hunter2"]},
                                   {"args": ["--bearer", "hunter2hunter2"]},
                                   {"args": ["--url", "https://user:hunter2hunter2@host/x"]},
                                   {"env": {"DATABASE_URL": "postgres://u:hunter2hunter2@db/x"}}])
def test_secrets_under_other_names_and_in_urls_are_never_stored(given: dict) -> None:
    from think_nb.mcp.config import make

    config = make("s", "srv", **given)
    assert "hunter2hunter2" not in repr(config.stored()) and "hunter2hunter2" in config.secrets()


@pytest.mark.parametrize("env", [{"MY_SECRET_VALUE": "hunter2hunter2"}, {"PASSPHRASE": "correct horse battery"}])
def test_a_literal_under_a_secret_name_is_refused(env: dict) -> None:
    from think_nb.mcp.config import make

    with pytest.raises(UserError, match="literal secret"):
        make("s", "srv", env=env)
