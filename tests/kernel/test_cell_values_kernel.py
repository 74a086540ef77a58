"""What a person sees in a notebook cell, in a real kernel over ZMQ (issue 27 §9, §10).

- A turn paused on an approval, left as a cell's value, says that it waits; `agent.approve(id)`
  left as a cell's value reads as a turn (`<turn req_… running: await it for its TurnResult>`),
  not `<Task pending name=… coro=…>`, and awaiting it in a later cell gives the continuation.
- What the quickstart and the README say about blocking cells is what ipykernel does: while a
  cell runs `time.sleep`, no frame of a streaming reply reaches the panel; while a cell runs
  `await asyncio.sleep`, the reply keeps streaming.

The agents are scripted; the panel's comm frames are read on IOPub as JupyterLab receives them.
"""

from __future__ import annotations

import re

import nbformat

from harness import REPO_ROOT, FakeFrontend
from test_magic_kernel import is_chat_response, show_panel

APPROVAL = '''
from think_nb import Think, tool
from think_nb.testing import ScriptedModel as S

@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"

approval_script = S([[S.text("Deleting."), S.tool_call("delete_file", {"path": "notes.txt"})], [S.text("Gone.")]])

class Careful(Think):
    def get_model(self):
        return approval_script.model
    def get_tools(self):
        return [delete_file]

careful = Careful("careful")
'''


def value_of(fe: FakeFrontend, code: str) -> str:
    """The text/plain of the cell's value (its `execute_result`), as the notebook shows it."""
    res = fe.execute(code).check()
    results = [m["content"] for m in res.msgs if m["msg_type"] == "execute_result"]
    assert len(results) == 1, f"{code!r} showed no value: {res.stdout}{res.stderr}"
    return results[0]["data"]["text/plain"]


def test_a_paused_turn_and_approve_read_as_turns_in_a_cell(frontend: FakeFrontend) -> None:
    frontend.execute("%load_ext think_nb").check()
    frontend.execute(APPROVAL).check()
    paused = value_of(frontend, 'paused = await careful.send("Delete notes.txt")\npaused')
    assert re.fullmatch(r"TurnResult\(req_\w+: completed, waiting for 1 approval \(delete_file\)\)", paused), paused
    shown = value_of(frontend, "careful.approve(paused.waiting[0])")
    assert re.fullmatch(r"<turn req_\w+ running: await it for its TurnResult>", shown), shown
    assert "Task pending" not in shown and "coro=" not in shown
    frontend.execute("await careful.wait_until_stable(timeout=30)").check()
    texts = value_of(frontend, "[p['text'] for m in careful.messages for p in m['parts'] if p['type'] == 'text']")
    assert texts == "['Delete notes.txt', 'Deleting.', 'Gone.']", texts
    assert value_of(frontend, "careful.pending_approvals()") == "[]"


SLOW = '''
import asyncio, time
from think_nb import Think
from think_nb.testing import ScriptedModel as S

slow_script = S([[S.text("word " * 60, chunk_size=5)]] * 2, delay=0.06)  # 60 chunks over ~4 s

class Slow(Think):
    def get_model(self):
        return slow_script.model

slow = Slow("slow")
'''


def frames_during(fe: FakeFrontend, comm_id: str, start: int, window: str) -> tuple[int, int]:
    """(chat-response frames the kernel sent while the cell ran its wait, all frames of the turn):
    the cell prints the wall-clock bounds of its wait; each IOPub message carries its send time."""
    t0, t1 = (float(x) for x in window.split())
    sent = [m["header"]["date"].timestamp() for m in fe.log[start:]
            if m["msg_type"] == "comm_msg" and m["content"].get("comm_id") == comm_id
            and m["content"]["data"].get("method") == "custom" and is_chat_response(m["content"]["data"]["content"])]
    return sum(t0 + 0.05 < t < t1 - 0.05 for t in sent), len(sent)


def wait_for_the_reply_to_end(fe: FakeFrontend) -> None:
    fe.execute("await slow.wait_until_stable(timeout=60)").check()
    fe.drain()


def test_a_blocking_cell_holds_a_streaming_reply_and_an_awaiting_one_does_not(frontend: FakeFrontend) -> None:
    """§10: the quickstart says so next to "you can keep working"; this is what it describes."""
    frontend.execute("%load_ext think_nb").check()
    frontend.execute(SLOW).check()
    comm_id = show_panel(frontend, "slow")

    start = len(frontend.log)
    frontend.execute("%%think slow\nTell me many words.").check()
    window = frontend.execute("t0 = time.time(); time.sleep(2.5); print(t0, time.time())").check().stdout
    wait_for_the_reply_to_end(frontend)
    during, total = frames_during(frontend, comm_id, start, window)
    assert total > 5, "the reply streamed in many frames"
    assert during == 0, f"{during} frames reached the panel while time.sleep blocked the kernel"

    start = len(frontend.log)
    frontend.execute("%%think slow\nMore words, please.").check()
    window = frontend.execute("t0 = time.time(); await asyncio.sleep(2.5); print(t0, time.time())").check().stdout
    wait_for_the_reply_to_end(frontend)
    during, total = frames_during(frontend, comm_id, start, window)
    assert during >= 5, f"only {during} of {total} frames streamed while the cell awaited"


def test_the_quickstart_says_so_next_to_you_can_keep_working() -> None:
    notebook = nbformat.read(REPO_ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    prose = next(c.source for c in notebook.cells if c.cell_type == "markdown" and "keep working" in c.source)
    assert "time.sleep(25)" in prose and "holds the streaming reply" in prose and "await asyncio.sleep(25)" in prose
    readme = (REPO_ROOT / "README.md").read_text()
    near = readme[readme.index("keep working"):][:800]
    assert "time.sleep(25)" in near and "await asyncio.sleep(25)" in near

