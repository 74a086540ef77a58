"""Which of the kernel's names the model sees, and what it is told about them.

    user_names(ns)                       # the user's names: no modules, IPython's own, private or think_nb's
    list_variables(ns, pattern="df*")    # {"type": "kernel-variables", "variables": [...], "text": ...}
    describe_variable(ns, "df")          # {"type": "kernel-describe", ...}: `--with df`'s description

Left out of `list_variables` (unless `include_callables` for the third): names starting with `_`,
names IPython put there itself (`shell.user_ns_hidden`: `In`, `Out`, `exit`, `get_ipython`, ...,
while still bound to IPython's object), modules, functions/classes/builtins, and think_nb's own
objects (agents, tools, panels: any object whose class comes from `think_nb`). What it shows is
bounded in tokens (`LIST_TOKENS`, `think_nb.session.tokens.count_tokens`): the names are sorted and
listed until the bound, the rest counted; only listed names are previewed, so 10,000 names cost a
type check each (~1 µs, cached per type) and one preview per listed name.
"""

from __future__ import annotations

import fnmatch
import inspect
import reprlib
import types
from collections.abc import Mapping
from typing import Any

LIST_TOKENS = 2_000
"""Token bound of `list_variables`' text."""
PREVIEW_CHARS = 80
"""Longest preview of one variable."""
DESCRIBE_TOKENS = 1_500
"""Token bound of `describe_variable` (the same as `--with`: `think_nb.data_context.TOKEN_BUDGET`)."""

_KINDS: dict[type, int] = {}
_DATA, _SKIP, _CALLABLE = 0, 1, 2


def _think_nb_type(cls: type) -> bool:
    return any(getattr(c, "__module__", "").startswith("think_nb") for c in getattr(cls, "__mro__", (cls,)))


def _kind(value: Any) -> int:
    """What values of `value`'s class are: data, skipped (modules, think_nb's objects) or callables
    (functions, builtins, methods, classes); decided once per class (~0.1 µs a name after)."""
    cls = type(value)
    found = _KINDS.get(cls)
    if found is None:
        if issubclass(cls, types.ModuleType) or _think_nb_type(cls):
            found = _SKIP
        elif inspect.isroutine(value) or isinstance(value, type):
            found = _CALLABLE
        else:
            found = _DATA
        if len(_KINDS) < 10_000:
            _KINDS[cls] = found
    return found


def user_names(ns: Mapping[str, Any], hidden: Mapping[str, Any] | None = None, *,
               include_callables: bool = False) -> list[str]:
    """The user's names in `ns`, sorted (see the module docstring for what is left out).
    `hidden`: IPython's `user_ns_hidden` (a name there is left out while it holds IPython's object)."""
    hidden = hidden or {}
    out = []
    for name, value in list(ns.items()):
        if not isinstance(name, str) or name[:1] == "_" or (name in hidden and hidden[name] is value):
            continue
        kind = _kind(value)
        if kind == _SKIP:
            continue
        if kind == _CALLABLE and (not include_callables or (isinstance(value, type) and _think_nb_type(value))):
            continue
        out.append(name)
    out.sort()
    return out


def _matches(name: str, pattern: str | None) -> bool:
    if not pattern:
        return True
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name.lower(), pattern.lower())
    return pattern.lower() in name.lower()


def shape_of(value: Any) -> str:
    """`(rows, cols)` of a frame/array, `len N` of a builtin container or string, else ""."""
    shape = getattr(value, "shape", None) if type(value).__module__.split(".")[0] in ("pandas", "numpy") else None
    if isinstance(shape, tuple):
        return "×".join(f"{n:,}" if isinstance(n, int) else str(n) for n in shape)
    if isinstance(value, (list, tuple, dict, set, frozenset, str, bytes)):
        return f"len {len(value):,}"
    return ""


_SHORT = reprlib.Repr()
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = _SHORT.maxfrozenset = _SHORT.maxdict = 6
_SHORT.maxstring = _SHORT.maxother = PREVIEW_CHARS
_SHORT.maxlevel = 2


def preview(value: Any) -> str:
    """A one-line preview of at most `PREVIEW_CHARS` characters that never raises."""
    try:
        module = type(value).__module__.split(".")[0]
        if module == "pandas" and hasattr(value, "columns"):
            cols = [str(c) for c in list(value.columns[:8])]
            text = "columns: " + ", ".join(cols) + (", …" if len(value.columns) > 8 else "")
        elif module == "pandas" and hasattr(value, "dtype"):
            named = getattr(value, "name", None)
            text = f"dtype {value.dtype}" + (f", name {named!r}" if named is not None else "")
        elif module == "numpy" and hasattr(value, "dtype") and hasattr(value, "shape"):
            text = f"dtype {value.dtype}"
        else:
            text = _SHORT.repr(value)
    except Exception as exc:  # noqa: BLE001 - a user object's __repr__ may raise anything
        text = f"<unrepresentable: {type(exc).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _type_name(value: Any) -> str:
    cls = type(value)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__name__
    return f"{cls.__module__.split('.')[0]}.{cls.__name__}"


def list_variables(ns: Mapping[str, Any], hidden: Mapping[str, Any] | None = None, *, pattern: str | None = None,
                   include_callables: bool = False, budget: int = LIST_TOKENS) -> dict:
    """`{"type": "kernel-variables", "total", "shown", "truncated", "variables": [{name, type, shape,
    preview}], "text"}`: the user's names matching `pattern` (a glob such as `df*`, or a substring),
    listed until `text` (what the model reads: one line per name) reaches `budget` tokens."""
    from think_nb.session.tokens import count_tokens

    names = [n for n in user_names(ns, hidden, include_callables=include_callables) if _matches(n, pattern)]
    rows: list[dict] = []
    lines: list[str] = []
    used = 0
    budget -= 40  # room for the header and the "… N more" line
    for name in names:  # each line counted once (~20 µs); lines joined count at most their sum plus the newlines
        value = ns.get(name)
        row = {"name": name, "type": _type_name(value), "shape": shape_of(value), "preview": preview(value)}
        line = f"{name}: {row['type']}" + (f" [{row['shape']}]" if row["shape"] else "") + f" = {row['preview']}"
        cost = count_tokens(line) + 1
        if used + cost > budget:
            break
        rows.append(row)
        lines.append(line)
        used += cost
    text = "\n".join(lines)
    more = len(names) - len(rows)
    head = f"{len(names):,} variable(s)" + (f" matching {pattern!r}" if pattern else "")
    if more:
        text += f"\n… {more:,} more not shown: call list_variables with a pattern (e.g. {names[len(rows)][:3]!r}*)."
    return {"type": "kernel-variables", "total": len(names), "shown": len(rows), "truncated": bool(more),
            "variables": rows, "text": f"{head}:\n{text}" if rows else f"{head}."}


def describe_value(name: str, value: Any, budget: int = DESCRIBE_TOKENS) -> dict:
    """`{"type": "kernel-describe", "name", "kind", "summary", "markdown", "tokens", "truncated"}`: the
    description `--with` attaches (`think_nb.data_context.context_part`). A frame is described as
    given: the caller passes a `data_context.snapshot` to describe it off the kernel's thread."""
    from think_nb.data_context import context_part

    data = context_part(name, value, budget)["data"]
    return {"type": "kernel-describe", **data}
