"""`%think` / `%%think` in a real kernel, with this test as the front end.

Frames are observed on IOPub exactly as JupyterLab would receive them. The
agent runs on ``think_nb.testing.ScriptedModel`` (no network).
"""

from __future__ import annotations

from agents import calc_setup
from harness import WIDGET_VIEW_MIME, FakeFrontend
from think_nb.panel.protocol import STREAM_RESUME_REQUEST, USE_CHAT_RESPONSE

# The turn streams ~27 text chunks (3 characters each) 0.05 s apart, so it lasts
# over 1 s: long enough to tell "the cell returned" from "the turn finished".
CALC_SETUP = calc_setup("The answer is 42: two plus forty, computed with the add tool.", 0.05)

DONE_TEXT = "The answer is 42: two plus forty, computed with the add tool."


def chunks_of(frame: dict) -> list[dict]:
    """The UIMessageChunks one ``use_chat_response`` frame carries."""
    return list(frame.get("chunks", []))


def is_chat_response(frame: dict) -> bool:
    return frame.get("type") == USE_CHAT_RESPONSE


def show_panel(fe: FakeFrontend, line: str) -> str:
    """Run ``%think <line>`` and return the comm id of the panel it displayed."""
    start = len(fe.log)
    res = fe.execute(f"%think {line}").check()
    opens = fe.anywidget_opens(since=start)
    assert opens, f"`%think {line}` opened no anywidget comm; output: {res.stdout}{res.stderr}"
    comm_id = opens[-1]["comm_id"]
    views = [d["data"][WIDGET_VIEW_MIME]["model_id"] for d in res.displays
             if WIDGET_VIEW_MIME in d.get("data", {})]
    assert comm_id in views, "the panel's comm was opened but no view of it was displayed"
    # What the real panel's initialize() does first.
    fe.send_custom(comm_id, {"type": STREAM_RESUME_REQUEST})
    return comm_id


IMPORTING = ("import threading, sys; from think_nb.models import litellm_env\n"
             "print(litellm_env.ready() or any(t.name == 'think-nb-import-litellm' for t in threading.enumerate()),"
             " 'litellm' in sys.modules)")


def test_load_ext_starts_importing_litellm_when_the_default_model_is_hosted(fresh_frontend) -> None:
    """`%load_ext` returns at once and, for a hosted default model, litellm imports on its own
    thread (issue 18 §3); with the embedded model nothing imports litellm (§2)."""
    fe = fresh_frontend(THINK_NB_MODEL="openai/gpt-4o-mini")
    fe.execute("%load_ext think_nb").check()
    assert fe.execute(IMPORTING).check().stdout.split()[0] == "True"
    fe = fresh_frontend()
    fe.execute("%load_ext think_nb").check()
    assert fe.execute(IMPORTING).check().stdout.split() == ["False", "False"]


def test_think_help(frontend: FakeFrontend) -> None:
    fe = frontend
    fe.execute("%load_ext think_nb").check()
    res = fe.execute("%think --help")
    assert not res.errors, res.errors
    assert "think" in (res.stdout + res.stderr).lower()


def test_think_displays_panel(frontend: FakeFrontend) -> None:
    fe = frontend
    fe.execute("%load_ext think_nb").check()
    fe.execute(CALC_SETUP).check()
    start = len(fe.log)
    comm_id = show_panel(fe, "Calc")
    state = next(o for o in fe.anywidget_opens(since=start) if o["comm_id"] == comm_id)
    agent_name = state["data"]["state"].get("agent_name")
    assert isinstance(agent_name, str) and agent_name, state["data"]["state"].keys()


