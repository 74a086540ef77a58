"""`TranscriptMirror` (think_nb/panel/transcript.py): the patch from what a panel's views heard to the
branch now, its older pages, and the header's usage totals (the same rules as js/src/usage.ts, checked
against the fixture js/test/transcript.test.ts reads too). Over a real kernel:
tests/kernel/test_transcript_kernel.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from panels import apply_patch
from think_nb.panel import protocol
from think_nb.panel.transcript import WINDOW, TranscriptMirror, usage_totals

USAGE_CASES = json.loads((Path(__file__).parent / "fixtures" / "usage_totals.json").read_text())


def msg(i: int, text: str = "", state: str = "done") -> dict:
    return {"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
            "parts": [{"type": "text", "text": text or f"message {i}", "state": state}]}


def chain(n: int) -> list[dict]:
    return [msg(i) for i in range(n)]


@pytest.mark.parametrize("case", USAGE_CASES, ids=lambda c: c["name"])
def test_usage_totals_follow_the_panels_rules(case: dict) -> None:
    assert usage_totals(case["messages"]) == case["expected"]


def test_nothing_changed_sends_nothing_and_an_append_sends_the_new_messages_only() -> None:
    branch = chain(100)
    mirror = TranscriptMirror(branch)
    assert mirror.patch(list(branch)) is None
    assert mirror.patch(copy.deepcopy(branch)) is None  # re-read from SQLite: new objects, same content
    grown = [*branch, msg(100), msg(101)]
    patch = mirror.patch(grown)
    assert patch is not None and protocol.parse_frame(json.loads(json.dumps(patch))) == patch
    assert (patch["base"], patch["rev"], patch["after"], patch["messages"], patch["updated"]) == (
        0, 1, "m99", [msg(100), msg(101)], [])
    view = apply_patch(branch[-WINDOW:], patch)
    assert view == grown[-len(view):] and len(view) == WINDOW + 2


def test_a_message_changed_in_place_is_sent_again() -> None:
    """The engine moves an open part on in place (an approval): the mirror kept a copy of it."""
    asking = {"id": "a1", "role": "assistant", "parts": [{"type": "tool-rm", "toolCallId": "c1",
                                                         "state": "approval-requested", "input": {}}]}
    branch = [msg(0), asking]
    mirror = TranscriptMirror(branch)
    asking["parts"][0]["state"] = "approval-responded"  # same object, changed
    patch = mirror.patch(branch)
    assert patch is not None and (patch["after"], patch["messages"], patch["updated"]) == ("a1", [], [asking])


def test_a_branch_switch_keeps_the_shared_messages_and_a_clear_keeps_none() -> None:
    branch = chain(10)
    mirror = TranscriptMirror(branch)
    other = [*branch[:6], msg(50), msg(51)]
    patch = mirror.patch(other)
    assert patch is not None and (patch["after"], [m["id"] for m in patch["messages"]]) == ("m5", ["m50", "m51"])
    assert apply_patch(branch, patch) == other
    cleared = mirror.patch([])
    assert cleared is not None and (cleared["after"], cleared["messages"], cleared.get("more")) == (None, [], None)


def test_a_switch_far_back_sends_the_newest_window_instead() -> None:
    """Kept up to a message older than the window, a view that holds only the window would show less."""
    branch = chain(200)
    mirror = TranscriptMirror(branch)
    switched = [*branch[:100], msg(500)]
    patch = mirror.patch(switched)
    assert patch is not None and (patch["after"], patch["messages"], patch["more"]) == (None, switched[-WINDOW:], True)


def test_pages_come_from_memory_then_from_sqlite() -> None:
    branch = chain(150)
    mirror = TranscriptMirror(branch)
    asked: list[tuple[str, int]] = []

    def read_older(before: str, n: int) -> list[dict]:
        asked.append((before, n))
        return [msg(-3), msg(-2), msg(-1)]

    page = mirror.page(branch, "m90", 50, "v", read_older)
    assert (page["messages"], page["more"], asked) == (branch[40:90], True, [])
    page = mirror.page(branch, "m30", 50, "v", read_older, older=True)
    assert (page["messages"], page["more"]) == (branch[:30], True)
    page = mirror.page(branch, "m0", 50, "v", read_older)
    assert (page["messages"], page["more"], asked) == ([msg(-3), msg(-2), msg(-1)], False, [("m0", 51)])
    assert protocol.parse_frame(json.loads(json.dumps(page))) == page


def test_usage_goes_with_a_patch_only_when_it_changed() -> None:
    branch = chain(4)
    mirror = TranscriptMirror(branch)
    assert mirror.trait(branch)[1] == {"rev": 0, "more": False, "usage": usage_totals(branch)}
    patch = mirror.patch([*branch, msg(4)])
    assert patch is not None and "usage" not in patch
    priced = {**msg(5), "metadata": {"usage": {"total_tokens": 9, "source": "reported"}, "cost_usd": 0.5}}
    patch = mirror.patch([*branch, msg(4), priced])
    assert patch is not None and patch["usage"] == {"turns": 1, "tokens": 9, "unknown": 0, "cost": 0.5, "priced": 1}
