"""The current branch in memory and in SQLite (think_nb.conversation)."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from think_nb.conversation import Conversation
from think_nb.messages.final import is_final
from think_nb.store import AgentStore, open_database

_files = itertools.count()


def user(n: int) -> dict:
    return {"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": f"question {n}"}]}


def assistant(n: int, state: str) -> dict:
    part: dict = {"type": "tool-add", "toolCallId": f"c{n}", "state": state, "input": {"a": n}}
    if state == "output-available":
        part["output"] = n
    return {"id": f"a{n}", "role": "assistant", "parts": [{"type": "step-start"}, part]}


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "turn", "gated", "settle", "save_old", "replace", "rewrite",
                                           "rewind", "reload", "clear"]), st.integers(0, 1000)), max_size=30))
def test_the_branch_in_memory_is_the_stored_branch_after_any_change(tmp_path_factory, ops: list) -> None:
    """Property: after any sequence of changes (appends, a turn's saves, a gated call settled in
    place as `approve` does, an older message saved or replaced by a new version, a rewrite,
    a rewind, a reload, a clear), the branch in memory is the stored branch, a saved message id
    is never stored twice, and `unfinished()` (which skips the final messages it counted before)
    names exactly the messages that are not final."""
    db = open_database(tmp_path_factory.mktemp("conv") / f"c{next(_files)}.sqlite")
    conversation = Conversation(AgentStore(db, "T:c", "T", "c"), hydration_limit=None)
    for n, (op, k) in enumerate(ops):
        branch = conversation.messages
        if op == "user":
            conversation.append(user(n))
        elif op in ("turn", "gated"):
            conversation.append(user(n))
            conversation.save(assistant(n, "input-available"))  # the turn's first save appends
            conversation.save(assistant(n, "output-available" if op == "turn" else "approval-requested"))
        elif op == "settle":  # approve + run change the stored part in place
            for message in conversation.unfinished():
                for part in message["parts"]:
                    if part.get("state") == "approval-requested":
                        part.update(state="output-available", output=k)
                conversation.store.messages.update(message)
        elif op == "save_old" and branch:
            old = branch[k % len(branch)]
            conversation.save({**old, "metadata": {"saved": k}})
        elif op == "replace" and branch:
            old = branch[k % len(branch)]  # an odd k reopens it: a final message may be replaced by one that is not
            parts = [{**p, "state": "approval-requested"} if k % 2 and "toolCallId" in p else p for p in old["parts"]]
            conversation.replace({**old, "parts": parts, "metadata": {"replaced": k}})
        elif op == "rewrite":
            conversation.rewrite(lambda m, k=k: {**m, "metadata": {"rewritten": k}} if m["role"] == "user" else None)
        elif op == "rewind":
            conversation.rewind_to_last_user()
        elif op == "reload":
            conversation.reload()
        elif op == "clear":
            conversation.clear()
        stored = conversation.store.messages.branch()
        assert conversation.messages == stored, op
        assert len({m["id"] for m in stored}) == len(stored)
        assert conversation.unfinished() == [m for m in conversation.messages if not is_final(m)], op
    db.close()


def test_saving_an_older_message_updates_it_where_it_is(tmp_path: Path) -> None:
    conversation = Conversation(AgentStore(open_database(tmp_path / "c.sqlite"), "T:c", "T", "c"), None)
    for n in range(3):
        conversation.append(user(n))
        conversation.save(assistant(n, "output-available"))
    conversation.save({**assistant(0, "output-available"), "metadata": {"edited": True}})
    assert [m["id"] for m in conversation.messages] == ["u0", "a0", "u1", "a1", "u2", "a2"]
    assert conversation.messages[1]["metadata"] == {"edited": True}
    assert conversation.store.messages.branch() == conversation.messages
