"""Strict JSON for every value think_nb stores, sends to the panel or shows to a model.

Tool results, hook outputs, `data-*` chunks and message metadata can hold any Python value, but
SQLite's JSON functions (and its FTS triggers), the comm channel (`allow_nan=False`, UTF-8) and
the model's messages accept only strict JSON (RFC 8259). `to_json_value` maps a value onto plain
JSON types (`dict` with `str` keys, `list`, `str`, `int`, finite `float`, `bool`, `None`) by the
table below; `dumps` is `json.dumps` of that with `allow_nan=False` and compact separators. Both
never raise: what has no JSON form becomes a bounded `repr` string. "Raises" below means any
exception user code throws (`SystemExit` and other `BaseException`s included); only
`KeyboardInterrupt` passes.

Mapping (a value takes the first row it matches; "→ x" means "becomes x, then is mapped again"):

=========================================  ===========================================================
Python value                               JSON value
=========================================  ===========================================================
`str` (and subclasses, `numpy.str_`)       the same text as a plain `str`; lone surrogates (text that
                                           cannot be UTF-8) → U+FFFD "�"
`None`, `bool`, `numpy.bool_`              `null`, `true` / `false`
`enum.Enum` member                         → its `.value`
`int` (and subclasses), `numpy` integers   the integer (any size)
`float`, `numpy` floating                  the number; **NaN, +Infinity, -Infinity → `null`** (as
                                           JavaScript's `JSON.stringify` and pandas' `to_json` do)
`decimal.Decimal`                          finite: its exact digits as a string, `"12.50"`; NaN/±Inf
                                           → `null`
`complex`, `numpy` complex                 `{"type": "complex", "real": float, "imag": float}`
`datetime.datetime` (`pandas.Timestamp`)   ISO 8601 string, `isoformat()`: `"2024-05-01T12:30:00"`
                                           (an aware value keeps its offset, `"...+02:00"`)
`datetime.date`                            `"2024-05-01"`
`datetime.time`                            `"12:30:00"`, `"12:30:00.250000+02:00"`
`datetime.timedelta` (`pandas.Timedelta`)  ISO 8601 duration string: `"P1DT2H3M4.5S"`, `"-PT1S"`,
                                           `"PT0S"`
`NaT` (pandas, numpy), `pandas.NA`         `null`
`numpy.datetime64` / `timedelta64`         as `datetime` (ISO string at the value's precision) /
                                           as `timedelta`
`uuid.UUID`, `pathlib.PurePath`,           `str(value)`: `"6f1c…"`, `"data/x.csv"`, `"10.0.0.1"`
`ipaddress` addresses and networks
`bytes`, `bytearray`, `memoryview`         `{"type": "bytes", "base64": "<standard base64>"}`
`dict` and any `Mapping`                   object; keys map by the key rule below; on a key
                                           collision (`{1: .., "1": ..}`) the later entry wins
namedtuple                                 object of its fields, `{"x": 1, "y": 2}`
`list`, `tuple`, `collections.deque`       array
`set`, `frozenset` (any `collections.abc.  array of the mapped elements, sorted (by value when they
Set`)                                      are mutually orderable, else by their JSON text)
`numpy.ndarray`                            nested arrays (`tolist()`), elements mapped as above
`pandas.DataFrame`                         `{"columns": [...], "index": [...], "data": [[row], ...]}`
                                           (pandas' `orient="split"`)
`pandas.Series`                            `{"name": ..., "index": [...], "data": [...]}`
`pandas.Index`, `Categorical`, other       array of its values
pandas extension arrays
`pandas.Period`, `pandas.Interval`         `str(value)`: `"2024-05"`, `"(0, 1]"`
pydantic model                             → `model_dump()` (python mode, so every nested value
                                           follows this table); if that fails, its fields
dataclass instance                         object of its fields (shallow, so cycles are caught)
a container already being mapped (cycle)   the marker string `"<cycle: TYPE>"`, e.g. `"<cycle: dict>"`
nesting deeper than `MAX_DEPTH` (100)      the marker string `"<too deep: TYPE>"`
anything else, or a value whose            `repr(value)`, cut to `REPR_LIMIT` (500) characters plus
conversion raises                          `"… (N chars)"`; `"<unrepresentable TYPE>"` when `repr` raises
=========================================  ===========================================================

Key rule: a `str` key stays (surrogates repaired); any other key is mapped by the table and, when
that is not a string, replaced by its compact JSON text: `1 → "1"`, `1.5 → "1.5"`,
`True → "true"`, `None → "null"`, `float("nan") → "null"`, `(1, "a") → '[1,"a"]'`,
`datetime(2024, 5, 1) → "2024-05-01T00:00:00"`.

Guarantees: `json.loads(dumps(x))` succeeds under strict parsing (no NaN/Infinity) for any `x`;
`to_json_value` is idempotent (`to_json_value(to_json_value(x)) == to_json_value(x)`) and returns
new containers (the input is never changed); the output encodes as UTF-8.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import datetime as dt
import decimal
import enum
import ipaddress
import json
import math
import pathlib
import re
import sys
import uuid
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "REPR_LIMIT", "STORED_DEPTH", "TooDeep", "dumps", "dumps_stored", "loads", "stored_value",
           "to_json_value"]

JSONValue = dict[str, Any] | list[Any] | str | int | float | bool | None
"""What `to_json_value` returns: only these types, nested (floats finite, dict keys `str`)."""

MAX_DEPTH = 100
"""Containers nested deeper than this become `"<too deep: TYPE>"` (SQLite's JSON limit is 1000)."""
REPR_LIMIT = 500
"""Characters of `repr(value)` kept for a value with no JSON form."""

_STRINGIFIED = (uuid.UUID, pathlib.PurePath, ipaddress.IPv4Address, ipaddress.IPv6Address,
                ipaddress.IPv4Network, ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface)


class TooDeep(ValueError):
    """Raised by `to_json_value(..., strict_depth=True)` for a value nested deeper than its bound
    (`depth`: the bound, in containers)."""

    def __init__(self, depth: int) -> None:
        super().__init__(f"nested more than {depth} containers deep")
        self.depth = depth


def to_json_value(obj: Any, max_depth: int = MAX_DEPTH, *, strict_depth: bool = False) -> JSONValue:
    """Map any Python value onto plain JSON types by the module's table; never raises (but see
    `strict_depth`). Only `max_depth` levels are walked, so a 100,000-deep value costs no recursion.

    Args:
        max_depth: containers nested deeper become `"<too deep: TYPE>"`.
        strict_depth: raise `TooDeep` instead of cutting (for input that must be kept whole).

    Returns:
        A value made only of `dict` (str keys), `list`, `str`, `int`, finite `float`, `bool` and `None`.
    """
    return _Mapper(max_depth, strict_depth).value(obj, 0)


def stored_value(obj: Any, *, strict_depth: bool = False) -> JSONValue:
    """`obj` exactly as SQLite holds it after `dumps_stored` (and reads it back): `to_json_value`
    with the store's bound `STORED_DEPTH`. What a record kept in memory must equal."""
    return to_json_value(obj, STORED_DEPTH, strict_depth=strict_depth)


def dumps(obj: Any, max_depth: int = MAX_DEPTH) -> str:
    """Strict, compact JSON text of `obj` (mapped by `to_json_value`): no NaN/Infinity, separators
    `,` and `:`, non-ASCII text kept as is (the result always encodes as UTF-8)."""
    return json.dumps(to_json_value(obj, max_depth), allow_nan=False, ensure_ascii=False, separators=(",", ":"))


STORED_DEPTH = 2 * MAX_DEPTH
"""The depth bound where records are stored (`think_nb.store`): values are bounded at
`MAX_DEPTH` where they enter (tool outputs, client results, configs), and a stored message wraps
them in a few more levels, so storing never cuts a value a second time (storage is idempotent)."""


def dumps_stored(obj: Any) -> str:
    """`dumps` with the store's depth bound (`STORED_DEPTH`); what every SQLite write uses."""
    return dumps(obj, STORED_DEPTH)


def loads(text: str | bytes) -> Any:
    """`json.loads` that accepts only strict JSON: `NaN`, `Infinity` and `-Infinity` (which Python's
    parser takes by default) raise `ValueError` like any other invalid JSON."""
    return json.loads(text, parse_constant=_reject_constant)


def dumps_plain(obj: Any, max_depth: int = MAX_DEPTH) -> str:
    """`dumps` for a value that is almost always plain JSON already (engine-built: recorded chunks,
    trace rows, message parts whose values were mapped where they entered): the C encoder is tried
    first and its text kept only when it is strict JSON that encodes as UTF-8 (no NaN, no lone
    surrogate); anything it refuses goes through `dumps`. The mapper's walk cost ~9% of a streamed
    10,000-delta turn and ~10% of a short tool turn's history conversion.

    Same text as `dumps` for values made of dict (str keys), list, str, int, float, bool and None
    (what the mapper returns unchanged); a namedtuple or a non-str key would differ, which is why
    this is only for values already mapped."""
    try:
        text = json.dumps(obj, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return dumps(obj, max_depth)
    return text


def dumps_chunks(chunks: list) -> str:
    """`dumps_plain` with the store's depth bound: a recorded stream segment or trace as stored."""
    return dumps_plain(chunks, STORED_DEPTH)


def loads_stored(text: str | bytes) -> Any:
    """Parse JSON that `dumps_stored` wrote (what every SQLite read uses): orjson (about 3x faster
    than `json` on a 10,000-message branch), but `json` when the text holds a run of 19 or more
    digits (orjson reads integers beyond 64 bits as floats; `json` keeps them exact)."""
    if _LONG_DIGITS.search(text if isinstance(text, str) else text.decode("utf-8", "replace")):
        return json.loads(text)
    return orjson.loads(text)


_LONG_DIGITS = re.compile(r"\d{19,}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _text(s: str) -> str:
    """`s` as an exact `str` that encodes as UTF-8 (lone surrogates → U+FFFD)."""
    if type(s) is not str:
        s = str.__str__(s)
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates; a valid pair (from surrogatepass input) is joined
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return s


def _float(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _duration(td: dt.timedelta) -> str:
    """ISO 8601 duration: `P1DT2H3M4.5S`; negative values get a leading `-`; zero is `PT0S`."""
    sign = "-" if td < dt.timedelta(0) else ""
    td = abs(td)
    hours, rest = divmod(td.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    secs = f"{seconds}.{td.microseconds:06d}".rstrip("0") if td.microseconds else str(seconds)
    time = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n)
    if seconds or td.microseconds:
        time += f"{secs}S"
    day = f"{td.days}D" if td.days else ""
    if not day and not time:
        time = "0S"
    return f"{sign}P{day}{'T' + time if time else ''}"


def _bounded_repr(obj: Any) -> str:
    try:
        text = repr(obj)
    except KeyboardInterrupt:  # the user's interrupt is not a conversion failure
        raise
    except BaseException:  # noqa: BLE001 - a broken __repr__ (SystemExit too) must not break a turn
        return f"<unrepresentable {type(obj).__qualname__}>"
    if not isinstance(text, str):
        return f"<unrepresentable {type(obj).__qualname__}>"
    text = _text(text)
    if len(text) > REPR_LIMIT:
        return f"{text[:REPR_LIMIT]}… ({len(text)} chars)"
    return text


def _is_missing(obj: Any) -> bool:
    """NaT-like: a datetime/timedelta value that is not equal to itself."""
    try:
        return bool(obj != obj)
    except KeyboardInterrupt:  # the user's interrupt is not a conversion failure
        raise
    except BaseException:  # noqa: BLE001 - SystemExit from a user __ne__ too
        return False


class _Mapper:
    """One mapping pass; `active` holds the ids of the containers on the current path (cycles)."""

    def __init__(self, max_depth: int = MAX_DEPTH, strict_depth: bool = False) -> None:
        self.active: set[int] = set()
        self.max_depth = max_depth
        self.strict_depth = strict_depth

    def value(self, obj: Any, depth: int) -> JSONValue:
        if isinstance(obj, str):
            return _text(obj)
        if obj is None or obj is True or obj is False:
            return obj
        if isinstance(obj, enum.Enum):
            return self.value(obj.value, depth)
        if isinstance(obj, int):
            return int.__int__(obj)  # an exact int, whatever a subclass's __int__ says
        if isinstance(obj, float):
            return _float(float.__float__(obj))
        if isinstance(obj, (dict, list, tuple)):
            return self.container(obj, depth)
        try:
            mapped = self.other(obj, depth)
        except (KeyboardInterrupt, TooDeep):  # the user's interrupt is not a conversion failure
            raise
        except BaseException:  # noqa: BLE001 - a value that will not convert (raising isoformat, property...)
            return _bounded_repr(obj)
        return _bounded_repr(obj) if mapped is _NO_MATCH else mapped

    def container(self, obj: Any, depth: int, owner: Any = None) -> JSONValue:
        """Map a container; `owner` is the object `obj` stands in for (a dataclass and its field
        dict): its id is what cycle detection tracks, so an object reached again through its own
        fields is a cycle."""
        source = obj if owner is None else owner
        if id(source) in self.active:
            return f"<cycle: {type(source).__name__}>"
        if depth >= self.max_depth:
            if self.strict_depth:
                raise TooDeep(self.max_depth)
            return f"<too deep: {type(source).__name__}>"
        self.active.add(id(source))
        try:
            return self._container(obj, depth + 1)
        except (KeyboardInterrupt, TooDeep):  # the user's interrupt is not a conversion failure
            raise
        except BaseException:  # noqa: BLE001 - a mapping whose items() raises, a failing __iter__...
            return _bounded_repr(source)
        finally:
            self.active.discard(id(source))

    def _container(self, obj: Any, depth: int) -> JSONValue:
        if isinstance(obj, Mapping):
            out: dict[str, Any] = {}
            for key, item in obj.items():
                out[self.key(key, depth)] = self.value(item, depth)
            return out
        if isinstance(obj, tuple) and hasattr(type(obj), "_fields") and hasattr(obj, "_asdict"):
            return self._container(obj._asdict(), depth)
        if isinstance(obj, AbstractSet):
            items = [self.value(item, depth) for item in obj]
            try:
                return sorted(items)
            except TypeError:
                return sorted(items, key=lambda v: json.dumps(v, allow_nan=False, ensure_ascii=False,
                                                              separators=(",", ":"), sort_keys=True))
        return [self.value(item, depth) for item in obj]

    def key(self, key: Any, depth: int) -> str:
        if isinstance(key, str):
            return _text(key)
        mapped = self.value(key, depth)
        if isinstance(mapped, str):
            return mapped
        return json.dumps(mapped, allow_nan=False, ensure_ascii=False, separators=(",", ":"))

    def other(self, obj: Any, depth: int) -> Any:
        """Every value but the plain JSON types and dict/list/tuple; `_NO_MATCH` when no row fits."""
        if isinstance(obj, decimal.Decimal):
            return str(obj) if obj.is_finite() else None
        if isinstance(obj, (dt.datetime, dt.date, dt.time)):
            return None if _is_missing(obj) else _text(obj.isoformat())
        if isinstance(obj, dt.timedelta):
            return None if _is_missing(obj) else _duration(obj)
        if isinstance(obj, complex):
            return {"type": "complex", "real": _float(obj.real), "imag": _float(obj.imag)}
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return {"type": "bytes", "base64": base64.b64encode(bytes(obj)).decode("ascii")}
        if isinstance(obj, _STRINGIFIED):
            return _text(str(obj))
        if isinstance(obj, (Mapping, AbstractSet, collections.deque)):
            return self.container(obj, depth)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            fields = {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}
            return self.container(fields, depth, owner=obj)
        return self.library(obj, depth)

    def library(self, obj: Any, depth: int) -> Any:
        """numpy, pandas and pydantic values, looked up only when their module is already imported."""
        np = sys.modules.get("numpy")
        if np is not None:
            if isinstance(obj, np.generic):
                return self.numpy_scalar(np, obj, depth)
            if isinstance(obj, np.ndarray):
                if obj.ndim == 0:
                    return self.value(obj[()], depth)
                return self.container(_array_values(np, obj), depth, owner=obj)
        pd = sys.modules.get("pandas")
        if pd is not None and type(obj).__module__.startswith("pandas"):
            mapped = self.pandas(pd, obj, depth)
            if mapped is not _NO_MATCH:
                return mapped
        pydantic = sys.modules.get("pydantic")
        if pydantic is not None and isinstance(obj, pydantic.BaseModel):
            try:
                fields = obj.model_dump()
            except KeyboardInterrupt:  # the user's interrupt is not a conversion failure
                raise
            except BaseException:  # noqa: BLE001 - cycles, failing serializers: fall back to the fields
                fields = {name: getattr(obj, name, None) for name in type(obj).model_fields}
            return self.container(fields, depth, owner=obj)
        return _NO_MATCH

    def numpy_scalar(self, np: Any, obj: Any, depth: int) -> JSONValue:
        if isinstance(obj, np.datetime64):
            return None if np.isnat(obj) else str(np.datetime_as_string(obj))
        if isinstance(obj, np.timedelta64):  # (a numpy integer subclass: check it first)
            return None if np.isnat(obj) else _duration(obj.astype("timedelta64[us]").item())
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return _float(obj)
        if isinstance(obj, np.complexfloating):
            return self.value(complex(obj), depth)
        item = obj.item()  # str_, bytes_, void, object scalars
        return _bounded_repr(obj) if isinstance(item, np.generic) else self.value(item, depth)

    def pandas(self, pd: Any, obj: Any, depth: int) -> Any:
        if obj is pd.NA or obj is pd.NaT:
            return None
        if isinstance(obj, pd.DataFrame):
            fields = {"columns": list(obj.columns), "index": list(obj.index),
                      "data": obj.to_numpy(dtype=object).tolist()}
            return self.container(fields, depth, owner=obj)
        if isinstance(obj, pd.Series):
            fields = {"name": obj.name, "index": list(obj.index), "data": obj.to_numpy(dtype=object).tolist()}
            return self.container(fields, depth, owner=obj)
        if isinstance(obj, (pd.Index, pd.api.extensions.ExtensionArray)):
            return self.container(list(obj), depth, owner=obj)
        if isinstance(obj, (pd.Period, pd.Interval)):
            return _text(str(obj))
        return _NO_MATCH


def _array_values(np: Any, arr: Any) -> Any:
    kind = arr.dtype.kind
    if kind == "M":  # datetime64: ISO text at the array's precision, NaT → None
        text = np.datetime_as_string(arr)
        return np.where(np.isnat(arr), None, text.astype(object)).tolist()
    if kind == "m":  # timedelta64 → datetime.timedelta (None for NaT)
        return arr.astype("timedelta64[us]").tolist()
    return arr.tolist()


_NO_MATCH = object()
