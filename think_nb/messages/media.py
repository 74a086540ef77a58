"""Media in messages: images and files a user attaches or a tool returns, and how a model receives them.

Stored forms (the AI SDK's, so a stored message is what Think would store):

- a user message's file part: `{"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,...",
  "filename"?: str}` (the panel's pasted or dropped image, `send(context={"fig": fig})`, `%%think --with fig`);
- a tool output holding media: the AI SDK's content output, `{"type": "content", "value": [{"type": "text",
  "text"}, {"type": "image-data", "data": <base64>, "mediaType": "image/png"}, {"type": "file-data", "data",
  "mediaType", "filename"?}]}`. `tool_content(value)` makes it from what a tool returns: a matplotlib
  figure, a PIL image, an IPython `Image`, PNG/JPEG/GIF/WebP/PDF bytes, or a list/tuple mixing those
  with text (`is_media(value)` says whether it applies). A `kernel-run` output's PNG figures
  (`think_nb.kernel`) and a workspace `read` of an image (`think_nb.workspace.tools`) count too.

Model form (`model_parts`): OpenAI chat-completions content parts, which litellm turns into each
provider's (Anthropic `image` / `document` blocks, Gemini inline data, ...): an image is
`{"type": "image_url", "image_url": {"url": <data URL>}}`, a PDF `{"type": "file", "file": {"file_data":
<data URL>, "filename"}}`, a text file (text/*, JSON, CSV, XML, YAML) its decoded text. Nothing but
`data:` URLs is ever sent: a file part pointing elsewhere is a note (litellm would download it from
the kernel's machine). Each image is at most `MAX_MEDIA_BYTES` (Anthropic refuses larger ones).

`for_model(messages, config, eviction)` adapts one request to the model it goes to (it never
changes the stored messages; `think_nb.session.media_eviction` evicts old media from them, after turns):

1. eviction (`MediaEviction`, Think's `mediaEviction`): media older than the last
   `keep_recent_messages` messages and at least `min_part_bytes` large become a one-line
   placeholder, and so do the oldest ones past `max_request_bytes` in all;
2. a model that cannot see images (the embedded model; a model litellm's model map says has no
   vision) gets a note in place of each image: "this model cannot see images", never silence;
   the same for PDFs and models without PDF input;
3. images in tool results stay there for providers that take them (Anthropic's `tool_result`
   holds image blocks); for the others (OpenAI's tool messages hold text only) the tool message
   says where they are and a user message right after the batch of tool results carries them,
   the usual workaround;
4. content made only of text is sent as a string, as before media existed.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import sys
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from think_nb import jsonsafe

MAX_MEDIA_BYTES = 5 * 1024 * 1024
"""Largest image or file kept in a message or tool output (bytes): Anthropic's per-image limit
(5 MiB), and well under Jupyter's 10 MiB websocket frame, which a panel's attachment travels in."""
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""Images sent to models (what OpenAI, Anthropic and Gemini all take) and shown by the panel."""
TEXT_TYPES = re.compile(r"^(text/[\w.+-]+|application/(json|xml|x-yaml|yaml|csv|x-ndjson))$")
"""File parts sent as their text (every model reads text)."""
PDF = "application/pdf"
MAX_TEXT_CHARS = 100_000
"""Characters of an attached text file sent (the rest cut, with a note)."""
TOOL_RESULT_MEDIA_PROVIDERS = frozenset({"anthropic", "think-scripted"})
"""litellm providers whose tool results may hold images (Anthropic's `tool_result` content blocks;
scripted models receive the messages as they are); the others get them in a following user message."""
NO_VISION = "this model cannot see images"
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"),
          (b"GIF89a", "image/gif"), (b"%PDF-", PDF))
_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)(?:;[\w=.+-]+)*;base64,", re.IGNORECASE)