def test_cell_magic_returns_before_turn_ends_and_streams(frontend: FakeFrontend) -> None:
    fe = frontend
    fe.execute("%load_ext think_nb").check()
    fe.execute(CALC_SETUP).check()
    comm_id = show_panel(fe, "Calc")

    start = len(fe.log)
    res = fe.execute("%%think Calc\nWhat is 2+40?").check()

    # The cell is idle while the turn still streams: no done frame yet.
    frames_at_idle = [f for f in fe.custom_frames(comm_id, since=start) if is_chat_response(f)]
    assert not any(f.get("done") for f in frames_at_idle), (
        f"the turn finished before the cell returned ({res.duration_s:.2f}s); "
        "%%think must start the turn as a background task"
    )

    fe.wait_for(fe.is_custom(comm_id, lambda f: is_chat_response(f) and bool(f.get("done"))),
                timeout=60, since=start)
    frames = [f for f in fe.custom_frames(comm_id, since=start) if is_chat_response(f)]
    done_at = next(i for i, f in enumerate(frames) if f.get("done"))
    chunks = [c for f in frames[:done_at + 1] for c in chunks_of(f)]
    deltas = [c for c in chunks if c.get("type") == "text-delta"]
    assert deltas, f"no text-delta chunks; chunk types: {[c.get('type') for c in chunks]}"
    assert DONE_TEXT in "".join(c["delta"] for c in deltas)
    assert not any(f.get("error") for f in frames), frames

    def finished(frame: dict) -> bool:  # a transcript patch holding the settled tool call
        msgs = frame.get("messages", []) + frame.get("updated", []) if frame.get("type") == "transcript_patch" else []
        return any(_tool_part(m, "add") and _tool_part(m, "add").get("state") == "output-available"
                   for m in msgs if m.get("role") == "assistant")

    fe.wait_for(fe.is_custom(comm_id, finished), timeout=30, since=start)
    messages = fe.view_transcript(comm_id)
    users = [m for m in messages if m["role"] == "user"]
    assert [_text(m) for m in users][-1].strip() == "What is 2+40?"
    assistant = [m for m in messages if m["role"] == "assistant"][-1]
    part = _tool_part(assistant, "add")
    assert part["input"] == {"a": 2, "b": 40}
    assert part["output"] == 42
    assert DONE_TEXT in _text(assistant)

    # Two model calls: the tool-call step and the answer after the tool result.
    res = fe.execute("print(len(script.requests))").check()
    assert res.stdout.strip() == "2"


def test_unknown_agent_prints_one_line(frontend: FakeFrontend) -> None:
    fe = frontend
    fe.execute("%load_ext think_nb").check()
    res = fe.execute("%think Nope")
    out = (res.stdout + res.stderr).strip()
    assert not res.errors, "a user error must not show a traceback"
    assert "Traceback" not in out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Nope" in lines[0], out


def _tool_part(message: dict, name: str) -> dict | None:
    return next((p for p in message.get("parts", []) if p.get("type") == f"tool-{name}"), None)


def _text(message: dict) -> str:
    return "".join(p.get("text", "") for p in message.get("parts", []) if p.get("type") == "text")


def test_a_usage_error_shows_its_message_not_a_traceback(frontend: FakeFrontend) -> None:
    """issue 27: a UserError in a cell (approving a call that is no longer waiting) is its one
    line; any other exception keeps its traceback; `%xmode Verbose` brings the traceback back."""
    fe = frontend
    fe.execute("%load_ext think_nb").check()
    raise_it = "from think_nb.errors import UserError\ndef deep():\n    raise UserError('Do X instead.')\ndeep()"
    [error] = fe.execute(raise_it).errors
    assert (error["ename"], error["evalue"]) == ("UserError", "Do X instead.")
    shown = "\n".join(error["traceback"])
    assert "Do X instead." in shown and "deep()" not in shown
    [other] = fe.execute("def deep():\n    raise ValueError('boom')\ndeep()").errors
    assert "deep()" in "\n".join(other["traceback"])
    fe.execute("%xmode Verbose").check()
    [verbose] = fe.execute(raise_it).errors
    assert "deep()" in "\n".join(verbose["traceback"])
