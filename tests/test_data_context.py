"""Data as context: `send(..., context=...)`, `%%think --with`, and bounded tool results (frames, arrays, sets,
datetimes, custom objects); a 1,000,000-row frame stays small in tokens and in SQLite."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import IPython
import numpy as np
import pandas as pd
import pytest
from IPython.testing.globalipapp import get_ipython

from agents import scripted_agent
from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.data_context import (
    MAX_OUTPUT_CHARS,
    TOKEN_BUDGET,
    context_part,
    context_parts_later,
    model_text,
    tool_output,
)
from think_nb.errors import UserError
from think_nb.messages import text_of
from think_nb.session.tokens import count_tokens
from think_nb.testing import ScriptedModel as S

ROWS = 1_000_000


@pytest.fixture(scope="module")
def big() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"id": np.arange(ROWS), "x": rng.normal(size=ROWS), "label": rng.choice(["a", "b"], ROWS),
                         "when": pd.date_range("2024-01-01", periods=ROWS, freq="s")})


def _db_bytes(path: Path) -> int:
    with sqlite3.connect(path) as db:  # what the rows hold, whatever the page cache or WAL state
        return sum(len(r[0]) for r in db.execute("SELECT content FROM think_messages"))


def test_a_million_row_frame_description_is_bounded_in_tokens(big: pd.DataFrame) -> None:
    count_tokens("warm up")  # litellm's import (the kernel preloads it) is not the description's cost
    started = time.perf_counter()
    part = context_part("df", big)
    took = time.perf_counter() - started
    data = part["data"]
    assert data["summary"] == "DataFrame, 1,000,000 rows × 4 columns"
    assert data["tokens"] == count_tokens(data["markdown"]) <= TOKEN_BUDGET
    assert data["truncated"] is True and "… 999,990 more rows" in data["markdown"]
    assert "describe() of a 100,000-row sample" in data["markdown"]
    assert data["markdown"].startswith("dtypes: id: int64, x: float64, label: ")
    print(f"\n1M-row frame: description {data['tokens']} tokens, {len(data['markdown'])} chars, {took * 1000:.0f} ms")


async def test_send_with_context_reaches_the_model_and_sqlite_stays_small(big: pd.DataFrame) -> None:
    script = S([[S.text("Noted.")]])
    agent = scripted_agent(script, tools=[], name="ctx2")
    before = _db_bytes(agent.db_path)
    result = await agent.send("Summarise df", context={"df": big, "note": {"k": list(range(1000))}})
    assert result.status == "completed"
    user = agent.messages[0]
    assert [p["type"] for p in user["parts"]] == ["text", "data-context", "data-context"]
    assert user["parts"][2]["data"]["markdown"].startswith("```\n{'k': [0, 1, 2, 3, 4, 5, ")
    content = script.requests[0]["messages"][-1]["content"]
    assert content.startswith("Summarise df\n\n[Attached data `df`: DataFrame, 1,000,000 rows × 4 columns]\ndtypes: ")
    assert "[Attached data `note`: dict]" in content
    stored = _db_bytes(agent.db_path) - before
    assert stored < 40_000
    print(f"\nsend(context=1M-row frame): {stored} bytes stored, prompt {count_tokens(content)} tokens")


async def test_a_tool_returning_a_million_row_frame_stores_and_sends_a_bounded_table(big: pd.DataFrame) -> None:
    @tool
    def load() -> object:
        """Load the data."""
        return big

    script = S([[S.tool_call("load", {}, id="c1")], [S.text("Loaded.")]])
    agent = scripted_agent(script, tools=[load], name="tbl")
    before = _db_bytes(agent.db_path)
    await agent.send("Load it")
    part = agent.messages[1]["parts"][1]
    output = part["output"]
    assert (output["type"], output["kind"], output["shape"], output["columns"], output["truncated"]) == (
        "table", "DataFrame", [ROWS, 4], ["id", "x", "label", "when"], True)
    tool_message = script.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == output["markdown"]
    lines = output["markdown"].splitlines()
    assert lines[0] == "DataFrame, 1,000,000 rows × 4 columns"
    assert sum(line.startswith("| ") for line in lines) == 1 + 20 + 1 + 5  # header, head, marker, tail
    assert "| … 999,975 more rows" in output["markdown"]
    stored = _db_bytes(agent.db_path) - before
    assert stored < 30_000
    print(f"\ntool returned a 1M-row frame: {stored} bytes stored, {count_tokens(output['markdown'])} tokens to model")


def test_tool_outputs_of_arrays_sets_datetimes_and_custom_objects() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "Thing()"

    assert tool_output({3, 1, 2}) == [1, 2, 3]
    assert tool_output(dt.datetime(2024, 5, 1, 12, 30)) == "2024-05-01T12:30:00"
    assert tool_output(Thing()) == "Thing()"
    assert tool_output(np.arange(4)) == [0, 1, 2, 3]
    matrix = tool_output(np.zeros((1000, 3)))
    assert (matrix["type"], matrix["kind"], matrix["shape"]) == ("table", "ndarray", [1000, 3])
    vector = tool_output(np.arange(10_000))
    assert vector["type"] == "table" and vector["markdown"].startswith("ndarray, shape (10000,), dtype int64\n\n```\n[")
    series = tool_output(pd.Series([1.5, 2.5], name="s"))
    assert series["markdown"] == ("Series 's', 2 rows, dtype float64\n\ndtypes: s: float64\n\n|    |   s |\n"
                                  "|---:|----:|\n|  0 | 1.5 |\n|  1 | 2.5 |")
    long = tool_output(["x" * 100] * 1000)
    assert long["type"] == "truncated" and long["chars"] > MAX_OUTPUT_CHARS == len(long["preview"])


def test_context_must_be_a_dict_of_names(tmp_path: Path) -> None:
    agent = Think("bad", db=tmp_path / "b.sqlite")
    with pytest.raises(UserError, match="pass a dict of names to objects"):
        agent.submit("hi", context=[1, 2])  # type: ignore[arg-type]


async def test_think_cell_with_attaches_notebook_variables(capsys: pytest.CaptureFixture) -> None:
    ip = get_ipython() or IPython.get_ipython()  # the test shell is returned only by the first call
    ip.run_line_magic("load_ext", "think_nb")
    script = S([[S.text("Got it.")]])
    agent = scripted_agent(script, tools=[], name="cell")
    ip.user_ns.update(calc=agent, df=pd.DataFrame({"a": [1, 2]}), model_results={"auc": 0.91})
    runtime_of(agent).subscribe(object())  # a listener: the cell shows no panel
    ip.run_cell_magic("think", "calc --with df,model_results", "Compare these")
    await agent.wait_until_stable(60)
    parts = agent.messages[0]["parts"]
    assert [(p["type"], p.get("id")) for p in parts] == [("text", None), ("data-context", "df"),
                                                         ("data-context", "model_results")]
    assert parts[1]["data"]["markdown"] == ("dtypes: a: int64\n\n|    |   a |\n|---:|----:|\n|  0 |   1 |\n"
                                            "|  1 |   2 |\n\ndescribe():\n\n|       |      a |\n|:------|-------:|\n"
                                            "| count | 2      |\n| mean  | 1.5    |\n| std   | 0.7071 |\n"
                                            "| min   | 1      |\n| 25%   | 1.25   |\n| 50%   | 1.5    |\n"
                                            "| 75%   | 1.75   |\n| max   | 2      |")
    assert parts[2]["data"]["markdown"] == "```\n{'auc': 0.91}\n```"
    ip.run_cell_magic("think", "calc --with nope", "x")
    assert "no variable 'nope' in this notebook" in capsys.readouterr().out


async def test_describing_attached_data_does_not_stall_the_event_loop(big: pd.DataFrame,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`send(context=)` describes frames with `context_parts_later`, off the event loop: here the
    description of a 1M-row frame finishes only after a callback it schedules on the loop has run,
    which could never happen if it ran on the loop (it would fail after 60 s, not hang)."""
    from think_nb import data_context

    loop = asyncio.get_running_loop()
    real = data_context.context_part
    loop_ran = threading.Event()
    threads: list[threading.Thread] = []

    def describing(*args: Any) -> dict:
        threads.append(threading.current_thread())
        loop.call_soon_threadsafe(loop_ran.set)
        assert loop_ran.wait(timeout=60), "the event loop did not run while the frame was described"
        return real(*args)

    monkeypatch.setattr(data_context, "context_part", describing)
    parts = await context_parts_later({"df": big})
    assert len(threads) == 1 and threads[0] is not threading.main_thread()
    assert parts == [real("df", big)]  # the same description as on the loop


