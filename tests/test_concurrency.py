"""`message_concurrency` with three overlapping submissions, and clear's invalidation (Think §4.10)."""

import asyncio

from agents import eventually, scripted_agent, streamed, texts
from think_nb.testing import ScriptedModel as S
from think_nb.turns.result import SKIPPED


async def three_overlapping(policy, delay: float = 0.01):
    script = S([[S.text("reply-1", chunk_size=1)], [S.text("reply-2")], [S.text("reply-3")]], delay=delay)
    responses = []
    chunks: list[str] = []
    agent = scripted_agent(script, name=str(policy), message_concurrency=policy, on_chunk=streamed(chunks),
                           on_chat_response=lambda self, r: responses.append(r.status))
    tasks = [agent.submit("m1")]
    await eventually(lambda: "text-delta" in chunks, what="m1 streams")  # when m2 and m3 arrive
    tasks += [agent.submit("m2"), agent.submit("m3")]
    results = await asyncio.gather(*tasks)
    await agent.wait_until_stable(timeout=5)
    return agent, script, [r.status for r in results], responses


async def test_queue_runs_every_submission_in_order() -> None:
    agent, _, statuses, responses = await three_overlapping("queue")
    assert statuses == responses == ["completed"] * 3
    assert texts(agent) == [("user", "m1"), ("assistant", "reply-1"), ("user", "m2"), ("assistant", "reply-2"),
                            ("user", "m3"), ("assistant", "reply-3")]


async def test_latest_and_merge_answer_all_overlapping_messages_in_one_turn() -> None:
    for policy in ("latest", "merge"):
        agent, script, statuses, responses = await three_overlapping(policy)
        assert statuses == ["completed", "skipped", "completed"], policy
        assert responses == ["completed", "completed"], policy  # superseded: no on_chat_response
        assert texts(agent) == [("user", "m1"), ("assistant", "reply-1"), ("user", "m2"), ("user", "m3"),
                                ("assistant", "reply-2")], policy
        assert [m["content"] for m in script.requests[1]["messages"][1:]] == ["m1", "reply-1", "m2", "m3"]


async def test_drop_rejects_overlapping_submissions_without_storing_them() -> None:
    agent, _, statuses, responses = await three_overlapping("drop")
    assert statuses == ["completed", "skipped", "skipped"]
    assert responses == ["completed"]
    assert texts(agent) == [("user", "m1"), ("assistant", "reply-1")]


async def test_debounce_waits_after_the_last_overlapping_submission() -> None:
    script = S([[S.text("first")], [S.text("batched")]], delay=0.001)
    agent = scripted_agent(script, message_concurrency={"strategy": "debounce", "debounce_ms": 200})
    loop = asyncio.get_running_loop()
    first = agent.submit("m1")
    await asyncio.sleep(0)
    second = agent.submit("m2")
    await asyncio.sleep(0.1)  # a gap shorter than debounce_ms between the overlapping submissions
    third = agent.submit("m3")
    sent_third = loop.time()
    results = await asyncio.gather(first, second, third)
    assert [r.status for r in results] == ["completed", "skipped", "completed"]
    assert texts(agent) == [("user", "m1"), ("assistant", "first"), ("user", "m2"), ("user", "m3"),
                            ("assistant", "batched")]
    assert loop.time() - sent_third >= 0.2  # the surviving turn waited debounce_ms after its submission


async def test_programmatic_turns_are_never_merged_or_dropped() -> None:
    script = S([[S.text("a")], [S.text("b")]], delay=0.005)
    agent = scripted_agent(script, message_concurrency="drop")
    msgs = [[{"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": f"p{n}"}]}] for n in (1, 2)]
    results = await asyncio.gather(*(agent.save_messages(m) for m in msgs))
    assert [r.status for r in results] == ["completed", "completed"]


async def test_clear_skips_queued_turns() -> None:
    script = S([[S.text("x" * 50, chunk_size=1)], [S.text("never")]], delay=0.01)
    chunks: list[str] = []
    agent = scripted_agent(script, on_chunk=streamed(chunks))
    first, second = agent.submit("a"), agent.submit("b")
    await eventually(lambda: "text-delta" in chunks, what="the first turn streams")
    agent.clear_messages()
    assert [r.status for r in await asyncio.gather(first, second)] == ["aborted", "skipped"]
    assert agent.messages == [] and len(script.requests) == 1
    script.steps[:] = [[S.text("fresh")]]
    assert (await agent.send("after clear")).status == "completed"  # post-clear submits run normally
    assert texts(agent) == [("user", "after clear"), ("assistant", "fresh")]


async def test_a_skipped_turn_says_why() -> None:
    script = S([[S.text("reply-1", chunk_size=1)]], delay=0.01)
    chunks: list[str] = []
    agent = scripted_agent(script, name="why", message_concurrency="drop", on_chunk=streamed(chunks))
    first = agent.submit("m1")
    await eventually(lambda: "text-delta" in chunks, what="m1 streams")
    dropped = await agent.submit("m2")
    assert (dropped.status, dropped.reason) == ("skipped", SKIPPED["dropped"])
    assert (await first).reason is None
