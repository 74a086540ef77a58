"""Python objects as context for the model: bounded descriptions of data frames, arrays and the rest.

Two uses, one rendering:

- **Data attached to a user message** (`agent.send(text, context={"df": df})`, `%%think Calc --with
  df,model_results`): each object becomes a `data-context` part of the user message (a matplotlib
  figure or a PIL image: a `file` part, the image itself, which a vision model sees),
  `{"type": "data-context", "id": name, "data": {"name", "kind", "summary", "markdown", "tokens",
  "truncated"}}`. The model sees `summary` and `markdown` after the message's text
  (`think_nb.messages.convert`); the panel shows it as a collapsible table.
- **Tool results** (`think_nb.tools.tool.dump_output`): a DataFrame, Series or a numpy array of more
  than 200 values becomes
  `{"type": "table", "kind", "shape", "columns", "markdown", "truncated"}` (the model reads only
  `markdown`); any other value is mapped by `think_nb.jsonsafe` (sets → sorted lists, datetimes →
  ISO text, custom objects → a bounded repr) and, when its JSON text is longer than
  `MAX_OUTPUT_CHARS`, stored as `{"type": "truncated", "chars": N, "preview": first chars}`.

What a description holds (DataFrame): shape, dtypes, the first and last `ROWS` rows as a markdown
table (columns beyond `MAX_COLUMNS` and cell text beyond `MAX_CELL` characters are cut), and
`describe()` (of a `DESCRIBE_SAMPLE`-row sample when the frame is longer: ~0.1 s for a 1,000,000-row
frame, done in a worker thread by `context_parts_later`, which `submit(context=)` uses); then it
is shrunk (describe dropped, fewer rows, finally cut) until it fits
`budget` tokens (default `TOKEN_BUDGET`, counted with `think_nb.session.tokens.count_tokens`). Every
cut is marked in the text (`… N more rows`, `… (cut)`) and sets `truncated`. Series: the same as a
one-column frame; numpy arrays: shape, dtype and `numpy.array2string` with `threshold`/`edgeitems`;
anything else: `reprlib` (bounded containers and strings).
"""

from __future__ import annotations

import asyncio
import base64
import reprlib
from typing import Any

from think_nb import jsonsafe

TOKEN_BUDGET = 1_500
"""Default token bound of one attached object's description."""
ROWS = 5
"""Rows shown from each end of a frame (head and tail)."""
TOOL_ROWS = 20
"""Rows shown from the start of a frame a tool returns (plus the last `ROWS`)."""
MAX_COLUMNS = 20
MAX_CELL = 40
DESCRIBE_SAMPLE = 100_000
MAX_OUTPUT_CHARS = 20_000
"""Longest JSON text of a tool result stored as it is; longer ones keep a preview."""
MAX_KERNEL_OUTPUT_CHARS = 40_000_000
"""The same for the kernel tools' outputs (`kernel-*`: they bound their parts, PNG figures are whole)."""


def _pandas() -> Any:
    import pandas as pd

    return pd


def _is_frame(obj: Any) -> bool:
    mod = type(obj).__module__
    if not mod.startswith("pandas"):
        return False
    pd = _pandas()
    return isinstance(obj, (pd.DataFrame, pd.Series))


def _is_array(obj: Any) -> bool:
    return type(obj).__module__ == "numpy" and type(obj).__name__ == "ndarray"


def _cell(value: Any) -> str:
    text = str(value).replace("\n", " ").replace("|", "\\|")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _table(frame: Any) -> str:
    """A markdown table of `frame` (already small), cells cut to `MAX_CELL` characters."""
    shown = frame.astype(object).map(_cell) if len(frame) else frame
    shown.columns = [_cell(c) for c in frame.columns]
    shown.index = [_cell(i) for i in frame.index]
    return str(shown.to_markdown())


def _sample_rows(rows: int) -> Any:
    """`DESCRIBE_SAMPLE` row positions out of `rows`, the same on every call (numpy's Generator, seed 0,
    in order): O(sample) where `DataFrame.sample` permutes every row (~60 ms for 1,000,000, holding
    the GIL, so a worker thread describing a frame would still stall the event loop)."""
    import numpy as np

    return np.sort(np.random.default_rng(0).choice(rows, DESCRIBE_SAMPLE, replace=False))