async def test_attached_frames_are_described_as_they_were_when_sent_and_turns_keep_their_order() -> None:
    script = S([[S.text("One.")], [S.text("Two.")]])
    agent = scripted_agent(script, tools=[], name="snap")
    df = pd.DataFrame({"a": [1, 2]})
    expected = context_part("df", df)
    first = agent.submit("first", context={"df": df})
    df.loc[0, "a"] = 100  # the next cell changes the frame in place before the turn starts
    df["b"] = 1
    second = agent.submit("second")
    assert [(await first).status, (await second).status] == ["completed", "completed"]
    assert [text_of(m) for m in agent.messages] == ["first", "One.", "second", "Two."]
    assert agent.messages[0]["parts"][1] == expected


async def test_attached_data_is_kept_when_a_newer_message_supersedes_its_turn() -> None:
    """message_concurrency="latest": the superseded message is stored by the surviving turn, with its data."""
    agent = scripted_agent(S([[S.text("All seen.")]]), tools=[], name="latest", message_concurrency="latest")
    df = pd.DataFrame({"a": [1, 2]})
    first = agent.submit("first")
    superseded = agent.submit("second", context={"df": df})
    newest = agent.submit("third")
    assert [(await t).status for t in (first, superseded, newest)] == ["skipped", "skipped", "completed"]
    assert [text_of(m) for m in agent.messages] == ["first", "second", "third", "All seen."]
    assert agent.messages[1]["parts"][1] == context_part("df", df)


