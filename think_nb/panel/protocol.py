"""Frames: the messages between the kernel and the chat panel.

A *frame* is one anywidget custom message (``widget.send`` / ``model.send``). Frames
carry the same meaning as Think's ``cf_agent_*`` WebSocket frames, without the prefix.

The names both sides share are spelled once, in ``protocol_spec.json`` (shipped in the
package; the panel's ``js/src/spec.ts`` imports the same file): the frame types (the
constants below, plus ``PANEL_FRAME_TYPES`` / ``KERNEL_FRAME_TYPES``), the panel
``STATUSES`` and the synced ``TRAITS`` of :class:`think_nb.panel.widget.ChatPanel`. Everything
else in Python uses the constants of this module. ``js/src/protocol.ts`` mirrors the frame
shapes, and both sides are checked against the golden frames in ``tests/fixtures/frames/``.
The ``Literal`` frame types of the TypedDicts below are checked against the spec by
``tests/test_protocol.py``.

The transcript: the ``messages`` trait of :class:`think_nb.panel.widget.ChatPanel` holds its newest
window when a view opens (the ``transcript`` trait its ``{rev, more}``); every change after that is a
``transcript_patch`` keyed by message id, and a view asks for older messages, or the window again, with
``transcript_request`` (answered by ``transcript_page`` / a ``transcript_patch`` with its ``probeId``);
``think_nb.panel.transcript`` says how.

Panel -> kernel: ``use_chat_request``, ``chat_request_cancel``, ``chat_clear``,
``tool_approval``, ``tool_result``, ``stream_resume_request``, ``stream_resume_ack``,
``session_switch``, ``continue_request`` (``continue_last_turn`` under request ``id``: a reply
cut at its token limit), ``switch_branch`` (``switch_branch(messageId)``: another version of a
regenerated reply), ``tool_undo`` (``undo(toolCallId)``: put back what a ``run_code`` call changed in
the kernel's namespace; ``think_nb.kernel``), ``transcript_request``. ``tool_approval`` may carry
``input``: the edited tool input (an object), validated against the tool's schema as ``approve(id, input=...)`` does.
Kernel -> panel: ``use_chat_response`` (a batch of UIMessageChunks), ``message_updated``,
``stream_resuming``, ``stream_resume_none``, ``stream_pending`` (accepted, not streaming yet),
``chat_recovering`` (recovery of a dead kernel's turns starts/ends), ``chat_clear``, ``session`` (Think's
``cf_agent_session``: the context tab's state, ``Session.status()`` plus the session list),
``mcp_servers`` (Think's ``cf_agent_mcp_servers``: the MCP servers, their state and tools),
``transcript_patch``, ``transcript_page``.

The resume handshake (Think's): a panel model that starts sends
``stream_resume_request {probeId}``; the kernel answers ``stream_resuming {id, probeId}``
per in-flight turn, or ``stream_resume_none {probeId}``; the panel that owns ``probeId``
answers ``stream_resume_ack {id, probeId}`` and the kernel sends the turn so far as one
``use_chat_response`` with ``replay: true``, then goes on live. A turn accepted but not yet
streaming answers ``stream_pending {id, probeId}`` (its chunks then arrive live). With nothing
running, the last turn's terminal outcome, when it was an error or an interruption, is replayed
the same way (``stream_resuming``, then on ack its chunks with ``done``/``error``), and
``chat_recovering {recovering: true}`` is sent while recovery runs. Frames reach every view
of a widget, so ``probeId`` says which view asked.

UIMessages and UIMessageChunks inside frames are plain AI SDK dicts; this module only
checks their outer shape (``id``/``role``/``parts`` and ``type``). Every kernel -> panel
builder returns strict JSON (``think_nb.jsonsafe.to_json_value``: no NaN/Infinity, string
keys, UTF-8-safe text), so a frame always survives the comm's ``allow_nan=False`` encoding.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, NotRequired, TypedDict, cast

from think_nb.jsonsafe import to_json_value

__all__ = [
    "CHAT_CLEAR",
    "CHAT_RECOVERING",
    "CHAT_REQUEST_CANCEL",
    "CONTINUE_REQUEST",
    "KERNEL_FRAME_TYPES",
    "MCP_SERVERS",
    "MESSAGE_UPDATED",
    "PANEL_FRAME_TYPES",
    "SESSION",
    "SESSION_SWITCH",
    "SPEC",
    "STATUSES",
    "STREAM_PENDING",
    "STREAM_RESUME_ACK",
    "STREAM_RESUME_NONE",
    "STREAM_RESUME_REQUEST",
    "STREAM_RESUMING",
    "SWITCH_BRANCH",
    "TOOL_APPROVAL",
    "TOOL_RESULT",
    "TOOL_UNDO",
    "TRAITS",
    "TRANSCRIPT_PAGE",
    "TRANSCRIPT_PATCH",
    "TRANSCRIPT_REQUEST",
    "USE_CHAT_REQUEST",
    "USE_CHAT_RESPONSE",
    "ChatClear",
    "ChatRecovering",
    "ChatRequestCancel",
    "ContinueRequest",
    "Frame",
    "KernelFrame",
    "McpServer",
    "McpServersFrame",
    "MessageUpdated",
    "PanelFrame",
    "SessionBlock",
    "SessionFrame",
    "SessionInfo",
    "SessionSwitch",
    "StreamPending",
    "StreamResumeAck",
    "StreamResumeNone",
    "StreamResumeRequest",
    "StreamResuming",
    "SwitchBranch",
    "ToolApproval",
    "ToolResult",
    "ToolUndo",
    "TranscriptPage",
    "TranscriptPatch",
    "TranscriptRequest",
    "UseChatRequest",
    "UseChatResponse",
    "chat_clear",
    "chat_recovering",
    "frame_error",
    "mcp_servers_frame",
    "message_updated",
    "parse_frame",
    "session_frame",
    "stream_pending",
    "stream_resume_none",
    "stream_resuming",
    "transcript_page",
    "transcript_patch",
    "use_chat_response",
]

_log = logging.getLogger(__name__)


def _load_spec() -> dict[str, Any]:
    """The shared names (``protocol_spec.json``, next to this module; read beside ``__file__``, not through
    ``importlib.resources``, whose import every turn would pay: the recorder imports this module)."""
    return cast("dict[str, Any]", json.loads(Path(__file__).with_name("protocol_spec.json").read_text("utf-8")))


SPEC: Final[Mapping[str, Any]] = _load_spec()
"""``protocol_spec.json``: frames, panel_frames, kernel_frames, statuses, traits."""
_FRAMES: Final[Mapping[str, str]] = SPEC["frames"]

USE_CHAT_REQUEST: Final[str] = _FRAMES["USE_CHAT_REQUEST"]
CHAT_REQUEST_CANCEL: Final[str] = _FRAMES["CHAT_REQUEST_CANCEL"]
CHAT_CLEAR: Final[str] = _FRAMES["CHAT_CLEAR"]
STREAM_RESUME_REQUEST: Final[str] = _FRAMES["STREAM_RESUME_REQUEST"]
STREAM_RESUME_ACK: Final[str] = _FRAMES["STREAM_RESUME_ACK"]
TOOL_APPROVAL: Final[str] = _FRAMES["TOOL_APPROVAL"]
TOOL_RESULT: Final[str] = _FRAMES["TOOL_RESULT"]
MESSAGE_UPDATED: Final[str] = _FRAMES["MESSAGE_UPDATED"]
USE_CHAT_RESPONSE: Final[str] = _FRAMES["USE_CHAT_RESPONSE"]
STREAM_RESUMING: Final[str] = _FRAMES["STREAM_RESUMING"]
STREAM_RESUME_NONE: Final[str] = _FRAMES["STREAM_RESUME_NONE"]
SESSION: Final[str] = _FRAMES["SESSION"]
STREAM_PENDING: Final[str] = _FRAMES["STREAM_PENDING"]
CHAT_RECOVERING: Final[str] = _FRAMES["CHAT_RECOVERING"]
SESSION_SWITCH: Final[str] = _FRAMES["SESSION_SWITCH"]
CONTINUE_REQUEST: Final[str] = _FRAMES["CONTINUE_REQUEST"]
SWITCH_BRANCH: Final[str] = _FRAMES["SWITCH_BRANCH"]
TOOL_UNDO: Final[str] = _FRAMES["TOOL_UNDO"]
MCP_SERVERS: Final[str] = _FRAMES["MCP_SERVERS"]
TRANSCRIPT_REQUEST: Final[str] = _FRAMES["TRANSCRIPT_REQUEST"]
TRANSCRIPT_PATCH: Final[str] = _FRAMES["TRANSCRIPT_PATCH"]
TRANSCRIPT_PAGE: Final[str] = _FRAMES["TRANSCRIPT_PAGE"]

STATUSES: Final[tuple[str, ...]] = tuple(SPEC["statuses"])
"""What every panel of an agent shows: ready, submitted, streaming, awaiting-approval, ..."""
TRAITS: Final[tuple[str, ...]] = tuple(SPEC["traits"].values())
"""The names of the ChatPanel widget's synced traits (``tag(sync=True)``)."""

