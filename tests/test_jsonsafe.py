"""Strict JSON everywhere (think_nb.jsonsafe): the mapping table, a seeded property test, and a turn
whose tool returns each kind of value, completing, logged as completed and persisted."""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import pathlib
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pydantic
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from think_nb import Think, jsonsafe, tool
from think_nb.data_context import model_text, tool_output
from think_nb.jsonsafe import MAX_DEPTH, REPR_LIMIT, dumps, to_json_value
from think_nb.panel import protocol
from think_nb.testing import ScriptedModel as S


def _reject(name: str) -> Any:
    raise ValueError(f"{name} in JSON text")


def strict_loads(text: str) -> Any:
    """What SQLite, the comm and JSON.parse accept: no NaN/Infinity."""
    return json.loads(text, parse_constant=_reject)


def is_plain(value: Any) -> bool:
    """Only dict (str keys) / list / str / int / finite float / bool / None, nested."""
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(is_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and is_plain(v) for k, v in value.items())
    return False


# --- the table -------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


class Count(int):
    def __int__(self) -> int:
        return 99


@dataclasses.dataclass
class Point:
    x: float
    y: float
    tags: set = dataclasses.field(default_factory=set)


@dataclasses.dataclass
class Node:
    name: str
    parent: Any = None


class Reading(pydantic.BaseModel):
    value: float
    at: dt.datetime
    raw: bytes


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


class Chatty:
    def __repr__(self) -> str:
        return "x" * (REPR_LIMIT + 10)


class Broken:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class Unlistable(collections.abc.Mapping):
    """A mapping whose iteration fails."""

    def __getitem__(self, key: Any) -> Any:
        raise KeyError(key)

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Any:
        raise RuntimeError("cannot list")

    def __repr__(self) -> str:
        return "Unlistable()"


class Clock(dt.datetime):
    def isoformat(self, *args: Any) -> str:
        raise RuntimeError("no isoformat")

    def __repr__(self) -> str:
        return "Clock()"


Pair = collections.namedtuple("Pair", "left right")


def _cyclic_list() -> list:
    items: list = [1]
    items.append(items)
    return items


def _cyclic_dict() -> dict:
    d: dict = {"name": "root"}
    d["self"] = d
    return d


def _cyclic_node() -> Node:
    node = Node("a")
    node.parent = node
    return node


def _deep(levels: int) -> list:
    root: list = []
    cur = root
    for _ in range(levels - 1):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    return root


