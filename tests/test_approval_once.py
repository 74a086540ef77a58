"""An approval is used once (issue 28 §2): a granted approval is consumed when its call starts
(`think_nb.store.approvals.Approvals.claim`), so a gated tool never runs twice for one approval —
not when its part is set back to `approval-responded` (by hand in the SQLite file; the trust
boundary refuses it through `save_messages`, `import_messages` and a panel frame), and not when the
kernel is SIGKILLed while the approved call runs and the turn is recovered with continuation. The
tool appends a line to a file for every run: exactly one line in every path.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from agents import eventually
from helpers_comm import from_js
from panels import chat_request
from test_sigkill import gone
from think_nb import RecoveryDecision, Think, tool
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S
from think_nb.turns.repair import INTERRUPTED_TEXT, USED_TEXT

CHILD = Path(__file__).with_name("approval_child.py")


def runs(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def once_class(count: Path, gated: bool = True, recover: bool = False, calls: bool = True) -> type[Think]:
    """The agent class: `danger` appends a line to `count` per run; the model calls it once
    (`calls`; else it only answers: the call is a dead process's), then answers. `recover`: a dead
    process's turn is continued (`on_chat_recovery`)."""

    @tool(needs_approval=gated)
    def danger(path: str) -> str:
        """Do something that must not happen twice."""
        with count.open("a") as f:
            f.write(f"ran {path}\n")
        return "done"

    call = [] if not calls else [[S.tool_call("danger", {"path": "/data"}, id="c-danger")]]
    script = S(call + [[S.text("Done.")] for _ in range(6)])

    class Once(Think):
        include_workspace_tools = False

        def get_model(self) -> str:
            return script.model

        def get_tools(self) -> list:
            return [danger]

        def on_chat_recovery(self, ctx: Any) -> Any:
            return RecoveryDecision(continue_=True) if recover else None

    return Once


def part_of(agent: Think, call_id: str = "c-danger") -> dict:
    return next(p for m in agent.messages for p in m["parts"] if p.get("toolCallId") == call_id)


async def approved_and_run(tmp_path: Path) -> tuple[Think, Path]:
    count = tmp_path / "count.txt"
    agent = once_class(count)("once", db=tmp_path / "a.sqlite")
    await agent.send("go")
    task = agent.approve("c-danger")
    assert task is not None
    assert (await task).status == "completed"
    assert runs(count) == 1 and part_of(agent)["state"] == "output-available"
    return agent, count


def set_back(agent: Think) -> dict:
    """The message holding the call, with its part set back to `approval-responded` (approved)."""
    message = next(m for m in agent.messages if any(p.get("toolCallId") == "c-danger" for p in m["parts"]))
    edited = json.loads(json.dumps(message))
    for part in edited["parts"]:
        if part.get("toolCallId") == "c-danger":
            part["state"] = "approval-responded"
            part.pop("output", None)
    return edited


async def test_a_part_set_back_to_approval_responded_in_the_file_does_not_run_again(tmp_path: Path) -> None:
    agent, count = await approved_and_run(tmp_path)
    edited = set_back(agent)
    store = runtime_of(agent).store.messages
    store.update(edited)  # by hand, in the SQLite file: bypasses every API
    store.set_leaf(edited["id"])  # and make it the last message, as a continuation needs
    reopened = type(agent)("once", db=agent.db_path)
    assert part_of(reopened)["state"] == "approval-responded"
    result = await reopened.continue_last_turn()
    assert result.status == "completed"
    assert runs(count) == 1
    part = part_of(reopened)
    assert part["state"] == "output-error" and part["errorText"] == USED_TEXT
    await type(agent)("once", db=agent.db_path).continue_last_turn()  # and again, in yet another agent
    assert runs(count) == 1


@pytest.mark.usefixtures("recording_comm")
async def test_no_entry_path_sets_a_used_approval_back(tmp_path: Path) -> None:
    agent, count = await approved_and_run(tmp_path)
    edited = {**set_back(agent), "id": "a-copy"}  # a new id, so the id rule is not what refuses it
    with pytest.raises(UserError, match="tool part"):
        await agent.save_messages([edited])
    back = set_back(agent)
    result = await agent.save_messages(lambda current: [back if m["id"] == back["id"] else m for m in current])
    assert result.status == "error" and "different message" in (result.error or "")
    fresh = type(agent)("once", db=tmp_path / "b.sqlite")
    with pytest.raises(UserError, match="approval-responded"):
        fresh.import_messages([back if m["id"] == back["id"] else m for m in agent.messages])
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r-edit", edited))
    await agent.wait_until_stable(timeout=30)
    panel.close()
    for reopened in (type(agent)("once", db=agent.db_path), fresh):
        await reopened.continue_last_turn()
    assert runs(count) == 1
    assert part_of(type(agent)("once", db=agent.db_path))["state"] == "output-available"


async def test_a_new_approval_request_is_a_new_decision(tmp_path: Path) -> None:
    """Used once per decision, not per call id: the ledger row of a new decision starts unused."""
    agent, _ = await approved_and_run(tmp_path)
    ledger = runtime_of(agent).store.approvals
    assert ledger.used("c-danger")
    assert ledger.claim("c-danger", {"path": "/data"}) == "used"
    ledger.record("c-danger", "ap-2", True, None, {"path": "/data"})
    assert not ledger.used("c-danger")
    assert ledger.claim("c-danger", {"path": "/data"}) == ({"path": "/data"}, False)
    assert ledger.claim("c-danger", {"path": "/data"}) == "used"
    assert ledger.claim("c-other", {"path": "/data"}) == "none"


@pytest.mark.parametrize("recover", [True, False], ids=["continued", "next message"])
@pytest.mark.parametrize("gated", [True, False], ids=["gated", "ungated"])
async def test_sigkill_while_the_call_runs_then_recovery_never_runs_it_twice(tmp_path: Path, gated: bool,
                                                                             recover: bool) -> None:
    """Killed while its (approved) call runs: the gated call is settled like an ungated one, an
    `output-error` saying it started once, whether the recovered turn is continued
    (`RecoveryDecision(continue_=True)`) or the user just sends the next message."""
    db, count = tmp_path / "k.sqlite", tmp_path / "count.txt"
    child = await asyncio.create_subprocess_exec(sys.executable, str(CHILD), str(db), str(count), "1" if gated else "0")
    try:
        await eventually(lambda: runs(count) == 1 or child.returncode is not None, timeout=120,
                         what="the child's call running")
        assert child.returncode is None, "the child ended before its call ran"
        os.kill(child.pid, signal.SIGKILL)
        await child.wait()
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    assert child.returncode == -signal.SIGKILL and gone(child.pid)
    agent = once_class(count, gated=gated, recover=recover, calls=False)("once", db=db)
    if recover:
        assert agent.recovery_task is not None
        assert [r.status for r in await agent.recovery_task] == ["completed"]
    else:
        assert (await agent.send("next")).status == "completed"
    assert await agent.wait_until_stable(timeout=60)
    assert runs(count) == 1
    part = part_of(agent)
    assert part["state"] == "output-error"
    assert part["errorText"] == (USED_TEXT if gated else INTERRUPTED_TEXT)
    result = await agent.continue_last_turn()  # and nothing later runs it either
    assert result.status in ("completed", "skipped")
    assert runs(count) == 1
    assert part_of(type(agent)("once", db=db))["state"] == "output-error"