SUBMIT_MESSAGE: Final = "submit-message"
REGENERATE_MESSAGE: Final = "regenerate-message"
OUTPUT_AVAILABLE: Final = "output-available"
OUTPUT_ERROR: Final = "output-error"

UIMessage = dict[str, Any]
"""An AI SDK UIMessage ``{id, role, parts, metadata?}`` as a plain dict."""
UIMessageChunk = dict[str, Any]
"""An AI SDK UIMessageChunk ``{type, ...}`` as a plain dict."""


class ClientToolSchema(TypedDict):
    """A tool the panel itself implements, offered to the model for one request."""

    name: str
    description: NotRequired[str]
    parameters: NotRequired[dict[str, Any]]


class UseChatRequest(TypedDict):
    """Panel -> kernel: run a turn. The new user UIMessage is ``messages[-1]``.

    ``clientTools``: tools the panel implements (Think's ``clientTools``); ``clientId``:
    the sending view's id (it becomes the view that runs client tools); ``body``: the request's
    custom body (Think's custom body fields; kept as ``lastBody`` for later continuations).
    """

    type: Literal["use_chat_request"]
    id: str
    messages: list[UIMessage]
    trigger: Literal["submit-message", "regenerate-message"]
    clientTools: NotRequired[list[ClientToolSchema]]
    clientId: NotRequired[str]
    body: NotRequired[dict[str, Any]]