def _nested_lists(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = [leaf]
    return leaf


UTC2 = dt.timezone(dt.timedelta(hours=2))

TABLE: list[tuple[str, Any, Any]] = [
    # floats
    ("nan", float("nan"), None),
    ("inf", float("inf"), None),
    ("-inf", float("-inf"), None),
    ("mean-nan", {"mean": float("nan"), "n": 3}, {"mean": None, "n": 3}),
    ("finite-float", 1.5, 1.5),
    ("neg-zero", -0.0, -0.0),
    # scalars that stay
    ("str", "héllo", "héllo"),
    ("str-subclass", Name("ada"), "ada"),
    ("lone-surrogate", "a\ud800b", "a\ufffdb"),
    ("int", 10**30, 10**30),
    ("int-subclass", Count(7), 7),
    ("bool", True, True),
    ("none", None, None),
    # datetimes
    ("datetime", dt.datetime(2024, 5, 1, 12, 30), "2024-05-01T12:30:00"),
    ("datetime-aware", dt.datetime(2024, 5, 1, 12, 30, tzinfo=UTC2), "2024-05-01T12:30:00+02:00"),
    ("date", dt.date(2024, 5, 1), "2024-05-01"),
    ("time", dt.time(12, 30, 0, 250000), "12:30:00.250000"),
    ("timedelta", dt.timedelta(days=1, hours=2, minutes=3, seconds=4.5), "P1DT2H3M4.5S"),
    ("timedelta-negative", dt.timedelta(seconds=-1), "-PT1S"),
    ("timedelta-zero", dt.timedelta(0), "PT0S"),
    # numbers with no JSON form
    ("decimal", decimal.Decimal("12.50"), "12.50"),
    ("decimal-nan", decimal.Decimal("NaN"), None),
    ("decimal-inf", decimal.Decimal("-Infinity"), None),
    ("complex", 1 + 2j, {"type": "complex", "real": 1.0, "imag": 2.0}),
    ("complex-inf", complex(float("inf"), 1), {"type": "complex", "real": None, "imag": 1.0}),
    # identifiers
    ("uuid", uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    ("path", pathlib.PurePosixPath("data") / "x.csv", "data/x.csv"),
    # numpy
    ("np-float64", np.float64(2.25), 2.25),
    ("np-float32-nan", np.float32("nan"), None),
    ("np-int64", np.int64(-3), -3),
    ("np-bool", np.bool_(True), True),
    ("np-complex", np.complex64(1 + 1j), {"type": "complex", "real": 1.0, "imag": 1.0}),
    ("np-array", np.array([[1.0, np.nan], [np.inf, 2.0]]), [[1.0, None], [None, 2.0]]),
    ("np-array-0d", np.array(5), 5),
    ("np-datetime64", np.datetime64("2024-05-01T12:30"), "2024-05-01T12:30"),
    ("np-nat", np.datetime64("NaT"), None),
    ("np-datetime-array", np.array(["2024-05-01", "NaT"], dtype="datetime64[D]"), ["2024-05-01", None]),
    ("np-timedelta64", np.timedelta64(90, "s"), "PT1M30S"),
    # pandas
    ("dataframe", pd.DataFrame({"a": [1.0, None], "t": [pd.Timestamp("2024-05-01"), pd.NaT]}),
     {"columns": ["a", "t"], "index": [0, 1], "data": [[1.0, "2024-05-01T00:00:00"], [None, None]]}),
    ("series", pd.Series([1.5, np.nan], index=["x", "y"], name="s"),
     {"name": "s", "index": ["x", "y"], "data": [1.5, None]}),
    ("timestamp", pd.Timestamp("2024-05-01 12:00", tz="UTC"), "2024-05-01T12:00:00+00:00"),
    ("pd-nat", pd.NaT, None),
    ("pd-na", pd.NA, None),
    ("pd-timedelta", pd.Timedelta("1h"), "PT1H"),
    ("pd-index", pd.Index([3, 1]), [3, 1]),
    ("categorical", pd.Categorical(["b", "a"]), ["b", "a"]),
    ("period", pd.Period("2024-05", freq="M"), "2024-05"),
    # bytes
    ("bytes", b"\x00\xff", {"type": "bytes", "base64": "AP8="}),
    ("bytearray", bytearray(b"hi"), {"type": "bytes", "base64": "aGk="}),
    ("memoryview", memoryview(b"hi"), {"type": "bytes", "base64": "aGk="}),
    # collections
    ("set", {3, 1, 2}, [1, 2, 3]),
    ("frozenset-mixed", frozenset({"a", None, 2}), ["a", 2, None]),  # unorderable: by JSON text
    ("tuple", (1, (2, 3)), [1, [2, 3]]),
    ("namedtuple", Pair(1, "b"), {"left": 1, "right": "b"}),
    ("deque", collections.deque([1, 2]), [1, 2]),
    ("keys", {1: "a", 1.5: "b", None: "c", (1, "x"): "e", dt.date(2024, 5, 1): "g", Color.RED: "h"},
     {"1": "a", "1.5": "b", "null": "c", '[1,"x"]': "e", "2024-05-01": "g", "red": "h"}),
    ("keys-bool-nan", {True: "t", float("nan"): "n"}, {"true": "t", "null": "n"}),
    ("key-collision", {1: "int", "1": "str"}, {"1": "str"}),
    # objects
    ("pydantic", Reading(value=float("nan"), at=dt.datetime(2024, 5, 1), raw=b"\x01"),
     {"value": None, "at": "2024-05-01T00:00:00", "raw": {"type": "bytes", "base64": "AQ=="}}),
    ("dataclass", Point(1.0, float("inf"), {"b", "a"}), {"x": 1.0, "y": None, "tags": ["a", "b"]}),
    ("enum", Color.RED, "red"),
    ("int-enum", Level.HIGH, 3),
    ("cycle-list", _cyclic_list(), [1, "<cycle: list>"]),
    ("cycle-dict", _cyclic_dict(), {"name": "root", "self": "<cycle: dict>"}),
    ("cycle-dataclass", _cyclic_node(), {"name": "a", "parent": "<cycle: Node>"}),
    ("shared-not-cycle", (lambda x: [x, x])([1]), [[1], [1]]),
    ("too-deep", _deep(MAX_DEPTH + 5), _nested_lists(MAX_DEPTH, "<too deep: list>")),
    ("object", Opaque(), "Opaque()"),
    ("long-repr", Chatty(), "x" * REPR_LIMIT + f"… ({REPR_LIMIT + 10} chars)"),
    ("broken-repr", Broken(), "<unrepresentable Broken>"),
    ("raising-mapping", Unlistable(), "Unlistable()"),
    ("raising-datetime", Clock(2024, 5, 1), "Clock()"),
    ("function", len, "<built-in function len>"),
]
"""(id, value, expected JSON value): every row of think_nb.jsonsafe's mapping table."""


@pytest.mark.parametrize(("value", "expected"), [(v, e) for _, v, e in TABLE], ids=[i for i, _, _ in TABLE])
def test_mapping_table(value: Any, expected: Any) -> None:
    mapped = to_json_value(value)
    assert mapped == expected
    assert is_plain(mapped)
    assert to_json_value(mapped) == mapped  # idempotent
    text = dumps(value)
    assert strict_loads(text) == expected
    text.encode("utf-8")  # lone surrogates were repaired
    assert text == json.dumps(expected, separators=(",", ":"), ensure_ascii=False)  # compact, not escaped


def test_the_input_is_not_changed_and_containers_are_new() -> None:
    value = {"a": [1.0, float("nan")], "s": {2, 1}}
    mapped = to_json_value(value)
    assert mapped == {"a": [1.0, None], "s": [1, 2]}
    assert math.isnan(value["a"][1]) and value["s"] == {1, 2}
    plain = {"a": [1]}
    assert to_json_value(plain) == plain and to_json_value(plain) is not plain


def test_loads_is_strict_and_dumps_never_emits_nan() -> None:
    assert jsonsafe.loads('{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    for bad in ('{"a": NaN}', "[Infinity]", "-Infinity"):
        with pytest.raises(ValueError, match="not a JSON value"):
            jsonsafe.loads(bad)
    assert dumps({"x": float("nan"), "y": [float("-inf")]}) == '{"x":null,"y":[null]}'
    assert dumps("é") == '"é"'  # not \\u-escaped: the text goes to SQLite and the comm as UTF-8


# --- property test ---------------------------------------------------------------------

_hashable_leaves = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
                    | st.text(st.characters() | st.sampled_from(["\ud800", "\udfff"]), max_size=8)
                    | st.datetimes(timezones=st.none() | st.just(dt.UTC)) | st.dates()
                    | st.binary(max_size=8) | st.uuids())
_keys = _hashable_leaves | st.tuples(_hashable_leaves, _hashable_leaves)
_numpy = (st.builds(np.float64, st.floats(allow_nan=True, allow_infinity=True))
          | st.builds(np.int64, st.integers(-(2**63), 2**63 - 1))
          | hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=3),
                       elements=st.floats(allow_nan=True, allow_infinity=True)))
