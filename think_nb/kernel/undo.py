"""What a run changed in the kernel's namespace, and putting it back.

    before = Bindings.take(ns, mentioned)   # identities (and digests of the names the code mentions)
    ... the code runs ...
    changes = before.compare(ns)            # Changes(bound, rebound, deleted, mutated, old, new)
    RECORDS.keep(owner, call_id, changes)   # the values kept for undo (the latest KEEP runs per agent)
    undo(ns, changes)                       # UndoReport: restored / removed / left as they are / in place

Rebinding is compared by identity (`is`): `x = 1` after `x = 1` of another object is a rebind, a
method call that changes an object keeps its identity. An in-place change cannot be put back by
rebinding; it is detected where it can be, for the names the code mentions (`ast.Name`s): a
DataFrame/Series by `pandas.util.hash_pandas_object` (plus its columns and dtypes), an ndarray by
a BLAKE2 digest of its bytes (up to `DIGEST_BYTES`), a list/tuple/dict/set by its length and the
identities of its items (up to `DIGEST_ITEMS`: `append`, `pop`, `x[0] = y` are seen, a change
inside an item is not), an object with `__dict__` by its attributes' identities. A mutated name is
reported ("changed in place: df — cannot be undone") and never claimed undone.
"""

from __future__ import annotations

import ast
import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

KEEP = 20
"""Runs per agent whose old values are kept for undo (older runs cannot be undone)."""
DIGEST_ITEMS = 100_000
DIGEST_BYTES = 512 * 1024 * 1024
_MISSING = object()


def _dunder(name: object) -> bool:
    return not isinstance(name, str) or (name.startswith("__") and name.endswith("__"))


def mentioned_names(tree: ast.AST) -> set[str]:
    """The names a piece of code reads, binds or deletes (`ast.Name`, `global`/`nonlocal`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def digest(value: Any) -> Any:
    """A cheap fingerprint of `value`'s content, or None when none can be taken (see module docstring)."""
    try:
        module = type(value).__module__.split(".")[0]
        if module == "pandas" and hasattr(value, "index"):
            import pandas as pd

            cols = tuple(map(str, getattr(value, "columns", ()))), tuple(map(str, getattr(value, "dtypes", ())))
            try:
                content = int(pd.util.hash_pandas_object(value, index=True).sum())
            except TypeError:  # unhashable cells (lists, dicts): their identities
                content = hash(tuple(id(v) for v in value.to_numpy().ravel()[:DIGEST_ITEMS]))
            return ("pandas", value.shape, cols, content)
        if module == "numpy" and hasattr(value, "tobytes") and hasattr(value, "nbytes"):
            if value.nbytes > DIGEST_BYTES or value.dtype == object:
                return None
            return ("ndarray", value.shape, str(value.dtype), hashlib.blake2b(value.tobytes(), digest_size=16).digest())
        if isinstance(value, (list, tuple)):
            return (type(value).__name__, len(value), hash(tuple(map(id, value[:DIGEST_ITEMS]))))
        if isinstance(value, dict):
            items = list(value.items())[:DIGEST_ITEMS]
            return ("dict", len(value), hash(tuple((id(k), id(v)) for k, v in items)))
        if isinstance(value, (set, frozenset)):
            return ("set", len(value), hash(frozenset(map(id, value))) if len(value) <= DIGEST_ITEMS else None)
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict) and not isinstance(value, type):
            return ("object", hash(tuple((k, id(v)) for k, v in list(attrs.items())[:DIGEST_ITEMS])))
    except Exception:  # noqa: BLE001 - a user object may fail any of these
        return None
    return None


@dataclass
class Changes:
    """What one run changed: names `bound` (new), `rebound` (another object), `deleted`, `mutated`
    (same object, content changed); `old` holds what rebound/deleted names were bound to, `new`
    what bound/rebound names were bound to by the run."""

    bound: list[str] = field(default_factory=list)
    rebound: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    mutated: list[str] = field(default_factory=list)
    old: dict[str, Any] = field(default_factory=dict, repr=False)
    new: dict[str, Any] = field(default_factory=dict, repr=False)
    undone: bool = False

    def as_dict(self) -> dict:
        return {"bound": list(self.bound), "rebound": list(self.rebound), "deleted": list(self.deleted),
                "mutated": list(self.mutated)}

    @property
    def undoable(self) -> bool:
        return bool(self.bound or self.rebound or self.deleted)


class Bindings:
    """The namespace before a run: each name's object, and digests of the names the code mentions."""

    def __init__(self, ns: MutableMapping[str, Any], mentioned: Iterable[str]) -> None:
        self.objects = dict(ns)
        self.digests = {n: digest(self.objects[n]) for n in mentioned if n in self.objects}

    @classmethod
    def take(cls, ns: MutableMapping[str, Any], mentioned: Iterable[str]) -> Bindings:
        return cls(ns, mentioned)

    def compare(self, ns: MutableMapping[str, Any]) -> Changes:
        before, after = self.objects, dict(ns)
        changes = Changes()
        missing = _MISSING
        added = 0
        for name, value in after.items():
            was = before.get(name, missing)
            if was is value:
                continue
            added += was is missing
            if _dunder(name):  # __builtins__, __warningregistry__: Python's, not the user's
                continue
            if was is missing:
                changes.bound.append(name)
                changes.new[name] = value
            else:
                changes.rebound.append(name)
                changes.old[name], changes.new[name] = was, value
        if len(after) - added != len(before):  # some name went
            for name in before:
                if name not in after and not _dunder(name):
                    changes.deleted.append(name)
                    changes.old[name] = before[name]
        for name, was in self.digests.items():
            if was is not None and after.get(name, _MISSING) is before[name] and digest(before[name]) != was:
                changes.mutated.append(name)
        for names in (changes.bound, changes.rebound, changes.deleted, changes.mutated):
            names.sort()
        return changes


