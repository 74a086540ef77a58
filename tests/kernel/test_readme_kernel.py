"""Every notebook code line of README.md works when pasted into a real kernel (issue 27 §8).

The README's code blocks are split into the cells a reader would paste (a python block is one
cell; a plain block of `%think` lines is one cell per line magic, and a `%%think` line starts a
cell holding the lines under it) and run in order in one real ipykernel. A cell passes when it
raises nothing and prints no `think: ...` misuse line. The model is a test model
(`Think.default_model`, set before the README's cells), so the `%%think` turn runs offline.
The notebooks' prose code (a `def get_model` line in a markdown cell) compiles as a method.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

from harness import FakeFrontend

ROOT = Path(__file__).resolve().parents[2]

NOT_PASTABLE = {
    "getpass.getpass": "asks a person to type a key (stdin), which a test kernel has no one to answer",
}
"""README lines a test kernel cannot run, and why; the rest of their block still runs."""

PRELUDE = ("from think_nb import Think\nfrom think_nb.testing import FunctionModel\n"
           "Think.default_model = FunctionModel(lambda messages, info: 'It is 42.').model\n")


def code_blocks(markdown: str) -> list[tuple[str, str]]:
    """`(language, body)` of every fenced block."""
    return re.findall(r"^```(\w*)\n(.*?)^```", markdown, re.S | re.M)


def is_notebook_code(language: str, body: str) -> bool:
    """A python block, or an unlabelled block of `%think` lines (not a shell or a diagram)."""
    return language == "python" or (language == "" and body.lstrip().startswith("%"))


def cells_of(language: str, body: str) -> list[str]:
    """The cells a reader pastes from one block (see the module docstring)."""
    lines = [line for line in body.splitlines() if not any(marker in line for marker in NOT_PASTABLE)]
    if language == "python":
        return ["\n".join(lines)]
    cells: list[list[str]] = []
    for line in lines:
        in_cell_magic = bool(cells) and cells[-1][0].startswith("%%")
        if line.startswith("%%") or (re.match(r"(\w+\s*=\s*)?%", line) and not in_cell_magic):
            cells.append([line])
        else:
            cells[-1].append(line)
    return ["\n".join(cell) for cell in cells]


def readme_cells() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    return [cell for language, body in code_blocks(readme) if is_notebook_code(language, body)
            for cell in cells_of(language, body)]


def test_readme_cells_are_what_a_reader_pastes() -> None:
    """The splitting this test relies on: the quickstart's magic block is three cells, the last a
    `%%think` cell with its message (so a broken split cannot make the kernel test pass vacuously)."""
    cells = readme_cells()
    magic = [cell for cell in cells if cell.lstrip().startswith(("%think", "agent = %think", "%%think"))]
    assert len(magic) == 3, cells
    assert magic[2].startswith("%%think Calc") and magic[2].splitlines()[1] == "What is 2 plus 40?"
    assert all("# " in cell.splitlines()[0] for cell in magic), "the README's magic lines carry comments"
    assert any("class Calc(Think)" in cell for cell in cells) and any("class Tutor(Think)" in cell for cell in cells)


def test_every_readme_code_cell_runs_in_a_real_kernel(fresh_frontend) -> None:
    fe: FakeFrontend = fresh_frontend()
    fe.execute(PRELUDE).check()
    for cell in readme_cells():
        result = fe.execute(cell)
        raised = [f"{e['ename']}: {e['evalue']}" for e in result.errors]
        assert not raised, f"README cell raised {raised[0]}\n{cell}"
        misuse = [line for line in result.stdout.splitlines() if line.startswith("think:")]
        assert not misuse, f"README cell printed {misuse}:\n{cell}"
    # `agent = %think Calc` kept the agent, and the `%%think` cell's turn ran on it.
    out = fe.execute("await agent.wait_until_stable(30)\n"
                     "print([m['role'] for m in agent.messages], agent.messages[-1]['parts'][-1].get('text'))").check()
    assert out.stdout.split("\n")[0] == "['user', 'assistant'] It is 42."


def test_the_notebooks_prose_code_compiles() -> None:
    """The code in the notebooks' markdown cells: each python block is a method line for a class
    body (`def get_model(self): ...`) or a statement (a cell's: top-level `await` allowed); it compiles as one."""
    blocks = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                blocks += [(path.name, body) for language, body in code_blocks(cell.source) if language == "python"]
    assert blocks
    for name, body in blocks:
        source = body if not body.lstrip().startswith("def ") or "self" not in body else \
            "class _T:\n" + "".join(f"    {line}\n" for line in body.splitlines())
        compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # a cell may await, as in IPython