# -- tool outputs: Python values → the stored content output -----------------------------------
def sniff(data: bytes) -> str | None:
    """The media type of `data` by its magic bytes (PNG, JPEG, GIF, WebP, PDF), else None."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((media for magic, media in _MAGIC if data.startswith(magic)), None)


def _figure(value: Any) -> bool:
    return type(value).__module__.startswith("matplotlib.") and hasattr(value, "savefig")


def _pil(value: Any) -> bool:
    return type(value).__module__.startswith("PIL.") and hasattr(value, "save") and hasattr(value, "mode")


def _ipython_image(value: Any) -> bool:
    return type(value).__module__.startswith("IPython.") and type(value).__name__ == "Image" \
        and isinstance(getattr(value, "data", None), bytes)


def _one_media(value: Any) -> bool:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return sniff(bytes(value[:16])) is not None
    return _figure(value) or _pil(value) or _ipython_image(value) or is_content(value)


def is_media(value: Any) -> bool:
    """True when a tool's return value is media (see the module docstring) or a list/tuple holding some."""
    if isinstance(value, (list, tuple)) and 0 < len(value) <= 64:
        return any(_one_media(v) for v in value)
    return _one_media(value)


def is_content(value: Any) -> bool:
    """True for the AI SDK content output `{"type": "content", "value": [...]}`."""
    return isinstance(value, dict) and value.get("type") == "content" and isinstance(value.get("value"), list)


def image_bytes(value: Any) -> tuple[bytes, str]:
    """`(bytes, media type)` of a figure, PIL image, IPython `Image` or image/PDF bytes (figures and
    PIL images as PNG). Renders a figure: call it off the event loop. Raises `ValueError` otherwise."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    elif _figure(value):
        buffer = io.BytesIO()
        value.savefig(buffer, format="png", bbox_inches="tight")
        data = buffer.getvalue()
    elif _pil(value):
        buffer = io.BytesIO()
        image = value if value.mode in ("RGB", "RGBA", "L", "LA", "P", "1", "I;16") else value.convert("RGBA")
        image.save(buffer, format="PNG")
        data = buffer.getvalue()
    elif _ipython_image(value):
        data = value.data
    else:
        raise ValueError(f"{type(value).__name__} is not an image")
    media = sniff(data[:16])
    if media is None:
        raise ValueError("the bytes are not PNG, JPEG, GIF, WebP or PDF")
    return data, media


def _too_big(size: int, media: str) -> dict:
    return {"type": "text", "text": f"[{media}, {size:,} bytes: larger than the {MAX_MEDIA_BYTES:,} bytes a "
                                    "message may hold, not kept]"}


def _item(value: Any) -> list[dict]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}] if value else []
    if is_content(value):
        return clean_content(value)["value"]
    if not _one_media(value):
        return [{"type": "text", "text": jsonsafe.dumps(value)}]
    data, media = image_bytes(value)
    if len(data) > MAX_MEDIA_BYTES:
        return [_too_big(len(data), media)]
    kind = "image-data" if media in IMAGE_TYPES else "file-data"
    return [{"type": kind, "data": base64.b64encode(data).decode("ascii"), "mediaType": media}]


def tool_content(value: Any) -> dict:
    """The stored content output of a media tool result (`is_media(value)` is true): see the module
    docstring. May render a figure: call it off the event loop."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return {"type": "content", "value": [part for v in items for part in _item(v)]}


def clean_content(value: dict) -> dict:
    """A content output as think_nb keeps it: only `text`, `image-data` (an `IMAGE_TYPES` image of
    valid base64, at most `MAX_MEDIA_BYTES`) and `file-data` items; anything else becomes text."""
    out: list[dict] = []
    for item in value.get("value") or []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text" and isinstance(item.get("text"), str):
            out.append({"type": "text", "text": item["text"]})
        elif kind in ("image-data", "file-data", "media") and isinstance(item.get("data"), str):
            media = str(item.get("mediaType") or "")
            size = _b64_size(item["data"])
            if size is None or (kind != "file-data" and media not in IMAGE_TYPES):
                out.append({"type": "text", "text": f"[{media or 'media'} that is not valid base64 "
                                                    f"{'/'.join(IMAGE_TYPES)}: not kept]"})
            elif size > MAX_MEDIA_BYTES:
                out.append(_too_big(size, media))
            else:
                kept = {"type": "image-data" if media in IMAGE_TYPES else "file-data", "data": item["data"],
                        "mediaType": media}
                if isinstance(item.get("filename"), str):
                    kept["filename"] = item["filename"]
                out.append(kept)
        else:
            out.append({"type": "text", "text": jsonsafe.dumps(item)})
    return {"type": "content", "value": out}


