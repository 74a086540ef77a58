"""`docs/think-tests.md` (Think's test list, case by case) stays true to itself: its counts are
its rows', every think_nb test a row names exists, and `tests/think_cases.txt` (what the doc's
command runs) lists exactly those tests."""

from __future__ import annotations

import collections
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "think-tests.md"
CASES = ROOT / "tests" / "think_cases.txt"
STATUSES = ("pass", "fail", "missing", "n/a")


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def case_rows() -> list[list[str]]:
    """The rows of the case tables: `[file, case, test, status, note]`."""
    rows = [cells(line) for line in DOC.read_text().splitlines() if line.startswith("| ")]
    return [r for r in rows if len(r) == 5 and r[3] in STATUSES]


def test_the_counts_are_the_rows() -> None:
    rows = case_rows()
    counted = collections.Counter(r[3] for r in rows)
    lines = DOC.read_text().splitlines()
    header = lines.index("| cases | pass | fail | missing | n/a | pass ÷ (pass + fail + missing) |")
    total, passed, failed, missing, na, ratio = cells(lines[header + 2])
    assert [int(total), int(passed), int(failed), int(missing), int(na)] == [
        len(rows), counted["pass"], counted["fail"], counted["missing"], counted["n/a"]]
    scored = counted["pass"] + counted["fail"] + counted["missing"]
    assert ratio == f"{counted['pass']}/{scored} = {counted['pass'] / scored:.1%}"


def test_every_named_test_exists_and_think_cases_txt_lists_exactly_them() -> None:
    rows = case_rows()
    named = {r[2].strip("`") for r in rows if r[2] != "—"}
    assert all(r[2] != "—" for r in rows if r[3] == "pass")  # a pass names the test that asserts it
    assert all(r[4] for r in rows if r[3] != "pass")  # anything else says why
    for node in sorted(named):
        path, name = node.split("::")
        assert re.search(rf"^(async )?def {re.escape(name)}\(", (ROOT / path).read_text(), re.M), node
    assert CASES.read_text().split() == sorted(named)