def _frame_parts(df: Any, head: int, tail: int, describe: bool) -> tuple[list[str], bool]:
    """Markdown sections of a frame: dtypes, rows (head/tail), describe(); and whether it was cut."""
    rows, cols = df.shape
    truncated = cols > MAX_COLUMNS
    view = df.iloc[:, :MAX_COLUMNS] if truncated else df
    dtypes = ", ".join(f"{_cell(c)}: {t}" for c, t in view.dtypes.items())
    sections = [f"dtypes: {dtypes}" + (f", … {cols - MAX_COLUMNS} more columns" if truncated else "")]
    if rows <= head + tail:
        sections.append(_table(view))
    else:
        truncated = True
        pd = _pandas()
        more = f"… {rows - head - tail:,} more rows"
        marker = pd.DataFrame([["…"] * view.shape[1]], columns=view.columns, index=[more])
        parts = [view.iloc[:head], marker] + ([view.iloc[rows - tail:]] if tail else [])
        sections.append(_table(pd.concat(parts)))
    if describe and rows:
        sample = view.take(_sample_rows(rows)) if rows > DESCRIBE_SAMPLE else view
        try:
            stats = sample.describe()
        except (TypeError, ValueError):  # no describable column
            stats = None
        if stats is not None and not stats.empty:
            label = f"describe() of a {DESCRIBE_SAMPLE:,}-row sample" if rows > DESCRIBE_SAMPLE else "describe()"
            sections.append(f"{label}:\n\n" + _table(stats.round(4)))
    return sections, truncated


def _summary(obj: Any) -> str:
    if _is_frame(obj):
        if obj.ndim == 1:
            return f"Series {obj.name!r}, {len(obj):,} rows, dtype {obj.dtype}"
        return f"DataFrame, {obj.shape[0]:,} rows × {obj.shape[1]:,} columns"
    if _is_array(obj):
        return f"ndarray, shape {tuple(obj.shape)}, dtype {obj.dtype}"
    return type(obj).__name__


def _tokens(text: str) -> int:
    from think_nb.session.tokens import count_tokens

    return count_tokens(text)


def _cut(text: str, budget: int) -> str:
    """Cut `text` to about `budget` tokens (by characters, checked with the counter), marked."""
    chars = budget * 3
    while chars > 40 and _tokens(text[:chars]) > budget - 8:
        chars = int(chars * 0.8)
    return text[:chars] + "\n… (cut)"


def describe(obj: Any, budget: int = TOKEN_BUDGET, *, rows: int = ROWS) -> tuple[str, bool]:
    """`(markdown, truncated)`: a description of `obj` of at most about `budget` tokens (see the module
    docstring). Never raises for odd objects: what cannot be described is shown as its bounded repr."""
    if _is_frame(obj):
        df = obj.to_frame() if obj.ndim == 1 else obj
        attempts = [(rows, rows, True), (rows, rows, False), (3, 2, False), (2, 0, False), (1, 0, False)]
        sections: list[str] = []
        truncated = False
        for head, tail, with_stats in attempts:
            sections, truncated = _frame_parts(df, head, tail, with_stats)
            text = "\n\n".join(sections)
            if _tokens(text) <= budget:
                return text, truncated or not with_stats
        return _cut("\n\n".join(sections), budget), True
    if _is_array(obj):
        import numpy as np

        text = np.array2string(obj, threshold=200, edgeitems=3, max_line_width=100)
        truncated = obj.size > 200
    else:
        short = reprlib.Repr()  # attributes, not keywords: Python 3.11
        short.maxlist = short.maxdict = short.maxset = short.maxtuple = short.maxfrozenset = short.maxdeque = 20
        short.maxstring = short.maxother = 2_000
        short.maxlevel = 4
        try:
            text = short.repr(obj)
        except Exception as exc:  # noqa: BLE001 - a user object's __repr__ may raise anything
            text = f"<unrepresentable {type(obj).__name__}: {type(exc).__name__}>"
        truncated = "..." in text
    text = f"```\n{text}\n```"
    if _tokens(text) > budget:
        return _cut(text, budget) + "\n```", True
    return text, truncated


def context_part(name: str, obj: Any, budget: int = TOKEN_BUDGET) -> dict:
    """The `data-context` part describing `obj` under `name` (a user message part; see module docstring);
    for a matplotlib figure, a PIL image or an IPython `Image`, a `file` part holding it as a PNG data
    URL instead, which a vision model sees (`think_nb.messages.media.file_part`; `UserError` when it is
    larger than `media.MAX_MEDIA_BYTES`)."""
    from think_nb.messages import media

    if media.is_image_value(obj):
        try:
            return media.file_part(obj, name)
        except ValueError as exc:
            from think_nb.errors import UserError

            raise UserError(f"cannot attach {name!r}: {exc}.") from None
    markdown, truncated = describe(obj, budget)
    data = {"name": name, "kind": type(obj).__name__, "summary": _summary(obj), "markdown": markdown,
            "tokens": _tokens(markdown), "truncated": truncated}
    return {"type": "data-context", "id": name, "data": data}