class ToolApproval(TypedDict):
    """Panel -> kernel: the user approved or denied tool call ``toolCallId``; ``input``: approved
    with this edited input (e.g. ``{"code": ...}`` for ``run_code``), checked against the tool's schema."""

    type: Literal["tool_approval"]
    toolCallId: str
    approved: bool
    reason: NotRequired[str]
    input: NotRequired[dict[str, Any]]


class ToolUndo(TypedDict):
    """Panel -> kernel: undo what ``run_code`` call ``toolCallId`` changed (``agent.undo``)."""

    type: Literal["tool_undo"]
    toolCallId: str


class ToolResult(TypedDict):
    """Panel -> kernel: the result of a client tool call (``output`` or ``errorText``)."""

    type: Literal["tool_result"]
    toolCallId: str
    toolName: str
    output: NotRequired[Any]
    state: NotRequired[Literal["output-available", "output-error"]]
    errorText: NotRequired[str]


class StreamResumeAck(TypedDict):
    """Panel -> kernel: the view that asked (``probeId``) is ready for turn ``id``'s replay."""

    type: Literal["stream_resume_ack"]
    id: str
    probeId: NotRequired[str]


class MessageUpdated(TypedDict):
    """Kernel -> panel: a stored message changed (a tool result or approval was applied). The panel
    still applies it; the kernel now says so in a ``transcript_patch`` (its ``updated``)."""

    type: Literal["message_updated"]
    message: UIMessage


class ChatRequestCancel(TypedDict):
    """Panel -> kernel: abort the turn started by request ``id``."""

    type: Literal["chat_request_cancel"]
    id: str


class ChatClear(TypedDict):
    """Both ways: panel asks to clear history; kernel tells views it was cleared."""

    type: Literal["chat_clear"]


class StreamResumeRequest(TypedDict):
    """Panel -> kernel: sent once when a panel model starts (the resume handshake).

    ``probeId`` identifies the asking view (also used as its client id); ``transcriptRev``: the
    revision of the transcript it opened on (the ``transcript`` trait it read): when the transcript has
    moved since, the kernel sends that view the newest window first (a ``transcript_patch`` with its
    ``probeId``).
    """

    type: Literal["stream_resume_request"]
    probeId: NotRequired[str]
    transcriptRev: NotRequired[int]


