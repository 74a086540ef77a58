"""Channels (Think's `configureChannels`): the surfaces an agent talks through, and the policy a
turn on each one gets.

    class Support(Think):
        def configure_channels(self):
            return {"sms": {"kind": "messenger", "instructions": "Reply in one short line.",
                            "tools": ["lookup_order"], "max_turns": 2}}

    await agent.send("where is my order?", channel="sms", metadata={"customer": "c-42"})

- The registry: `configure_channels()` (called at each use, so a redefined class takes effect)
  gives `{id: {kind?, instructions?, tools?, max_turns?, capabilities?}}`; `kind` is `web`,
  `messenger`, `voice` or `custom` (default `custom`). The implicit `web` channel is always
  there; an entry `"web"` may change its policy (no kind, or `kind: "web"`), never its kind.
  A bad entry is a `UserError` naming it (`resolve`).
- A turn's channel is stamped on its user messages as `metadata.channel` (and the caller's
  per-turn metadata as `metadata.turnMetadata`, Think's `ChatOptions.metadata`). Those two keys
  are the server's: a message from the panel has them removed (`strip_reserved`), as Think strips
  them from client input.
- Every turn reads its channel from the latest user message of the branch (`channel_of`), so a
  continuation, an approval's continuation and a recovered turn (`think_nb.turns.recovery`) get
  the policy of the turn they continue, as Think re-resolves it from durable history. A turn with
  no stamp has no channel and no policy (Think's: the implicit `web` policy applies to turns sent
  with `channel="web"`). A stamp naming a channel no longer configured is logged and ignored.
- The policy (`TurnPolicy`), applied before `before_turn`: `instructions` (text, or
  `fn(ChannelContext)`, sync or async) are prepended to the system prompt with a blank line;
  `tools` narrows the merged tools (a list of names, or `fn(all_tools) -> tools`, which may also
  add some); `max_turns` is the turn's step limit unless `before_turn` returns `max_steps`
  (Think: `config.maxSteps ?? channel.maxTurns ?? this.maxSteps`).

think_nb has no messenger transports: every channel renders through the transcript, the panel
(as Think's `web` channel does), which is where `think_nb.notices` delivers.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from think_nb.aio import maybe_await
from think_nb.errors import UserError
from think_nb.tools.collisions import keep_gates
from think_nb.tools.toolset import resolve_tools
from think_nb.turns.hooks import user_code

log = logging.getLogger("think_nb")

KINDS = ("web", "messenger", "voice", "custom")
"""Think's `ChannelKind`s."""

WEB = "web"
"""The implicit channel: the panel (Think's WebSocket chat surface)."""

RESERVED_METADATA = ("channel", "turnMetadata")
"""Message-metadata keys only the server writes (Think's `RESERVED_MESSAGE_METADATA_KEYS`)."""

_KEYS = ("kind", "instructions", "tools", "max_turns", "capabilities")


@dataclass(frozen=True)
class ChannelContext:
    """The channel of the running turn (Think's `ChannelContext`), read as `agent.active_channel`.

    Attributes:
        channel_id: the channel's id (`"web"`, `"sms"`, ...).
        kind: `web` | `messenger` | `voice` | `custom`.
        capabilities: the channel's `capabilities` dict as configured, or None.
        messenger: Think's messenger context; always None (think_nb has no messengers).
        thread: Think's thread hint; always None.
    """

    channel_id: str
    kind: str
    capabilities: dict[str, Any] | None = None
    messenger: Any = None
    thread: str | None = None


@dataclass(frozen=True)
class Channel:
    """One configured channel, checked (`resolve`)."""

    id: str
    kind: str
    instructions: str | Callable[[ChannelContext], Any] | None = None
    tools: list[str] | Callable[[dict[str, Any]], Any] | None = None
    max_turns: int | None = None
    capabilities: dict[str, Any] | None = field(default=None, hash=False)

    def context(self) -> ChannelContext:
        return ChannelContext(self.id, self.kind, copy.deepcopy(self.capabilities))


def resolve(configured: Any) -> dict[str, Channel]:
    """`configure_channels()`'s answer checked and merged over the implicit `web` channel.

    Raises:
        UserError: not a dict; an id that is not a non-empty string; an entry that is not a dict,
            has an unknown key, an unknown kind, a `web` entry of another kind (Think: "reserved
            for the built-in chat surface"), instructions that are neither text nor a function,
            tools neither a list of names nor a function, or `max_turns` not a whole number >= 1.
    """
    if configured is None:
        configured = {}
    if not isinstance(configured, dict):
        raise UserError(f"configure_channels() returned {type(configured).__name__}; return a dict "
                        "{channel_id: {'kind': ..., 'instructions': ..., 'tools': ..., 'max_turns': ...}}.")
    channels = {WEB: Channel(WEB, WEB)}
    for channel_id, definition in configured.items():
        channels[channel_id] = _channel(channel_id, definition)
    return channels