def _b64_size(data: str) -> int | None:
    """Decoded size of base64 `data`, or None when it is not base64 (checked on its head and length)."""
    if len(data) % 4 or not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", data[:4096]):
        return None
    try:
        base64.b64decode(data[:4096 - 4096 % 4] or "", validate=True)
    except (binascii.Error, ValueError):
        return None
    return len(data) * 3 // 4 - data[-2:].count("=")


def data_url(media: str, data: str) -> str:
    return f"data:{media};base64,{data}"


def file_part(value: Any, name: str) -> dict:
    """A user message's file part for an image value (figure, PIL image, image bytes), named `name`:
    `{"type": "file", "mediaType", "url": data URL, "filename"}`. Renders a figure: call it off the
    event loop. Raises `ValueError` for a value that is not one, or one larger than `MAX_MEDIA_BYTES`."""
    data, media = image_bytes(value)
    if len(data) > MAX_MEDIA_BYTES:
        raise ValueError(f"{name} is {len(data):,} bytes as {media}; attach at most {MAX_MEDIA_BYTES:,} bytes")
    extension = media.split("/")[1].replace("jpeg", "jpg")
    return {"type": "file", "mediaType": media, "url": data_url(media, base64.b64encode(data).decode("ascii")),
            "filename": name if "." in name else f"{name}.{extension}"}


def is_image_value(value: Any) -> bool:
    """True for a figure, PIL image or IPython `Image` (what `--with` / `context=` attach as an image)."""
    return _figure(value) or _pil(value) or _ipython_image(value)


# -- stored forms → model content parts ------------------------------------------------------------
def parse_data_url(url: Any) -> tuple[str, str] | None:
    """`(media type, base64 data)` of a base64 `data:` URL, else None."""
    if not isinstance(url, str):
        return None
    match = _DATA_URL.match(url)
    return (match.group(1).lower(), url[match.end():]) if match else None


def file_size(url: str) -> int:
    return len(url) * 3 // 4


def _head(data: str) -> bytes:
    try:
        return base64.b64decode(data[:24], validate=True)
    except (binascii.Error, ValueError):
        return b""


def model_parts(media: str, data: str, filename: str | None = None) -> list[dict]:
    """The model content parts of one image or file (`data`: base64). An image is sent as the type
    its bytes say (a JPEG named .png is sent as image/jpeg: providers refuse a mismatch), and bytes
    that are no PNG, JPEG, GIF or WebP are a note, never a request the provider refuses."""
    if media in IMAGE_TYPES or media.startswith("image/"):
        actual = sniff(_head(data))
        if actual not in IMAGE_TYPES:
            return [{"type": "text", "text": f"[Attached {filename or 'image'} ({media}): not a PNG, JPEG, GIF or "
                                             "WebP image, left out]"}]
        return [{"type": "image_url", "image_url": {"url": data_url(actual, data)}}]
    if media == PDF:
        return [{"type": "file", "file": {"file_data": data_url(media, data), "filename": filename or "document.pdf"}}]
    name = filename or "file"
    if TEXT_TYPES.match(media):
        try:
            text = base64.b64decode(data).decode("utf-8", errors="replace")
        except (binascii.Error, ValueError):
            return [{"type": "text", "text": f"[Attached file {name} ({media}): not valid base64, left out]"}]
        cut = f"\n… ({len(text) - MAX_TEXT_CHARS:,} more characters cut)" if len(text) > MAX_TEXT_CHARS else ""
        return [{"type": "text", "text": f"[Attached file {name} ({media})]\n{text[:MAX_TEXT_CHARS]}{cut}"}]
    return [{"type": "text", "text": f"[Attached file {name} ({media}, {len(data) * 3 // 4:,} bytes): this file type "
                                     "cannot be sent to the model]"}]


def file_part_content(part: dict) -> list[dict]:
    """The model content parts of a user message's `file` part (a data: URL only; see the module docstring)."""
    parsed = parse_data_url(part.get("url"))
    name = part.get("filename") if isinstance(part.get("filename"), str) else None
    if parsed is None:
        return [{"type": "text", "text": f"[Attached file {name or part.get('mediaType') or ''}: not sent to the "
                                         "model (only inline data: attachments are sent)]"}]
    media, data = parsed
    declared = str(part.get("mediaType") or media).lower()
    return model_parts(declared if declared in IMAGE_TYPES or declared == PDF or TEXT_TYPES.match(declared)
                       else media, data, name)