def _check_context(context: Any) -> dict:
    from think_nb.errors import UserError

    if not isinstance(context, dict) or not all(isinstance(k, str) and k for k in context):
        raise UserError(f"context={type(context).__name__}: pass a dict of names to objects, "
                        "e.g. context={'df': df}.")
    return context


def context_parts(context: Any, budget: int = TOKEN_BUDGET) -> list[dict]:
    """`data-context` parts for a `{name: object}` mapping; `UserError` for anything else."""
    return [context_part(name, obj, budget) for name, obj in _check_context(context).items()]


def snapshot(frame: Any) -> Any:
    """A copy of a DataFrame/Series that later writes to `frame` cannot change: a shallow copy under
    pandas' copy-on-write (pandas >= 3; O(columns)), else a deep copy."""
    pd = _pandas()
    cow = int(pd.__version__.split(".")[0]) >= 3 or pd.options.mode.copy_on_write is True
    return frame.copy(deep=not cow)


def context_parts_later(context: Any, budget: int = TOKEN_BUDGET) -> asyncio.Future:
    """`context_parts(context, budget)` without blocking the running event loop: a future of the same
    parts. Data frames and Series are described in the loop's default executor (a worker thread)
    from a `snapshot` taken now (a 1,000,000-row frame takes ~0.1 s there, litellm's tokenizer
    import on first use much longer); other objects (bounded reprs, numpy summaries: cheap) are
    described at once. `UserError` now for a bad `context`, or without a running loop."""
    from think_nb.errors import UserError

    items = _check_context(context).items()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise UserError("Attaching data needs a running event loop: use `await agent.send(..., context=...)` "
                        "in a notebook cell, or `agent.run(..., context=...)` in a script.") from None
    parts: list[asyncio.Future] = []
    from think_nb.messages.media import is_image_value

    for name, obj in items:
        if is_image_value(obj):  # a figure renders for tens of milliseconds: not on the loop
            parts.append(loop.run_in_executor(None, context_part, name, obj, budget))
        elif _is_frame(obj):
            parts.append(loop.run_in_executor(None, context_part, name, snapshot(obj), budget))
        else:
            done = loop.create_future()
            done.set_result(context_part(name, obj, budget))
            parts.append(done)
    return asyncio.gather(*parts)


def context_text(part: dict) -> str:
    """What the model reads for a `data-context` part (after the user's text)."""
    data = part.get("data")
    data = data if isinstance(data, dict) else {}
    return f"[Attached data `{data.get('name', '?')}`: {data.get('summary', '')}]\n{data.get('markdown', '')}"


