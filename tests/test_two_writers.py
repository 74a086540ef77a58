"""Two processes writing one agent (issue 12 item 7).

Semantics (think_nb.conversation / think_nb.store.messages.append_to_leaf): every append chains
onto the leaf read inside its write transaction, so both writers' turns stay on one branch in
commit order; a writer's in-memory branch catches up when it appends or starts a turn. A second
live process never settles the first one's running turn as interrupted (think_nb.store.owners).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from pathlib import Path

from agents import eventually
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.testing import ScriptedModel as S

CHILD = Path(__file__).with_name("two_writers_child.py")
TURNS = 50


def text_of(message: dict) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")


async def test_two_processes_fifty_turns_each_stay_on_one_branch(tmp_path: Path) -> None:
    db, barrier = tmp_path / "shared.sqlite", tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    procs = [await asyncio.create_subprocess_exec(sys.executable, str(CHILD), str(db), tag, str(TURNS), str(barrier),
                                                  env=env, stderr=subprocess.PIPE) for tag in ("A", "B")]
    outcomes = [await asyncio.wait_for(p.communicate(), 300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err.decode()[-2000:] for _, err in outcomes]

    class Shared(Think):
        hydration_limit = None

    agent = Shared("one", db=db)
    branch = agent.messages
    assert runtime_of(agent).store.messages.count() == 4 * TURNS  # every stored message is on the branch: no fork
    assert len(branch) == 4 * TURNS
    texts = [text_of(m) for m in branch]
    for tag in ("A", "B"):  # each writer's messages in its own order, every reply after its question
        users = [t for t, m in zip(texts, branch, strict=True) if m["role"] == "user" and t.startswith(tag)]
        replies = [t for t, m in zip(texts, branch, strict=True) if m["role"] == "assistant" and t.endswith(
            tuple(f"{tag} {i}" for i in range(TURNS))) and t.startswith(f"reply {tag}")]
        assert users == [f"{tag} {i}" for i in range(TURNS)]
        assert replies == [f"reply {tag} {i}" for i in range(TURNS)]
        for i in range(TURNS):
            assert texts.index(f"{tag} {i}") < texts.index(f"reply {tag} {i}")
    writers = [t.removeprefix("reply ")[0] for t in texts]
    assert sum(a != b for a, b in itertools.pairwise(writers)) > 2, "the two writers' turns never interleaved"
    turns = agent.turns()
    assert len(turns) == 2 * TURNS and {t["status"] for t in turns} == {"completed"}


async def test_a_live_second_process_leaves_the_first_ones_running_turn_alone(tmp_path: Path) -> None:
    db = tmp_path / "live.sqlite"
    script = S([[S.text("partial reply "), S.stall()], [S.text("done")]])

    class Owner(Think):
        def get_model(self) -> str:
            return script.model

    first = Owner("one", db=db)
    task = asyncio.ensure_future(first.send("hello"))
    await eventually(lambda: any(t["status"] == "running" for t in first.turns()))
    code = ("import sys; from think_nb import Think\n"
            "class Owner(Think): pass\n"
            "a = Owner('one', db=sys.argv[1])\n"
            "print(sorted(t['status'] for t in a.turns()), len(a.messages))\n")
    other = await asyncio.create_subprocess_exec(sys.executable, "-c", code, str(db), stdout=subprocess.PIPE,
                                                 env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    out, _ = await asyncio.wait_for(other.communicate(), 120)
    # the other process sees the turn running and does not settle it as interrupted
    assert other.returncode == 0 and out.decode().strip() == "['running'] 1"
    first.abort_request(first.turns()[-1]["request_id"])
    result = await task
    assert result.status == "aborted"
    assert [t["status"] for t in first.turns()] == ["aborted"]