class UseChatResponse(TypedDict):
    """Kernel -> panel: a coalesced batch of UIMessageChunks of turn ``id``.

    ``done`` marks the last frame of the turn; ``error`` that it ended in error;
    ``continuation`` that the chunks extend the last assistant message; ``replay``
    that ``chunks`` is the whole turn so far (the view resets that turn first);
    ``refused`` that the agent refused the request before any turn began (its one
    ``error`` chunk says why): its message was not stored, and no reply follows.
    """

    type: Literal["use_chat_response"]
    id: str
    chunks: list[UIMessageChunk]
    done: bool
    error: NotRequired[bool]
    continuation: NotRequired[bool]
    replay: NotRequired[bool]
    refused: NotRequired[bool]


class StreamResuming(TypedDict):
    """Kernel -> panel: turn ``id`` is streaming; a replay frame follows."""

    type: Literal["stream_resuming"]
    id: str
    probeId: NotRequired[str]


class StreamResumeNone(TypedDict):
    """Kernel -> panel: nothing is streaming, nothing to resume."""

    type: Literal["stream_resume_none"]
    probeId: NotRequired[str]


class StreamPending(TypedDict):
    """Kernel -> panel: turn ``id`` is accepted but not streaming yet (queued, debouncing): keep
    waiting; its chunks will arrive live from the first one (Think's ``cf_agent_stream_pending``)."""

    type: Literal["stream_pending"]
    id: NotRequired[str]
    probeId: NotRequired[str]


class ChatRecovering(TypedDict):
    """Kernel -> panel: the agent is (``recovering: true``) or is no longer recovering turns a dead
    process left unfinished; ``id`` is the interrupted turn (Think's ``cf_agent_chat_recovering``)."""

    type: Literal["chat_recovering"]
    recovering: bool
    id: NotRequired[str]


class SessionBlock(TypedDict):
    """One context block as ``ContextBlock.as_dict()`` gives it (the DataFrame's row)."""

    label: str
    description: str
    kind: str
    writable: bool
    tokens: int
    max_tokens: int | None
    percent_used: float | None
    content: str


class SessionInfo(TypedDict):
    """One session of the agent (``id`` "" is the default session)."""

    id: str
    name: str
    active: bool


class SessionFrame(TypedDict):
    """Kernel -> panel: the agent's memory as the context tab shows it (Think's
    ``cf_agent_session``), sent after a block write, a compaction and a session switch.

    ``Session.status()`` (``phase``, ``tokenEstimate``, ``tokenThreshold``, ``session`` = the
    active session id, ``blocks``, ``compacted?``, ``error?``) plus ``sessions``.
    """

    type: Literal["session"]
    phase: str
    tokenEstimate: int
    tokenThreshold: int | None
    session: str
    blocks: list[SessionBlock]
    sessions: NotRequired[list[SessionInfo]]
    compacted: NotRequired[dict[str, int]]
    error: NotRequired[str]


class SessionSwitch(TypedDict):
    """Panel -> kernel: make session ``session`` (id or name; "" = default) the active one."""

    type: Literal["session_switch"]
    session: str


class ContinueRequest(TypedDict):
    """Panel -> kernel: continue the last assistant message (``continue_last_turn``) as request ``id``."""

    type: Literal["continue_request"]
    id: str


class SwitchBranch(TypedDict):
    """Panel -> kernel: make the branch through message ``messageId`` current (``switch_branch``)."""

    type: Literal["switch_branch"]
    messageId: str


class McpServer(TypedDict):
    """One MCP server as the context tab shows it (``McpServers.describe``)."""

    name: str
    transport: str
    state: str
    tools: int
    tool_names: list[str]
    last_error: str | None


class McpServersFrame(TypedDict):
    """Kernel -> panel: the agent's MCP servers (Think's ``cf_agent_mcp_servers``), sent when a
    view attaches and whenever a server is added, removed, connects, fails or closes."""

    type: Literal["mcp_servers"]
    servers: list[McpServer]