@dataclass
class UndoReport:
    """What `undo` did: `restored` (rebound or deleted names put back), `removed` (names the run
    bound, deleted again), `kept` ({name: why it was left as it is}), `in_place` (mutated names:
    cannot be undone). `str()` says it in one or two lines."""

    call_id: str
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)
    in_place: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        parts = []
        if self.restored:
            parts.append("restored: " + ", ".join(self.restored))
        if self.removed:
            parts.append("removed: " + ", ".join(self.removed))
        if self.kept:
            parts.append("left as they are: " + "; ".join(f"{n} ({why})" for n, why in self.kept.items()))
        if self.in_place:
            parts.append("changed in place: " + ", ".join(self.in_place) + " — cannot be undone")
        return f"undo {self.call_id}: " + ("; ".join(parts) if parts else "nothing to put back")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


def undo(ns: MutableMapping[str, Any], call_id: str, changes: Changes) -> UndoReport:
    """Put back the bindings `changes` records, each only while the name still holds what the run
    left there (a name rebound since is left as it is, and said so)."""
    report = UndoReport(call_id, in_place=list(changes.mutated))
    for name in changes.bound:
        current = ns.get(name, _MISSING)
        if current is _MISSING:
            continue
        if current is changes.new[name]:
            del ns[name]
            report.removed.append(name)
        else:
            report.kept[name] = "bound again since the run"
    for name in changes.rebound:
        if ns.get(name, _MISSING) is changes.new[name]:
            ns[name] = changes.old[name]
            report.restored.append(name)
        else:
            report.kept[name] = "changed again since the run"
    for name in changes.deleted:
        if name not in ns:
            ns[name] = changes.old[name]
            report.restored.append(name)
        else:
            report.kept[name] = "bound again since the run"
    changes.undone = True
    changes.old.clear()
    changes.new.clear()
    return report


class Records:
    """The kept changes of the latest `KEEP` runs of each owner (an agent's runtime, held weakly)."""

    def __init__(self) -> None:
        self._by_owner: weakref.WeakKeyDictionary[Any, OrderedDict[str, Changes]] = weakref.WeakKeyDictionary()
        self._anonymous: OrderedDict[str, Changes] = OrderedDict()

    def _runs(self, owner: Any) -> OrderedDict[str, Changes]:
        if owner is None:
            return self._anonymous
        runs = self._by_owner.get(owner)
        if runs is None:
            runs = self._by_owner[owner] = OrderedDict()
        return runs

    def keep(self, owner: Any, call_id: str, changes: Changes) -> None:
        runs = self._runs(owner)
        runs[call_id] = changes
        runs.move_to_end(call_id)
        while len(runs) > KEEP:
            runs.popitem(last=False)

    def get(self, owner: Any, call_id: str) -> Changes | None:
        return self._runs(owner).get(call_id)


RECORDS = Records()


UNDONE_MARK = "\n[undone by the user: "
"""Appended to a failed run's errorText when it is undone (its part has no output to mark)."""


def undo_call(engine: Any, owner: Any, call_id: str) -> UndoReport:
    """`agent.undo(call_id)`: undo run `call_id` of `owner`'s conversation and mark its stored part
    (`output.undone` / `output.undo_note`, or the error text of a failed run), so every view and the
    model see it (`engine.replace_message` tells the panels).

    Raises:
        UserError: not a settled `run_code` call of this conversation, undone already, or its kept
            values are gone (the kernel restarted since, or it is older than the latest `KEEP` runs).
    """
    import copy

    from think_nb.errors import UserError
    from think_nb.kernel.shell import namespace
    from think_nb.messages.accumulator import is_tool_part, tool_name_of

    found = None
    for message in reversed(engine.conversation.messages):
        for index, part in enumerate(message.get("parts", [])):
            if is_tool_part(part) and part.get("toolCallId") == call_id:
                found = (message, index, part)
                break
        if found:
            break
    if found is None:
        raise UserError(f"No tool call {call_id!r} in this conversation; nothing was undone.")
    message, index, part = found
    if tool_name_of(part) != "run_code" or part.get("state") not in ("output-available", "output-error"):
        raise UserError(f"Tool call {call_id!r} is a {tool_name_of(part)!r} call in state {part.get('state')!r}; only "
                        "a run_code call that ran can be undone. Nothing was undone.")
    output = part.get("output")
    if (isinstance(output, dict) and output.get("undone")) or UNDONE_MARK in str(part.get("errorText") or ""):
        raise UserError(f"Run {call_id!r} was undone already; nothing was changed.")
    changes = RECORDS.get(owner, call_id)
    if changes is None or changes.undone:
        raise UserError(f"Run {call_id!r} cannot be undone: what it replaced is no longer kept (the kernel restarted "
                        f"since, or it is older than the latest {KEEP} runs). Nothing was changed.")
    _, ns = namespace()
    report = undo(ns, call_id, changes)
    updated = copy.deepcopy(message)
    new_part = updated["parts"][index]
    if isinstance(new_part.get("output"), dict):
        new_part["output"] = {**new_part["output"], "undone": True, "undo_note": str(report)}
    else:
        new_part["errorText"] = f"{new_part.get('errorText') or ''}{UNDONE_MARK}{report}]"
    engine.replace_message(updated)
    return report