def test_a_result_with_more_values_than_fit_is_cut_without_converting_it_whole() -> None:
    """Issue 29 §6: a 1,000,000-element result was converted whole (1-2 s on the loop) to keep
    20,000 characters. Only the values the preview shows are converted; the preview is the
    whole value's JSON text cut, as before."""
    from think_nb import jsonsafe

    converted = []

    class Point:
        def __repr__(self) -> str:
            converted.append(1)
            return "P"

    points = tool_output([Point() for _ in range(1_000_000)])
    assert points["type"] == "truncated" and points["items"] == 1_000_000
    assert len(points["preview"]) == MAX_OUTPUT_CHARS and points["preview"].startswith('["P","P",')
    assert len(converted) <= MAX_OUTPUT_CHARS // 2 + 1
    assert model_text(points).endswith("… (cut: 1000000 items, more than 20,000 characters in all)")

    nested = {"rows": [{"i": i, "tags": [i, str(i)]} for i in range(20_000)], "total": 20_000}
    cut = tool_output(nested)
    assert cut["type"] == "truncated" and cut["preview"] == jsonsafe.dumps(nested)[:MAX_OUTPUT_CHARS]
    small = tool_output([10] * 9_000)  # fewer values than characters: converted and measured whole
    assert small["type"] == "truncated" and small["chars"] == len(jsonsafe.dumps([10] * 9_000))


async def test_think_cell_with_attaches_a_figure_and_a_pil_image() -> None:
    """Issue 31: `--with fig,img` attaches each as an image (a `file` part, PNG data URL), which the
    model receives as image content after the text."""
    import base64

    from matplotlib.figure import Figure
    from PIL import Image

    ip = get_ipython() or IPython.get_ipython()
    ip.run_line_magic("load_ext", "think_nb")
    script = S([[S.text("Two pictures.")]])
    agent = scripted_agent(script, tools=[], name="pics")
    fig = Figure(figsize=(1, 1), dpi=10)
    fig.add_subplot().plot([1, 2])
    ip.user_ns.update(pics=agent, fig=fig, img=Image.new("RGB", (3, 2), "red"))
    runtime_of(agent).subscribe(object())
    ip.run_cell_magic("think", "pics --with fig,img", "Compare these")
    await agent.wait_until_stable(60)
    text, figure, image = agent.messages[0]["parts"]
    assert text == {"type": "text", "text": "Compare these"}
    assert (figure["type"], figure["mediaType"], figure["filename"]) == ("file", "image/png", "fig.png")
    assert (image["type"], image["mediaType"], image["filename"]) == ("file", "image/png", "img.png")
    png = base64.b64decode(image["url"].removeprefix("data:image/png;base64,"))
    assert Image.open(__import__("io").BytesIO(png)).size == (3, 2)
    [request] = script.requests
    assert request["messages"][-1] == {"role": "user", "content": [
        {"type": "text", "text": "Compare these"},
        {"type": "image_url", "image_url": {"url": figure["url"]}},
        {"type": "image_url", "image_url": {"url": image["url"]}}]}


async def test_a_tool_returning_huge_bytes_encodes_only_the_preview_and_keeps_the_same_cut(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool returning 64 MB of bytes (not an image) was base64-encoded whole on the loop (~360 ms
    for 40 MB here) to keep 20,000 characters. Only the preview's head is encoded; the result is the
    whole value's JSON text cut, as before, for bytes, bytearray and memoryview."""
    import base64

    from think_nb import jsonsafe

    encoded: list[int] = []
    real = base64.b64encode
    monkeypatch.setattr(jsonsafe.base64, "b64encode", lambda data: encoded.append(len(data)) or real(data))
    for value in (b"\x01" * 30_001, bytearray(b"\x02" * 30_002), memoryview(b"\x03" * 100_000)):
        whole = jsonsafe.dumps({"type": "bytes", "base64": real(bytes(value)).decode("ascii")})
        assert tool_output(value) == {"type": "truncated", "chars": len(whole), "preview": whole[:MAX_OUTPUT_CHARS]}
    assert max(encoded) <= MAX_OUTPUT_CHARS

    blob = b"\x00" * 64_000_000

    @tool
    def dump() -> object:
        """Dump the raw buffer."""
        return blob

    agent = scripted_agent(S([[S.tool_call("dump", {}, id="c1")], [S.text("Dumped.")]]), tools=[dump], name="blob")
    await agent.send("Dump it")
    output = agent.messages[1]["parts"][1]["output"]
    assert output == {"type": "truncated", "chars": 28 + 4 * (64_000_000 // 3 + 1),
                      "preview": '{"type":"bytes","base64":"' + "A" * (MAX_OUTPUT_CHARS - 26)}
    assert max(encoded) <= MAX_OUTPUT_CHARS  # the loop never encoded the 64 MB (the stall guard checks the time)