def tool_output(value: Any) -> Any:
    """A tool's return value as stored and streamed: frames and arrays as bounded `table` objects,
    everything else as strict JSON (`jsonsafe.to_json_value`), bounded by `MAX_OUTPUT_CHARS`: a longer
    one is `{"type": "truncated", "chars", "preview"}`, or `{"type": "truncated", "items", "preview"}`
    when it holds more values than that (only the values the preview shows are converted)."""
    if _is_frame(value) or (_is_array(value) and value.ndim == 2 and value.size > 200):
        pd = _pandas()
        frame = value if _is_frame(value) else pd.DataFrame(value)
        frame = frame.to_frame() if frame.ndim == 1 else frame
        sections, truncated = _frame_parts(frame, TOOL_ROWS, ROWS, describe=False)
        markdown = f"{_summary(value)}\n\n" + "\n\n".join(sections)
        return {"type": "table", "kind": type(value).__name__, "shape": list(frame.shape),
                "columns": [jsonsafe.to_json_value(c) for c in frame.columns[:MAX_COLUMNS]],
                "markdown": markdown, "truncated": truncated}
    if _is_array(value) and value.size > 200:
        markdown, _ = describe(value)
        return {"type": "table", "kind": "ndarray", "shape": list(value.shape), "columns": [],
                "markdown": f"{_summary(value)}\n\n{markdown}", "truncated": True}
    if isinstance(value, (bytes, bytearray, memoryview)) and _nbytes(value) > MAX_OUTPUT_CHARS:
        return _long_bytes(value)
    if _more_values_than(value, MAX_OUTPUT_CHARS):  # cannot fit: convert only what the preview shows
        preview = jsonsafe.dumps(_first_values(value, [MAX_OUTPUT_CHARS // 2 + 1]))
        return {"type": "truncated", "items": len(value), "preview": preview[:MAX_OUTPUT_CHARS]}
    mapped = jsonsafe.to_json_value(value)
    text = jsonsafe.dumps(mapped)
    kernel = isinstance(mapped, dict) and str(mapped.get("type", "")).startswith("kernel-")
    if kernel and len(text) <= MAX_KERNEL_OUTPUT_CHARS:
        return mapped  # the kernel tools bound their own outputs (think_nb.kernel); figures stay whole
    if len(text) > MAX_OUTPUT_CHARS:
        return {"type": "truncated", "chars": len(text), "preview": text[:MAX_OUTPUT_CHARS]}
    return mapped


def _long_bytes(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    """The `truncated` form of bytes too long to keep, encoding only the head the preview shows (a tool
    returning 40 MB of bytes: base64 of the whole held the loop ~360 ms to keep 20,000 characters)."""
    value = value.tobytes() if isinstance(value, memoryview) else value
    size = len(value)
    head = jsonsafe.dumps({"type": "bytes", "base64": ""})[:-2]  # '{"type":"bytes","base64":"'
    preview = head + base64.b64encode(value[:MAX_OUTPUT_CHARS * 3 // 4]).decode("ascii")
    return {"type": "truncated", "chars": len(head) + 4 * -(-size // 3) + 2, "preview": preview[:MAX_OUTPUT_CHARS]}


def _nbytes(value: bytes | bytearray | memoryview) -> int:
    return value.nbytes if isinstance(value, memoryview) else len(value)


_CONTAINERS = (list, tuple, dict, set, frozenset)


def _more_values_than(value: Any, limit: int) -> bool:
    """Whether `value` (lists, tuples, dicts, sets, nested) holds more than `limit` values, found
    by walking at most `limit` of them. Each value is at least one character of JSON, so such a
    value never fits in `MAX_OUTPUT_CHARS` (issue 29 §6: converting a 1,000,000-element list
    whole to cut it after stalled the loop 1-2 s)."""
    if not isinstance(value, _CONTAINERS):
        return False
    seen, stack, visited = 0, [value], {id(value)}
    while stack:
        current = stack.pop()
        seen += len(current)
        if seen > limit:
            return True
        for item in current.values() if isinstance(current, dict) else current:
            if isinstance(item, _CONTAINERS) and len(item) and id(item) not in visited:  # a cycle counts once
                visited.add(id(item))
                stack.append(item)
    return False


def _first_values(value: Any, room: list[int], depth: int = 0, path: frozenset[int] = frozenset()) -> Any:
    """A copy of `value` keeping its first `room[0]` values in the order JSON writes them. Each kept
    value writes at least two characters with its separator, so `MAX_OUTPUT_CHARS // 2 + 1` of them
    give a text at least `MAX_OUTPUT_CHARS` long that starts as the whole value's does (a set's
    order may differ: JSON writes a set sorted)."""
    room[0] -= 1
    if depth > jsonsafe.MAX_DEPTH or id(value) in path:  # too deep, or a cycle: `jsonsafe` writes a marker
        return value
    path = path | {id(value)} if isinstance(value, _CONTAINERS) else path
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if room[0] <= 0:
                break
            out[key] = _first_values(item, room, depth + 1, path)
        return out
    if isinstance(value, _CONTAINERS):
        kept = []
        for item in value:
            if room[0] <= 0:
                break
            kept.append(_first_values(item, room, depth + 1, path))
        return kept
    return value


def model_text(output: Any) -> str | None:
    """The text the model reads for a stored tool output made by `tool_output`, or None for plain JSON."""
    if isinstance(output, dict) and output.get("type") == "table" and isinstance(output.get("markdown"), str):
        return output["markdown"]
    if isinstance(output, dict) and output.get("type") == "truncated" and isinstance(output.get("preview"), str):
        whole = (f"{output['chars']} characters" if "chars" in output
                 else f"{output.get('items')} items, more than {MAX_OUTPUT_CHARS:,} characters")
        return f"{output['preview']}… (cut: {whole} in all)"
    return None
