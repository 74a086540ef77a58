"""Frames: Python parse_frame against the golden frames shared with js/test/protocol.test.ts."""

from __future__ import annotations

import json
import logging
import re
import typing
from pathlib import Path

import pytest

from think_nb.panel import protocol

FRAMES = Path(__file__).parent / "fixtures" / "frames"
GOOD = sorted(p for p in FRAMES.glob("*.json") if not p.name.startswith("malformed-"))
BAD = sorted(FRAMES.glob("malformed-*.json"))
ALL_TYPES = protocol.PANEL_FRAME_TYPES | protocol.KERNEL_FRAME_TYPES


def load(path: Path) -> object:
    return json.loads(path.read_text())


def test_there_is_a_golden_frame_for_every_type() -> None:
    assert {p.stem.split("--")[0] for p in GOOD} == ALL_TYPES
    assert len(BAD) >= 5


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_golden_frame_parses(path: Path) -> None:
    raw = load(path)
    frame = protocol.parse_frame(raw)
    assert frame == raw
    assert frame is not None and frame["type"] == path.stem.split("--")[0]


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_malformed_frame_is_none_with_logged_reason(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="think_nb.panel.protocol"):
        assert protocol.parse_frame(load(path)) is None
    assert "ignored malformed frame" in caplog.text


@pytest.mark.parametrize("raw", [None, 3, "chat_clear", {"type": None}, {"type": 7}])
def test_parse_frame_never_raises(raw: object) -> None:
    assert protocol.parse_frame(raw) is None


def test_builders_round_trip() -> None:
    frame = protocol.use_chat_response("r1", [{"type": "start"}], done=True, replay=True)
    assert frame == {
        "type": protocol.USE_CHAT_RESPONSE,
        "id": "r1",
        "chunks": [{"type": "start"}],
        "done": True,
        "replay": True,
    }
    for built in (
        frame,
        protocol.stream_resuming("r1"),
        protocol.stream_resume_none(),
        protocol.chat_clear(),
        protocol.session_frame({"phase": "idle", "tokenEstimate": 3, "tokenThreshold": None, "session": "",
                                "blocks": []}, [{"id": "", "name": "default", "active": True}]),
    ):
        assert protocol.parse_frame(json.loads(json.dumps(built))) == built


def test_no_frame_type_literal_outside_protocol_module() -> None:
    """Frame types are spelled once (protocol.py); everything else uses the constants."""
    package = Path(protocol.__file__).parent
    # "session" is also an ordinary data key (a search hit's session, Session.status()), so
    # for it only frame-like uses count: `"type": "session"`, `== "session"`, `type="session"`.
    words = {protocol.SESSION}
    strict = [rf"[\"']{t}[\"']" for t in ALL_TYPES - words]
    framed = [rf"(?:[\"']type[\"']\s*:|==|!=|\btype\s*=)\s*[\"']{t}[\"']" for t in words]
    pattern = re.compile("|".join(strict + framed))
    offenders = [
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        # names.py lists Think's method names (`mcp_servers`), store/ table names (`think_mcp_servers`)
        if p.name not in ("protocol.py", "names.py") and p.parent.name != "store" and pattern.search(p.read_text())
    ]
    assert offenders == []


# --- the shared spec (think_nb/panel/protocol_spec.json) ----------------------------------------

SPEC_FILE = Path(protocol.__file__).with_name("protocol_spec.json")
FRAME_TYPEDDICTS = (
    protocol.UseChatRequest, protocol.ChatRequestCancel, protocol.ChatClear, protocol.ToolApproval,
    protocol.ToolResult, protocol.StreamResumeRequest, protocol.StreamResumeAck, protocol.SessionSwitch,
    protocol.UseChatResponse, protocol.MessageUpdated, protocol.StreamResuming, protocol.StreamResumeNone,
    protocol.SessionFrame, protocol.ContinueRequest, protocol.SwitchBranch,
    protocol.StreamPending, protocol.ChatRecovering, protocol.McpServersFrame, protocol.ToolUndo,
    protocol.TranscriptRequest, protocol.TranscriptPatch, protocol.TranscriptPage,
)


def spec_file() -> dict:
    return json.loads(SPEC_FILE.read_text())


def test_frame_constants_are_the_specs_frame_types() -> None:
    frames = spec_file()["frames"]
    assert {name: getattr(protocol, name) for name in frames} == frames
    assert {frames[n] for n in spec_file()["panel_frames"]} == protocol.PANEL_FRAME_TYPES
    assert {frames[n] for n in spec_file()["kernel_frames"]} == protocol.KERNEL_FRAME_TYPES
    assert set(frames.values()) == protocol.PANEL_FRAME_TYPES | protocol.KERNEL_FRAME_TYPES


def test_every_frame_typeddict_names_a_spec_frame_type() -> None:
    """The `type: Literal[...]` of each frame TypedDict (static typing) matches the spec."""
    literals = [typing.get_args(typing.get_type_hints(td)["type"]) for td in FRAME_TYPEDDICTS]
    assert all(len(args) == 1 for args in literals)
    assert sorted(args[0] for args in literals) == sorted(spec_file()["frames"].values())


def test_statuses_come_from_the_spec_and_the_view_hub_uses_only_them() -> None:
    import ast
    import inspect
    import textwrap

    from think_nb.panel import status
    from think_nb.panel.hub import ViewHub

    assert tuple(spec_file()["statuses"]) == protocol.STATUSES
    returned: set[str] = set()
    for method in (status._status, ViewHub._waiting_for_user):
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
        for ret in (n for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None):
            returned |= {c.value for c in ast.walk(ret.value)
                         if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    assert {"ready", "streaming", "paused", "awaiting-approval"} <= returned  # the walk found the literals
    assert returned <= set(protocol.STATUSES), returned - set(protocol.STATUSES)


def test_the_chat_panels_synced_traits_are_the_specs_traits() -> None:
    import anywidget

    from think_nb.panel.widget import ChatPanel

    own = set(ChatPanel.class_traits(sync=True)) - set(anywidget.AnyWidget.class_traits(sync=True))
    assert own == set(protocol.TRAITS)
    assert tuple(spec_file()["traits"].values()) == protocol.TRAITS

