"""What each DataFrame row sends: its key, its message text and its data context.

`prompt` is one of:
- a column name (`"question"`): the row's value in that column, as text;
- a template over the row's columns (`"Classify: {text}"`, `str.format` fields; every field must
  be a column);
- a function `fn(row) -> str` (`row`: a dict of the row's columns plus `"index"`, its label).

`context` (optional) is one of: a list of column names (each row's values, attached as data
context parts, `think_nb.data_context`); a dict `{name: object}` attached to every row (a lookup
table, a style guide); a function `fn(row) -> {name: object}`.

A row's key is its index label as JSON (`0`, `"t-17"`, `[2024, "a"]`): the same DataFrame run
again under the same run id finds the same rows. The index must be unique.
"""

from __future__ import annotations

import contextlib
import json
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from think_nb.errors import UserError

__all__ = ["Row", "check", "prepare"]


@dataclass
class Row:
    """One DataFrame row, ready to run."""

    key: str
    position: int
    label: Any
    text: str
    context: dict[str, Any] | None


def check(df: Any, prompt: Any, context: Any) -> tuple[Callable[[dict], Any], Callable[[dict], Any]]:
    """`(render, attach)` for `df`'s rows, without reading a row: raises `UserError` (one line,
    naming the fix) for a bad `df`, `prompt` or `context` (`%think map` calls it before its task starts)."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise UserError(f"map() takes a pandas DataFrame, not {type(df).__name__}; "
                        "e.g. pd.DataFrame({'text': [...]}).")
    if not df.index.is_unique:
        raise UserError("map(): the DataFrame's index has repeated labels, so rows cannot be told apart; "
                        "use df.reset_index(drop=True) (or another unique index).")
    return _prompt(prompt, list(df.columns)), _context(context, list(df.columns))


def prepare(df: Any, prompt: Any, context: Any) -> list[Row]:
    """The rows of `df` as `Row`s. Raises `UserError` (one line, naming the fix) for a bad `df`,
    `prompt` or `context`, or a prompt function that does not return text."""
    render, attach = check(df, prompt, context)
    records = df.to_dict("records")
    out = []
    for position, (label, record) in enumerate(zip(df.index, records, strict=True)):
        row = {**record, "index": label}
        text = _rendered(render, row, label, callable(prompt))
        if not isinstance(text, str) or not text.strip():
            raise UserError(f"map(): the prompt for row {label!r} is {text!r:.60}; the prompt function must "
                            "return non-empty text.")
        out.append(Row(row_key(label), position, label, text, _rendered(attach, row, label, callable(context),
                                                                         "context")))
    return out


def _rendered(render: Callable[[dict], Any], row: dict, label: Any, function: bool, what: str = "prompt") -> Any:
    """`render(row)`; a template that does not fit a cell (`{n:.2f}` on text, `{t[0]}` on NaN), or a
    function that raises, is a `UserError` naming the row (the cells are data, the template is the
    fix)."""
    try:
        return render(row)
    except UserError:
        raise
    except Exception as exc:  # any failure on a row's cells is the same fix
        where = f"the {what} function raised" if function else f"the {what} template does not fit its cells:"
        said = " ".join(str(exc).split())
        raise UserError(f"map(): for row {label!r:.40}, {where} {type(exc).__name__}: {said:.120}; change the "
                        f"{what} (or clean the row).") from exc


def row_key(label: Any) -> str:
    """A row's key: its index label as JSON (a tuple of a MultiIndex as a list)."""
    if hasattr(label, "item") and callable(label.item):  # numpy scalars
        with contextlib.suppress(ValueError, TypeError):
            label = label.item()
    return json.dumps(list(label) if isinstance(label, tuple) else label, default=str)


def _prompt(prompt: Any, columns: list[Any]) -> Callable[[dict], Any]:
    if callable(prompt):
        return prompt
    if not isinstance(prompt, str) or not prompt.strip():
        raise UserError(f"map(prompt={prompt!r:.60}): pass a column name, a template such as 'Classify: {{text}}', "
                        "or a function row -> text.")
    if prompt in columns:
        return lambda row: str(row[prompt])
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(prompt) if f is not None]
    except ValueError as exc:
        raise UserError(f"map(prompt={prompt!r:.60}): not a valid template ({exc}); write {{column}} for a column, "
                        "{{ for a brace.") from None
    names = {f.split(".", 1)[0].split("[", 1)[0] for f in fields}
    if not names:
        raise UserError(f"map(prompt={prompt!r:.60}) is neither a column ({_shown(columns)}) nor a template naming "
                        "one: write e.g. 'Classify: {text}'.")
    unknown = sorted(n for n in names if n not in {str(c) for c in columns} | {"index"})
    if unknown:
        raise UserError(f"map(prompt=...) names {', '.join(unknown)}, which is not a column; the columns are "
                        f"{_shown(columns)}.")
    return lambda row: prompt.format_map({str(k): v for k, v in row.items()})


def _context(context: Any, columns: list[Any]) -> Callable[[dict], dict[str, Any] | None]:
    if context is None:
        return lambda row: None
    if callable(context):
        return lambda row: _checked(context(row))
    if isinstance(context, dict):
        fixed = _checked(context)
        return lambda row: dict(fixed)
    if isinstance(context, (list, tuple)) and all(c in columns for c in context):
        return lambda row: {str(c): row[c] for c in context}
    raise UserError(f"map(context={context!r:.60}): pass a list of column names ({_shown(columns)}), a dict "
                    "{name: object} attached to every row, or a function row -> {name: object}.")


def _checked(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise UserError(f"map(context=...) gave {value!r:.60}; context is a dict {{name: object}} with string names.")
    return value


def _shown(columns: list[Any]) -> str:
    names = ", ".join(repr(c) for c in columns[:12])
    return names + (", ..." if len(columns) > 12 else "") if columns else "none"