def content_output_parts(output: dict) -> list[dict]:
    """The model content parts of a stored content output (`is_content(output)`)."""
    out: list[dict] = []
    for item in clean_content(output)["value"]:
        if item["type"] == "text":
            out.append({"type": "text", "text": item["text"]})
        else:
            out.extend(model_parts(item["mediaType"], item["data"], item.get("filename")))
    return out


# -- one request, adapted to its model ---------------------------------------------------------------
@dataclass(frozen=True)
class MediaEviction:
    """`Think.media_eviction` (Think's `MediaEvictionConfig`): old media left out of each request,
    and, in the background after turns, evicted from the stored messages
    (`think_nb.session.media_eviction`: the bytes go to the workspace, a marker stays).

    Attributes:
        keep_recent_messages: messages counted from the newest whose media are always kept (in a
            request: a user message, or one assistant reply with all its steps and tool results;
            in storage: stored messages); clamped to >= 4 (Think's clamp). Default 8 (Think's).
        min_part_bytes: media (and, in storage, tool-output strings) smaller than this (bytes,
            characters of base64) are never evicted. Default 32 KiB (Think's).
        max_request_bytes: the media of one request in all (bytes); past it the oldest are evicted
            from that request too, recent ones included. Default 20 MiB (under Anthropic's 32 MB
            request limit). think_nb's; Think has none.
        externalize_to_workspace: keep what is evicted from storage as workspace files under
            `/attachments/evicted/` (the marker names the file); False drops the bytes. Default True.
        max_rows_per_pass: stored messages rewritten per background pass (a pass with more to do
            schedules the next one). Default 64 (Think's).
    """

    keep_recent_messages: int = 8
    min_part_bytes: int = 32 * 1024
    max_request_bytes: int = 20 * 1024 * 1024
    externalize_to_workspace: bool = True
    max_rows_per_pass: int = 64

    @classmethod
    def coerce(cls, value: Any) -> MediaEviction | None:
        """The setting as a `MediaEviction` (True: the defaults), or None (False, None: off).

        Raises:
            UserError: anything else, a count that is not a whole number >= 0 (`max_rows_per_pass`:
                >= 1), or an `externalize_to_workspace` that is not a bool.
        """
        from think_nb.errors import UserError

        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(_FIELDS))
            if unknown:
                raise UserError(f"media_eviction: unknown field {unknown[0]!r}; use {', '.join(_FIELDS)}.")
            value = cls(**value)
        if not isinstance(value, cls):
            raise UserError(f"media_eviction={value!r}: use True, False, MediaEviction(...) or a dict of its fields.")
        for name in ("keep_recent_messages", "min_part_bytes", "max_request_bytes", "max_rows_per_pass"):
            field = getattr(value, name)
            least = 1 if name == "max_rows_per_pass" else 0
            if not isinstance(field, int) or isinstance(field, bool) or field < least:
                raise UserError(f"media_eviction: {name}={field!r}; use a whole number >= {least}.")
        if not isinstance(value.externalize_to_workspace, bool):
            raise UserError(f"media_eviction: externalize_to_workspace={value.externalize_to_workspace!r}; "
                            "use True (keep the bytes in the workspace) or False (drop them).")
        return value


_FIELDS = ("keep_recent_messages", "min_part_bytes", "max_request_bytes", "externalize_to_workspace",
           "max_rows_per_pass")


def _is_media_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("image_url", "file")


def _part_url(part: dict) -> str:
    if part["type"] == "image_url":
        inner = part.get("image_url")
        return str(inner.get("url", "") if isinstance(inner, dict) else inner or "")
    return str((part.get("file") or {}).get("file_data", ""))


def _describe(part: dict) -> str:
    parsed = parse_data_url(_part_url(part))
    media = parsed[0] if parsed else ("image" if part["type"] == "image_url" else "file")
    name = (part.get("file") or {}).get("filename") if part["type"] == "file" else None
    size = file_size(_part_url(part)) // 1024
    return f"{media}{' ' + name if name else ''}, {size:,} KB"


def has_media(messages: list[dict]) -> bool:
    """Whether any message's content is a list holding an image or file part."""
    return any(isinstance(m.get("content"), list) and any(map(_is_media_part, m["content"])) for m in messages)