def _channel(channel_id: Any, definition: Any) -> Channel:
    where = f"configure_channels() channel {channel_id!r}"
    if not isinstance(channel_id, str) or not channel_id.strip():
        raise UserError(f"{where}: a channel id is a non-empty string, e.g. 'sms'.")
    if not isinstance(definition, dict):
        raise UserError(f"{where} is {type(definition).__name__}; give a dict, e.g. {{'kind': 'voice'}}.")
    unknown = sorted(set(definition) - set(_KEYS))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {unknown}; a channel takes {', '.join(_KEYS)} "
                        "(Think's maxTurns is max_turns).")
    kind = definition.get("kind", WEB if channel_id == WEB else "custom")
    if kind not in KINDS:
        raise UserError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}.")
    if channel_id == WEB and kind != WEB:
        raise UserError(f"{where}: 'web' is reserved for the built-in chat surface (the panel); configure_channels() "
                        f"may change its policy (leave kind out, or kind 'web') but not make it {kind!r}; give "
                        "your channel another id.")
    instructions = definition.get("instructions")
    if instructions is not None and not isinstance(instructions, str) and not callable(instructions):
        raise UserError(f"{where}: instructions are text or a function of the ChannelContext returning text.")
    tools = definition.get("tools")
    if isinstance(tools, (list, tuple)) and all(isinstance(t, str) for t in tools):
        tools = list(tools)
    elif tools is not None and not callable(tools):
        raise UserError(f"{where}: tools is a list of tool names to keep, or a function all_tools -> tools.")
    max_turns = definition.get("max_turns")
    if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1):
        raise UserError(f"{where}: max_turns = {max_turns!r}; give a whole number of model steps >= 1, e.g. 3.")
    capabilities = definition.get("capabilities")
    if capabilities is not None and not isinstance(capabilities, dict):
        raise UserError(f"{where}: capabilities is a dict, e.g. {{'canStream': False}}.")
    return Channel(channel_id, kind, instructions, tools, max_turns, capabilities)


def registry(agent: Any) -> dict[str, Channel]:
    """The agent's channels now (`agent.configure_channels()`, which must be sync; see `resolve`)."""
    with user_code("configure_channels", agent):
        configured = agent.configure_channels()
    if hasattr(configured, "__await__"):
        if hasattr(configured, "close"):
            configured.close()
        raise UserError(f"{type(agent).__name__}.configure_channels() is async; think_nb reads it at each use, "
                        "synchronously: define it with `def` and return the dict.")
    return resolve(configured)


def require(agent: Any, channel_id: Any, where: str) -> Channel:
    """The configured channel `channel_id`, or `UserError` naming the configured ones (a turn or a
    notice on an unknown channel fails before anything is stored)."""
    channels = registry(agent)
    if not isinstance(channel_id, str) or channel_id not in channels:
        configured = ", ".join(repr(c) for c in channels)
        raise UserError(f"{where}: channel {channel_id!r} is not configured; configured channels: {configured} "
                        f"(add it in {type(agent).__name__}.configure_channels()).")
    return channels[channel_id]