class TranscriptRequest(TypedDict):
    """Panel -> kernel: view ``probeId`` wants the newest window of the transcript again (it missed a
    patch), or, with ``before`` (a message id), up to ``limit`` older messages before it."""

    type: Literal["transcript_request"]
    probeId: str
    before: NotRequired[str]
    limit: NotRequired[int]


class TranscriptPatch(TypedDict):
    """Kernel -> panel: the transcript changed from revision ``base`` to ``rev``
    (``think_nb.panel.transcript``). A view on revision ``base`` keeps its messages up to and
    including ``after`` (none when ``after`` is None, or not among them: it precedes the view's
    oldest, and older messages then precede the new list), appends ``messages``, and replaces by id
    the ``updated`` ones it holds. ``more``: older messages precede the new list's first (``after``
    None only). With ``probeId`` it
    answers that view's ``transcript_request`` and only that view applies it, whatever its revision."""

    type: Literal["transcript_patch"]
    rev: int
    base: int
    after: str | None
    messages: list[UIMessage]
    updated: list[UIMessage]
    more: NotRequired[bool]
    probeId: NotRequired[str]
    usage: NotRequired[dict[str, Any]]


class TranscriptPage(TypedDict):
    """Kernel -> panel: the messages just before message ``before`` (oldest first) at revision ``rev``,
    for view ``probeId``; ``more``: older ones remain."""

    type: Literal["transcript_page"]
    rev: int
    before: str
    messages: list[UIMessage]
    more: bool
    probeId: str


PanelFrame = (
    UseChatRequest | ChatRequestCancel | ChatClear | ToolApproval | ToolResult
    | StreamResumeRequest | StreamResumeAck | SessionSwitch | ContinueRequest | SwitchBranch | ToolUndo
    | TranscriptRequest
)
KernelFrame = (
    UseChatResponse | MessageUpdated | StreamResuming | StreamResumeNone | StreamPending | ChatRecovering
    | ChatClear | SessionFrame | McpServersFrame | TranscriptPatch | TranscriptPage
)
Frame = PanelFrame | KernelFrame

PANEL_FRAME_TYPES: Final = frozenset(_FRAMES[name] for name in SPEC["panel_frames"])
KERNEL_FRAME_TYPES: Final = frozenset(_FRAMES[name] for name in SPEC["kernel_frames"])


# --- builders (kernel -> panel) -------------------------------------------------------


def use_chat_response(
    request_id: str,
    chunks: list[UIMessageChunk],
    *,
    done: bool = False,
    error: bool = False,
    continuation: bool = False,
    replay: bool = False,
    refused: bool = False,
) -> UseChatResponse:
    """Build a ``use_chat_response`` frame; false flags are left out, chunks are strict JSON."""
    frame = UseChatResponse(type="use_chat_response", id=request_id,
                            chunks=cast("list[UIMessageChunk]", to_json_value(list(chunks))), done=done)
    if error:
        frame["error"] = True
    if continuation:
        frame["continuation"] = True
    if replay:
        frame["replay"] = True
    if refused:
        frame["refused"] = True
    return frame


def stream_resuming(request_id: str, probe_id: str | None = None) -> StreamResuming:
    """Build a ``stream_resuming`` frame for turn ``request_id`` (answering ``probe_id``)."""
    frame = StreamResuming(type="stream_resuming", id=request_id)
    if probe_id:
        frame["probeId"] = probe_id
    return frame


def stream_resume_none(probe_id: str | None = None) -> StreamResumeNone:
    """Build a ``stream_resume_none`` frame (answering ``probe_id``)."""
    frame = StreamResumeNone(type="stream_resume_none")
    if probe_id:
        frame["probeId"] = probe_id
    return frame


def stream_pending(request_id: str | None = None, probe_id: str | None = None) -> StreamPending:
    """Build a ``stream_pending`` frame for accepted turn ``request_id`` (answering ``probe_id``)."""
    frame = StreamPending(type="stream_pending")
    if request_id:
        frame["id"] = request_id
    if probe_id:
        frame["probeId"] = probe_id
    return frame


def chat_recovering(recovering: bool, request_id: str | None = None) -> ChatRecovering:
    """Build a ``chat_recovering`` frame (``request_id``: the interrupted turn)."""
    frame = ChatRecovering(type="chat_recovering", recovering=recovering)
    if request_id:
        frame["id"] = request_id
    return frame