def for_model(messages: list[dict], config: Any, eviction: MediaEviction | None = None) -> list[dict]:
    """`messages` (OpenAI-shaped, system first) adapted to `config`'s model: see the module docstring.
    Returns new message dicts where it changes something; the input is never changed."""
    if not any(map(isinstance, map(dict.get, messages, repeat("content")), repeat(list))):
        return messages  # no media anywhere (one C-level pass: a turn's cost stays flat as history grows)
    out = [dict(m) for m in messages]
    if eviction is not None:
        _evict(out, eviction)
    vision, pdf = sees(config)
    for m in out:
        if isinstance(m.get("content"), list):
            m["content"] = [_unseen(p, vision, pdf) for p in m["content"]]
    if config.provider not in TOOL_RESULT_MEDIA_PROVIDERS:
        out = _tool_media_after(out)
    for m in out:
        content = m.get("content")
        if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
            m["content"] = "\n\n".join(p.get("text", "") for p in content)
    return out


def sees(config: Any) -> tuple[bool, bool]:
    """`(images, pdfs)`: whether `config`'s model takes them. The embedded model takes neither; a
    scripted model both; a hosted model in litellm's model map when the map says so
    (`supports_vision`, `supports_pdf_input`: `litellm.register_model` adds or corrects an entry); a
    model the map does not know is sent them, as the AI SDK does (its provider's answer says if it
    cannot)."""
    from think_nb.models.resolve import LOCAL_PROVIDER, SCRIPTED_PROVIDER

    if config.provider == LOCAL_PROVIDER:
        return False, False
    if config.provider == SCRIPTED_PROVIDER:
        return True, True
    litellm = sys.modules.get("litellm")  # a hosted model's turn imports it off the loop (`preload_for`)
    if litellm is None:
        return True, True
    try:
        info = litellm.get_model_info(config.model)
    except Exception:  # noqa: BLE001 - not in litellm's map: unknown
        return True, True
    return info.get("supports_vision") is True, info.get("supports_pdf_input") is True


def _unseen(part: Any, vision: bool, pdf: bool) -> Any:
    if not _is_media_part(part):
        return part
    is_image = part["type"] == "image_url"
    if (is_image and vision) or (not is_image and pdf):
        return part
    what = "images" if is_image else "PDF files"
    return {"type": "text", "text": f"[{_describe(part)} attached: not shown to you, this model cannot see {what}]"}


def _evict(out: list[dict], eviction: MediaEviction) -> None:
    keep = max(4, eviction.keep_recent_messages)
    age, spent, previous = 0, 0, None
    for m in reversed(out):
        role = m.get("role")
        if role == "user" or (role in ("assistant", "tool") and previous not in ("assistant", "tool")):
            age += 1
        previous = role
        content = m.get("content")
        if not isinstance(content, list) or not any(map(_is_media_part, content)):
            continue
        parts = []
        for part in reversed(content):
            if _is_media_part(part):
                size = file_size(_part_url(part))
                old = age > keep and size >= eviction.min_part_bytes
                if old or spent + size > eviction.max_request_bytes:
                    part = {"type": "text", "text": f"[{_describe(part)}, from an earlier message: left out of "
                                                    "this request to save context; the user still sees it]"}
                else:
                    spent += size
            parts.append(part)
        m["content"] = parts[::-1]


def _tool_media_after(out: list[dict]) -> list[dict]:
    """Images and files of tool messages moved to one user message after their batch of tool results."""
    result: list[dict] = []
    held: list[dict] = []
    for n, m in enumerate(out):
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(content, list) and any(map(_is_media_part, content)):
            media = [p for p in content if _is_media_part(p)]
            texts = [p.get("text", "") for p in content if not _is_media_part(p)]
            count = f"{len(media)} attachment{'s' if len(media) > 1 else ''}"
            texts.append(f"[{count} of this result ({', '.join(map(_describe, media))}) in the next user message]")
            m = {**m, "content": "\n\n".join(t for t in texts if t)}
            held.append({"type": "text", "text": f"[Attachments of tool call {m.get('tool_call_id')}:]"})
            held.extend(media)
        result.append(m)
        following = out[n + 1] if n + 1 < len(out) else None
        if held and (following is None or following.get("role") != "tool"):
            result.append({"role": "user", "content": held})
            held = []
    return result
