"""A stdio MCP server's stderr log (issue 28 §5): a real child process writes to the pipe
`StderrLog.attempt()` hands out; the file holds only scrubbed, bounded lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from think_nb.mcp import stderr
from think_nb.mcp.stderr import LINE_LIMIT, StderrLog
from think_nb.redact import scrub, scrub_cut

SECRET = "resolved-upstream-secret-77"


def run_child(log: StderrLog, code: str) -> None:
    errlog = log.attempt()
    subprocess.run([sys.executable, "-c", code], stderr=errlog, timeout=60, check=False)
    log.close_writer()


async def test_what_a_child_prints_reaches_the_file_scrubbed_and_tail_is_this_attempts_text(tmp_path: Path) -> None:
    log = StderrLog(tmp_path / "s.log", lambda line, cut: scrub(line, {SECRET}))
    run_child(log, f"import sys; sys.stderr.write('first try: token {SECRET}\\n')")
    await log.drained()
    run_child(log, f"import sys; sys.stderr.write('second: ' + {SECRET!r}[:8] + '... rejected\\nbye')")
    await log.drained()
    assert (tmp_path / "s.log").read_text() == "first try: token ***\nsecond: ***... rejected\nbye\n"
    assert log.tail() == "second: ***... rejected\nbye\n"


async def test_an_endless_line_is_cut_and_the_next_line_is_kept(tmp_path: Path) -> None:
    log = StderrLog(tmp_path / "s.log", lambda line, cut: line)
    run_child(log, f"import sys; sys.stderr.write('x' * {LINE_LIMIT * 8} + '\\nafter\\n')")
    await log.drained()
    lines = (tmp_path / "s.log").read_text().splitlines()
    assert lines == ["x" * LINE_LIMIT, "after"]


async def test_a_lone_carriage_return_is_part_of_a_line_and_the_next_line_is_kept(tmp_path: Path) -> None:
    log = StderrLog(tmp_path / "s.log", lambda line, cut: line)
    run_child(log, "import sys; sys.stderr.write('loading 50%\\rloading 100%\\r'); "
                   "sys.stderr.write('FATAL: config missing\\n')")
    await log.drained()
    assert (tmp_path / "s.log").read_bytes() == b"loading 50%\rloading 100%\rFATAL: config missing\n"


async def test_a_secret_cut_at_the_line_limit_is_removed_whole(tmp_path: Path) -> None:
    """The kept part of an over-long line may end inside a secret: its beginning goes too."""
    log = StderrLog(tmp_path / "s.log", lambda line, cut: (scrub_cut if cut else scrub)(line, {SECRET}))
    keep = LINE_LIMIT - 10  # the line is cut 10 characters into the secret
    run_child(log, f"import sys; sys.stderr.write('x' * {keep} + {SECRET!r} + '\\nnext\\n')")
    await log.drained()
    first, second = (tmp_path / "s.log").read_text().splitlines()
    assert first == "x" * keep + "***" and second == "next"
    assert SECRET[:10] not in first


async def test_the_log_is_rotated_past_its_limit_and_the_pipes_end_is_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stderr, "LOG_LIMIT", 10_000)
    ended: list[int] = []
    folder = tmp_path / "logs"
    log = StderrLog(folder / "s.log", lambda line, cut: line, on_end=ended.append)
    run_child(log, "import sys\nfor i in range(1000): sys.stderr.write(f'line {i:04d} ' + 'y' * 40 + '\\n')")
    await log.drained()
    assert sorted(p.name for p in folder.iterdir()) == ["s.log", "s.log.1"]
    assert all(p.stat().st_size < 10_000 + 100 for p in folder.iterdir())  # bounded: two files of LOG_LIMIT
    assert (folder / "s.log").read_text().splitlines()[-1].startswith("line 0999 ")
    assert ended == [1]