def message_updated(message: UIMessage) -> MessageUpdated:
    """Build a ``message_updated`` frame (the message as strict JSON)."""
    return MessageUpdated(type="message_updated", message=cast("UIMessage", to_json_value(message)))


def chat_clear() -> ChatClear:
    """Build a ``chat_clear`` frame."""
    return ChatClear(type="chat_clear")


def session_frame(state: Mapping[str, Any], sessions: list[SessionInfo] | None = None) -> SessionFrame:
    """Build a ``session`` frame from ``Session.status()`` (and the agent's sessions)."""
    frame = cast("SessionFrame", {**state, "type": SESSION})
    if sessions is not None:
        frame["sessions"] = sessions
    return cast("SessionFrame", to_json_value(frame))


def mcp_servers_frame(servers: Sequence[Mapping[str, Any]]) -> McpServersFrame:
    """Build an ``mcp_servers`` frame from ``McpServers.table()`` rows (other keys dropped)."""
    keys = ("name", "transport", "state", "tools", "tool_names", "last_error")
    rows = [{k: s.get(k) for k in keys} for s in servers]
    return cast("McpServersFrame", to_json_value({"type": MCP_SERVERS, "servers": rows}))


def transcript_patch(rev: int, base: int, after: str | None, messages: list[UIMessage], updated: list[UIMessage],
                     *, more: bool = False, probe_id: str | None = None,
                     usage: Mapping[str, Any] | None = None) -> TranscriptPatch:
    """Build a ``transcript_patch`` frame (messages as strict JSON; a false ``more`` is left out)."""
    frame = TranscriptPatch(type="transcript_patch", rev=rev, base=base, after=after,
                            messages=cast("list[UIMessage]", to_json_value(list(messages))),
                            updated=cast("list[UIMessage]", to_json_value(list(updated))))
    if more:
        frame["more"] = True
    if probe_id:
        frame["probeId"] = probe_id
    if usage is not None:
        frame["usage"] = cast("dict[str, Any]", to_json_value(dict(usage)))
    return frame


def transcript_page(rev: int, before: str, messages: list[UIMessage], *, more: bool,
                    probe_id: str) -> TranscriptPage:
    """Build a ``transcript_page`` frame (messages as strict JSON)."""
    return TranscriptPage(type="transcript_page", rev=rev, before=before, more=more, probeId=probe_id,
                          messages=cast("list[UIMessage]", to_json_value(list(messages))))


# --- parsing --------------------------------------------------------------------------


def _is_str(x: object) -> bool:
    return isinstance(x, str) and x != ""


def _message_error(m: object) -> str | None:
    if not isinstance(m, Mapping):
        return "a message is not an object"
    if not _is_str(m.get("id")):
        return "a message has no string 'id'"
    if m.get("role") not in ("system", "user", "assistant"):
        return f"a message has role {m.get('role')!r}"
    parts = m.get("parts")
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        return "a message has no 'parts' list of objects"
    return None


def _chunk_error(c: object) -> str | None:
    if not isinstance(c, Mapping) or not _is_str(c.get("type")):
        return "a chunk is not an object with a string 'type'"
    return None


def _need_id(raw: Mapping[str, Any]) -> str | None:
    return None if _is_str(raw.get("id")) else "missing string 'id'"


def _optional_str(raw: Mapping[str, Any], key: str) -> str | None:
    return None if key not in raw or isinstance(raw[key], str) else f"{key!r} must be a string"


def _client_tools_error(tools: object) -> str | None:
    if not isinstance(tools, list):
        return "'clientTools' must be a list"
    for t in tools:
        if not isinstance(t, Mapping) or not _is_str(t.get("name")):
            return "a client tool has no string 'name'"
        if "parameters" in t and not isinstance(t["parameters"], Mapping):
            return "a client tool's 'parameters' is not an object"
    return None


def _check_use_chat_request(raw: Mapping[str, Any]) -> str | None:
    messages = raw.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list"
    if raw.get("trigger") not in (SUBMIT_MESSAGE, REGENERATE_MESSAGE):
        return f"'trigger' is {raw.get('trigger')!r}"
    if "clientTools" in raw and (err := _client_tools_error(raw["clientTools"])):
        return err
    if "body" in raw and not isinstance(raw["body"], Mapping):
        return "'body' must be an object (the request's custom body)"
    return (
        _need_id(raw)
        or _optional_str(raw, "clientId")
        or next(filter(None, map(_message_error, messages)), None)
    )


