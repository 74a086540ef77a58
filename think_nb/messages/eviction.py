"""Media eviction of one stored message: large inline media replaced by a short marker (Think's
`media-eviction.ts`, `evictLargeMediaFromMessage`; cloudflare/agents#1710).

A notebook's transcript collects images: a pasted screenshot (a user `file` part holding a `data:`
URL), a matplotlib figure a tool returned (a content output's `image-data` item), a base64 string
in a tool's dict. Once a message has aged out of the recent window they only weigh on the SQLite
file, on every reload and on every panel that opens. `evict_message` rewrites such a message:

- a `file` part whose `url` is a `data:` URL of at least `min_part_bytes` characters becomes a
  text part holding the marker;
- in a tool part's `output` (`tool-<name>` or `dynamic-tool`), every string of at least
  `min_part_bytes` characters, at most `MAX_WALK_DEPTH` containers deep, becomes the marker in
  place (the output keeps its shape); an AI SDK content item (`{"type": "image-data" | "file-data",
  "data", "mediaType"}`) whose `data` is that large becomes a text item holding the marker, so the
  output still converts (`think_nb.messages.media.content_output_parts`);
- text parts are never touched (they are what the user wrote or read), nor is anything else.

The marker is Think's: `[evicted image/png, 43210 bytes; preserved at /attachments/evicted/<message
id>-<n>.png]`, or `[evicted image/png, 43210 bytes]` when the bytes are dropped (`externalize`
False). The marker's size is the value's own bytes, the preserved file's size (a base64 value
decoded; Think counts the characters of the stored string, which for base64 is a third more); the
pass totals count characters removed from storage. Each evicted value is
returned as a `Blob` to write before the rewritten message is stored: a base64 value (a `data:` URL,
a content item's data) as its decoded bytes, so `/attachments/evicted/m0-0.png` is the PNG itself
(the workspace `read` tool shows it to the model again); any other string as UTF-8 text (`.txt`).

The input is never changed; an unchanged message is returned as the same object.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_WALK_DEPTH = 8
"""Containers descended into a tool output (Think's); a string deeper than this is left alone."""
_DATA_URL = re.compile(r"^data:([^;,]+)?((?:;[^;,]*)*),", re.IGNORECASE)
_CONTENT_MEDIA = ("image-data", "file-data", "media")


@dataclass(frozen=True)
class Blob:
    """An evicted value to keep: `data` written to the workspace at `path` (`media_type` or None)."""

    path: str
    data: bytes
    media_type: str | None


@dataclass
class Evicted:
    """What `evict_message` did.

    Attributes:
        message: the rewritten message (the input itself when `changed` is False).
        changed: whether anything was evicted.
        parts: values evicted.
        bytes: characters removed (the evicted strings' lengths).
        blobs: values to write before the message is stored (empty when dropping).
    """

    message: dict
    changed: bool = False
    parts: int = 0
    bytes: int = 0
    blobs: list[Blob] = field(default_factory=list)


def evict_message(message: dict, min_part_bytes: int, externalize: bool,
                  path_for: Callable[[int, str], str]) -> Evicted:
    """`message` with its large media replaced by markers (see the module docstring).

    Args:
        message: a stored UIMessage (not changed).
        min_part_bytes: the smallest string (characters) evicted.
        externalize: keep the bytes (`Blob`s, the marker names the path) or drop them.
        path_for: `(n, extension) -> workspace path` of this message's n-th evicted value.
    """
    state = Evicted(message)
    walk = _Walk(state, min_part_bytes, externalize, path_for)
    parts = message.get("parts")
    if not isinstance(parts, list):
        return state
    out = [walk.part(part) for part in parts]
    if state.parts:
        state.message = {**message, "parts": out}
        state.changed = True
    return state


class _Walk:
    def __init__(self, state: Evicted, min_part_bytes: int, externalize: bool,
                 path_for: Callable[[int, str], str]) -> None:
        self.state, self.min, self.externalize, self.path_for = state, max(1, min_part_bytes), externalize, path_for

    def part(self, part: Any) -> Any:
        if not isinstance(part, dict):
            return part
        kind = part.get("type")
        if kind == "file":
            url = part.get("url")
            if isinstance(url, str) and url.startswith("data:") and len(url) >= self.min:
                media = part.get("mediaType") if isinstance(part.get("mediaType"), str) else _url_media(url)
                return {"type": "text", "text": self.evict(url, media)}
            return part
        if isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool") and "output" in part:
            before = self.state.parts
            output = self.value(part["output"], 0)
            return {**part, "output": output} if self.state.parts > before else part
        return part

    def value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            if len(value) < self.min:
                return value
            return self.evict(value, _url_media(value) if value.startswith("data:") else None)
        if depth >= MAX_WALK_DEPTH:
            return value
        if isinstance(value, list):
            items = [self.value(item, depth + 1) for item in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        if isinstance(value, dict):
            if value.get("type") in _CONTENT_MEDIA and isinstance(value.get("data"), str) \
                    and len(value["data"]) >= self.min:
                media = value.get("mediaType") if isinstance(value.get("mediaType"), str) else None
                return {"type": "text", "text": self.evict(value["data"], media, base64_data=True)}
            fields = {key: self.value(item, depth + 1) for key, item in value.items()}
            return fields if any(fields[k] is not value[k] for k in value) else value
        return value

    def evict(self, data: str, media: str | None, *, base64_data: bool = False) -> str:
        """Record `data` as evicted; returns its marker."""
        state = self.state
        state.parts += 1
        state.bytes += len(data)
        path = None
        kept = _bytes_of(data, base64_data)
        if self.externalize:
            path = self.path_for(len(state.blobs), _extension(media))
            state.blobs.append(Blob(path, kept, media))
        what = f"{media + ', ' if media else ''}{len(kept)} bytes"
        return f"[evicted {what}; preserved at {path}]" if path else f"[evicted {what}]"


def _url_media(url: str) -> str | None:
    match = _DATA_URL.match(url)
    return match.group(1).lower() if match and match.group(1) else None


def _extension(media: str | None) -> str:
    """Think's: the media subtype's letters and digits (`png`, `svgxml`), `txt` without a type."""
    if not media:
        return "txt"
    subtype = re.sub(r"[^a-zA-Z0-9]", "", media.split("/", 1)[1] if "/" in media else "")
    return subtype or "bin"


def _bytes_of(data: str, base64_data: bool) -> bytes:
    """The bytes to keep: a base64 `data:` URL's or a content item's decoded bytes, else the text."""
    payload = None
    if base64_data:
        payload = data
    else:
        match = _DATA_URL.match(data)
        if match and ";base64" in match.group(2).lower():
            payload = data[match.end():]
    if payload is not None:
        try:
            return base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            pass
    return data.encode("utf-8", "surrogatepass")