_leaves = (_hashable_leaves | st.timedeltas() | st.times() | st.complex_numbers(allow_nan=True, allow_infinity=True)
           | st.decimals(allow_nan=True, allow_infinity=True) | _numpy)


def _containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return (st.lists(children, max_size=4) | st.tuples(children, children)
            | st.sets(_hashable_leaves, max_size=4) | st.frozensets(_hashable_leaves, max_size=4)
            | st.dictionaries(_keys, children, max_size=4))


jsonish = st.recursive(_leaves, _containers, max_leaves=20)


@seed(20261130)
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(jsonish)
def test_any_jsonish_value_becomes_strict_json_idempotently(value: Any) -> None:
    mapped = to_json_value(value)
    assert is_plain(mapped)
    assert to_json_value(mapped) == mapped
    text = dumps(value)
    assert strict_loads(text) == mapped
    text.encode("utf-8")


# --- frames --------------------------------------------------------------------------


def test_kernel_frames_are_strict_json() -> None:
    chunk = {"type": "tool-output-available", "toolCallId": "c1",
             "output": {"mean": float("nan"), "at": dt.date(2024, 5, 1)}}
    frame = protocol.use_chat_response("r1", [chunk], done=True)
    assert frame["chunks"][0]["output"] == {"mean": None, "at": "2024-05-01"}
    json.dumps(frame, allow_nan=False)  # what the comm's packer does
    updated = protocol.message_updated({"id": "m", "role": "assistant", "parts": [],
                                        "metadata": {"cost_usd": float("nan")}})
    assert updated["message"]["metadata"] == {"cost_usd": None}
    session = protocol.session_frame({"phase": "idle", "blocks": [{"label": "x", "percent_used": float("nan")}]})
    assert session["blocks"][0]["percent_used"] is None