def _need_tool_call_id(raw: Mapping[str, Any]) -> str | None:
    return None if _is_str(raw.get("toolCallId")) else "missing string 'toolCallId'"


def _check_tool_approval(raw: Mapping[str, Any]) -> str | None:
    if not isinstance(raw.get("approved"), bool):
        return "'approved' must be a boolean"
    if "input" in raw and not isinstance(raw["input"], Mapping):
        return "'input' must be an object (the edited tool input)"
    if "input" in raw and not raw["approved"]:
        return "'input' is for an approval, not a denial"
    return _need_tool_call_id(raw) or _optional_str(raw, "reason")


def _check_tool_result(raw: Mapping[str, Any]) -> str | None:
    if not _is_str(raw.get("toolName")):
        return "missing string 'toolName'"
    if raw.get("state", OUTPUT_AVAILABLE) not in (OUTPUT_AVAILABLE, OUTPUT_ERROR):
        return f"'state' is {raw.get('state')!r}"
    return _need_tool_call_id(raw) or _optional_str(raw, "errorText")


def _check_message_updated(raw: Mapping[str, Any]) -> str | None:
    return _message_error(raw.get("message"))


def _probe(raw: Mapping[str, Any]) -> str | None:
    return _optional_str(raw, "probeId")


def _id_and_probe(raw: Mapping[str, Any]) -> str | None:
    return _need_id(raw) or _probe(raw)


def _check_use_chat_response(raw: Mapping[str, Any]) -> str | None:
    chunks = raw.get("chunks")
    if not isinstance(chunks, list):
        return "'chunks' must be a list"
    if not isinstance(raw.get("done"), bool):
        return "'done' must be a boolean"
    for flag in ("error", "continuation", "replay", "refused"):
        if flag in raw and not isinstance(raw[flag], bool):
            return f"{flag!r} must be a boolean"
    return _need_id(raw) or next(filter(None, map(_chunk_error, chunks)), None)


def _check_stream_pending(raw: Mapping[str, Any]) -> str | None:
    return _optional_str(raw, "id") or _probe(raw)


def _check_chat_recovering(raw: Mapping[str, Any]) -> str | None:
    if not isinstance(raw.get("recovering"), bool):
        return "'recovering' must be a boolean"
    return _optional_str(raw, "id")


def _no_fields(raw: Mapping[str, Any]) -> str | None:
    return None


def _block_error(b: object) -> str | None:
    if not isinstance(b, Mapping) or not _is_str(b.get("label")):
        return "a block has no string 'label'"
    if not isinstance(b.get("content", ""), str):
        return "a block's 'content' is not a string"
    for key in ("tokens", "max_tokens"):
        value = b.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return f"a block's {key!r} is not an integer"
    return None


def _check_session(raw: Mapping[str, Any]) -> str | None:
    blocks = raw.get("blocks")
    if not isinstance(blocks, list):
        return "'blocks' must be a list"
    if not isinstance(raw.get("session"), str):
        return "missing string 'session'"
    sessions = raw.get("sessions", [])
    if not isinstance(sessions, list) or not all(
            isinstance(s, Mapping) and isinstance(s.get("id"), str) for s in sessions):
        return "'sessions' must be a list of objects with a string 'id'"
    return _optional_str(raw, "phase") or _optional_str(raw, "error") or next(
        filter(None, map(_block_error, blocks)), None)


def _check_session_switch(raw: Mapping[str, Any]) -> str | None:
    return None if isinstance(raw.get("session"), str) else "missing string 'session'"