# -- the stamp on user messages ---------------------------------------------------------------------
def turn_metadata(value: Any, where: str) -> dict[str, Any] | None:
    """`metadata=` of a turn, checked: None, or a dict of JSON values (`UserError` otherwise)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UserError(f"{where}: metadata is a dict of JSON values (e.g. {{'customer': 'c-42'}}), not "
                        f"{type(value).__name__}; nothing was sent.")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: metadata must be JSON (dicts, lists, strings, finite numbers): {exc}; nothing "
                        "was sent.") from None
    return copy.deepcopy(value)


def stamp(message: Any, channel: str | None, metadata: dict[str, Any] | None) -> Any:
    """`message` with `metadata.channel` / `metadata.turnMetadata` set when it is a user message
    (Think's `_stampChannel`); anything else is returned as it is."""
    if (channel is None and metadata is None) or not isinstance(message, dict) or message.get("role") != "user":
        return message
    meta = dict(message.get("metadata") or {}) if isinstance(message.get("metadata") or {}, dict) else {}
    if channel is not None:
        meta["channel"] = channel
    if metadata is not None:
        meta["turnMetadata"] = copy.deepcopy(metadata)
    return {**message, "metadata": meta}


def stamped(messages: Any, channel: str | None, metadata: dict[str, Any] | None) -> Any:
    """A list of messages stamped (`stamp`), or a function `fn(current) -> messages` wrapped so
    its result is (for `save_messages(fn)`, evaluated when the turn starts)."""
    if channel is None and metadata is None:
        return messages
    if callable(messages):
        fn = messages

        async def stamped_fn(current: list[dict]) -> Any:
            produced = await maybe_await(fn(current))
            return [stamp(m, channel, metadata) for m in produced] if isinstance(produced, list | tuple) else produced

        stamped_fn.__name__ = getattr(fn, "__name__", "messages")
        return stamped_fn
    return [stamp(m, channel, metadata) for m in messages] if isinstance(messages, list | tuple) else messages


def strip_reserved(message: Any) -> Any:
    """`message` without the server's metadata keys (`RESERVED_METADATA`): what a panel sends can
    never name a turn's channel or its turn metadata (Think's `_stripReservedMessageMetadata`)."""
    if not isinstance(message, dict) or not isinstance(message.get("metadata"), dict):
        return message
    meta = message["metadata"]
    if not any(key in meta for key in RESERVED_METADATA):
        return message
    return {**message, "metadata": {k: v for k, v in meta.items() if k not in RESERVED_METADATA}}


def _latest_user_metadata(messages: list[dict]) -> dict[str, Any]:
    for message in reversed(messages):
        if message.get("role") == "user":
            meta = message.get("metadata")
            return meta if isinstance(meta, dict) else {}
    return {}


def channel_of(messages: list[dict]) -> str | None:
    """The channel stamped on the latest user message of `messages`, or None."""
    channel = _latest_user_metadata(messages).get("channel")
    return channel if isinstance(channel, str) else None


def turn_metadata_of(messages: list[dict]) -> dict[str, Any] | None:
    """A copy of the turn metadata stamped on the latest user message of `messages`, or None
    (Think's `activeTurnMetadata`)."""
    value = _latest_user_metadata(messages).get("turnMetadata")
    return copy.deepcopy(value) if isinstance(value, dict) else None


# -- the policy of a turn ----------------------------------------------------------------------------
@dataclass
class TurnPolicy:
    """The channel policy one turn applies (see the module docstring)."""

    channel: Channel
    context: ChannelContext
    instructions: str = ""

    @property
    def max_turns(self) -> int | None:
        return self.channel.max_turns

    def system(self, prompt: str) -> str:
        """`prompt` with the channel's instructions prepended (a blank line between)."""
        return f"{self.instructions}\n\n{prompt}" if self.instructions else prompt

    def tools(self, tools: dict[str, Any]) -> dict[str, Any]:
        """The turn's merged tools narrowed by the channel's `tools` (names kept, in the merge
        order; or what the function returns: a dict or list of tools, or a list of names)."""
        rule = self.channel.tools
        if rule is None:
            return tools
        if isinstance(rule, list):
            return {name: t for name, t in tools.items() if name in rule}
        with user_code(getattr(rule, "__name__", "tools"), subject=f"channel {self.channel.id!r}"):
            chosen = rule(dict(tools))
        if isinstance(chosen, list | tuple) and all(isinstance(n, str) for n in chosen):
            return {name: t for name, t in tools.items() if name in chosen}
        with user_code(getattr(rule, "__name__", "tools"), subject=f"channel {self.channel.id!r}"):
            resolved = resolve_tools(chosen)
        return keep_gates(tools, resolved, f"channel {self.channel.id!r}")


async def turn_policy(agent: Any, messages: list[dict]) -> TurnPolicy | None:
    """The policy of a turn whose branch is `messages` (its channel: `channel_of`), or None."""
    channel_id = channel_of(messages)
    if channel_id is None:
        return None
    channel = registry(agent).get(channel_id)
    if channel is None:
        log.warning("turn on channel %r, which configure_channels() no longer gives; no channel policy applied",
                    channel_id)
        return None
    context = channel.context()
    instructions = channel.instructions
    if callable(instructions):
        with user_code(getattr(instructions, "__name__", "instructions"), subject=f"channel {channel_id!r}"):
            instructions = await maybe_await(instructions(context))
        if not isinstance(instructions, str):
            raise UserError(f"channel {channel_id!r}: its instructions function returned {instructions!r:.60}; "
                            "return text.")
    return TurnPolicy(channel, context, instructions or "")


def for_turn(agent: Any, messages: Any, channel: Any, metadata: Any, where: str) -> Any:
    """`messages` (a list, or `fn(current) -> messages`) stamped for a turn on `channel` with
    `metadata` (`stamped`), after checking both: an unknown channel or non-JSON metadata is a
    `UserError` before anything is queued or stored."""
    if channel is not None:
        require(agent, channel, where)
    return stamped(messages, channel, turn_metadata(metadata, where))
