"""A stdio MCP server's stderr log (issue 28 §5): a real child process writes to the pipe
`StderrLog.attempt()` hands out; the file holds only scrubbed, bounded lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from think_nb.mcp.stderr import LINE_LIMIT, StderrLog
from think_nb.redact import scrub

SECRET = "resolved-upstream-secret-77"


def run_child(log: StderrLog, code: str) -> None:
    errlog = log.attempt()
    subprocess.run([sys.executable, "-c", code], stderr=errlog, timeout=60, check=False)
    log.close_writer()


async def test_what_a_child_prints_reaches_the_file_scrubbed_and_tail_is_this_attempts_text(tmp_path: Path) -> None:
    log = StderrLog(tmp_path / "s.log", lambda line: scrub(line, {SECRET}))
    run_child(log, f"import sys; sys.stderr.write('first try: token {SECRET}\\n')")
    await log.drained()
    run_child(log, f"import sys; sys.stderr.write('second: ' + {SECRET!r}[:8] + '... rejected\\nbye')")
    await log.drained()
    assert (tmp_path / "s.log").read_text() == "first try: token ***\nsecond: ***... rejected\nbye\n"
    assert log.tail() == "second: ***... rejected\nbye\n"


async def test_an_endless_line_is_cut_and_the_next_line_is_kept(tmp_path: Path) -> None:
    log = StderrLog(tmp_path / "s.log", lambda line: line)
    run_child(log, f"import sys; sys.stderr.write('x' * {LINE_LIMIT * 8} + '\\nafter\\n')")
    await log.drained()
    lines = (tmp_path / "s.log").read_text().splitlines()
    assert lines == ["x" * LINE_LIMIT, "after"]