def _check_mcp_servers(raw: Mapping[str, Any]) -> str | None:
    servers = raw.get("servers")
    if not isinstance(servers, list):
        return "'servers' must be a list"
    for s in servers:
        if not isinstance(s, Mapping) or not _is_str(s.get("name")) or not isinstance(s.get("state"), str):
            return "a server has no string 'name' and 'state'"
        names = s.get("tool_names", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return "a server's 'tool_names' must be a list of strings"
    return None


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _check_transcript_request(raw: Mapping[str, Any]) -> str | None:
    if not _is_str(raw.get("probeId")):
        return "missing string 'probeId'"
    if "limit" in raw and not _is_int(raw["limit"]):
        return "'limit' must be a non-negative integer"
    return None if "before" not in raw or _is_str(raw["before"]) else "'before' must be a message id"


def _messages_error(raw: Mapping[str, Any], key: str) -> str | None:
    messages = raw.get(key)
    if not isinstance(messages, list):
        return f"{key!r} must be a list"
    return next(filter(None, map(_message_error, messages)), None)


def _check_transcript_patch(raw: Mapping[str, Any]) -> str | None:
    if not _is_int(raw.get("rev")) or not _is_int(raw.get("base")):
        return "'rev' and 'base' must be non-negative integers"
    if raw.get("after") is not None and not _is_str(raw.get("after")):
        return "'after' must be a message id or null"
    if "more" in raw and not isinstance(raw["more"], bool):
        return "'more' must be a boolean"
    if "usage" in raw and not isinstance(raw["usage"], Mapping):
        return "'usage' must be an object"
    return _messages_error(raw, "messages") or _messages_error(raw, "updated") or _probe(raw)


def _check_transcript_page(raw: Mapping[str, Any]) -> str | None:
    if not _is_int(raw.get("rev")):
        return "'rev' must be a non-negative integer"
    if not _is_str(raw.get("before")) or not _is_str(raw.get("probeId")):
        return "missing string 'before' or 'probeId'"
    if not isinstance(raw.get("more"), bool):
        return "'more' must be a boolean"
    return _messages_error(raw, "messages")


_CHECKS: Final[dict[str, Callable[[Mapping[str, Any]], str | None]]] = {
    USE_CHAT_REQUEST: _check_use_chat_request,
    CHAT_REQUEST_CANCEL: _need_id,
    CHAT_CLEAR: _no_fields,
    TOOL_APPROVAL: _check_tool_approval,
    TOOL_RESULT: _check_tool_result,
    STREAM_RESUME_REQUEST: lambda raw: _probe(raw) or (
        None if "transcriptRev" not in raw or _is_int(raw["transcriptRev"]) else "'transcriptRev' must be an integer"),
    STREAM_RESUME_ACK: _id_and_probe,
    USE_CHAT_RESPONSE: _check_use_chat_response,
    MESSAGE_UPDATED: _check_message_updated,
    STREAM_RESUMING: _id_and_probe,
    STREAM_RESUME_NONE: _probe,
    STREAM_PENDING: _check_stream_pending,
    CHAT_RECOVERING: _check_chat_recovering,
    SESSION: _check_session,
    SESSION_SWITCH: _check_session_switch,
    CONTINUE_REQUEST: _need_id,
    SWITCH_BRANCH: lambda raw: None if _is_str(raw.get("messageId")) else "missing string 'messageId'",
    MCP_SERVERS: _check_mcp_servers,
    TOOL_UNDO: _need_tool_call_id,
    TRANSCRIPT_REQUEST: _check_transcript_request,
    TRANSCRIPT_PATCH: _check_transcript_patch,
    TRANSCRIPT_PAGE: _check_transcript_page,
}


def frame_error(raw: object) -> str | None:
    """Say why ``raw`` is not a valid frame, or return None if it is one.

    Unknown extra keys are allowed (newer panels may add fields); known keys must have
    the right shape.
    """
    if not isinstance(raw, Mapping):
        return f"frame is a {type(raw).__name__}, not an object"
    kind = raw.get("type")
    check = _CHECKS.get(kind) if isinstance(kind, str) else None
    if check is None:
        return f"unknown frame type {kind!r}"
    return check(raw)


def parse_frame(raw: object, logger: logging.Logger | None = None) -> Frame | None:
    """Return ``raw`` typed as a :data:`Frame`, or None if it is malformed or unknown.

    Never raises. The reason a frame is rejected is logged as a warning on ``logger``
    (default: ``think_nb.panel.protocol``). Narrow the result on ``frame["type"]`` against the
    constants of this module.
    """
    reason = frame_error(raw)
    if reason is not None:
        (logger or _log).warning("ignored malformed frame (%s): %.200r", reason, raw)
        return None
    return cast("Frame", dict(cast("Mapping[str, Any]", raw)))