# --- end to end: a tool returns each value ---------------------------------------------

RETURNED: dict[str, Any] = {name: value for name, value, _ in TABLE}


@tool
def produce(name: str) -> Any:
    """Return one of the test values."""
    return RETURNED[name]


def _producer(script: S) -> type[Think]:
    return type("Producer", (Think,), {"get_model": lambda self: script.model, "get_tools": lambda self: [produce]})


@pytest.mark.parametrize("name", [name for name, _, _ in TABLE])
async def test_a_tool_returning_the_value_completes_and_persists(name: str, tmp_path: Path) -> None:
    script = S([[S.tool_call("produce", {"name": name})], [S.text("Done.")]])
    db = tmp_path / "values.sqlite"
    agent = _producer(script)("p", db=db)
    result = await agent.send(f"produce {name}")
    assert (result.status, result.error) == ("completed", None)
    assert [t["status"] for t in agent.turns()] == ["completed"]
    expected = {n: e for n, _, e in TABLE}[name]
    if name in ("dataframe", "series"):  # a bounded table (think_nb.data_context); the model reads its markdown
        expected = tool_output(RETURNED[name])
    part = agent.messages[1]["parts"][1]
    assert (part["state"], part["output"]) == ("output-available", expected)
    # the model was sent the same value as strict JSON text (a table: its markdown)
    tool_message = script.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    text = expected if isinstance(expected, str) else model_text(expected) or dumps(expected)
    assert tool_message["content"] == text
    reopened = _producer(script)("p", db=db)
    assert reopened.messages == agent.messages
    assert reopened.messages[1]["parts"][1]["output"] == expected


async def test_tool_arguments_with_nan_are_refused_not_stored(tmp_path: Path) -> None:
    script = S([[S.tool_call("produce", '{"name": NaN}')], [S.text("Sorry.")]])
    agent = _producer(script)("p", db=tmp_path / "nan.sqlite")
    result = await agent.send("go")
    assert result.status == "completed"
    part = agent.messages[1]["parts"][1]
    assert part["state"] == "output-error"
    assert "NaN is not a JSON value" in part["errorText"]
    assert _producer(script)("p", db=tmp_path / "nan.sqlite").messages == agent.messages


# --- user code raising what is not an Exception -------------------------------------------


class Stop(BaseException):
    """A user-defined BaseException."""


def _raiser(exc: BaseException) -> Any:
    def fail(*args: Any) -> Any:
        raise exc
    return fail


@pytest.mark.parametrize("exc", [SystemExit("x"), Stop("x")], ids=["SystemExit", "Stop"])
def test_user_code_raising_a_base_exception_is_a_conversion_failure(exc: BaseException) -> None:
    bad_repr = type("BadRepr", (), {"__repr__": _raiser(exc)})()
    bad_iter = type("BadIter", (Unlistable,), {"__iter__": _raiser(exc)})()
    bad_iso = type("BadIso", (Clock,), {"isoformat": _raiser(exc)})(2024, 5, 1)
    raised = mapped = None
    try:
        mapped = to_json_value({"repr": bad_repr, "iter": bad_iter, "iso": bad_iso})
    except BaseException as exc:  # noqa: BLE001 - reported below, without the frames (pytest would repr them)
        raised = type(exc).__name__
    assert raised is None, f"to_json_value let {raised} through"
    assert mapped == {"repr": "<unrepresentable BadRepr>", "iter": "Unlistable()", "iso": "Clock()"}
    assert strict_loads(dumps([bad_repr])) == ["<unrepresentable BadRepr>"]


def test_keyboard_interrupt_from_user_code_passes() -> None:
    with pytest.raises(KeyboardInterrupt):
        to_json_value(type("Interrupted", (), {"__repr__": _raiser(KeyboardInterrupt())})())
