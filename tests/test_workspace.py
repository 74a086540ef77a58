"""The workspace: path confinement, the fsspec file system over SQLite (spill, persistence, the
fsspec contract), Think's seven tools and their edge cases, and the agent surface (default tools,
opt-out, approval setting, a swapped backend, workspace_df)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import fsspec
import pytest
from dirty_equals import IsStr
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from agents import scripted_agent
from think_nb import Think
from think_nb.store import AgentStore, open_database
from think_nb.testing import ScriptedModel as S
from think_nb.workspace import PathError, WorkspaceFileSystem, normalize
from think_nb.workspace.tools import WorkspaceToolError, workspace_tools

ESCAPES = [
    "../etc/passwd", "/../etc/passwd", "a/../../b", "a/b/../../..", "..", "./..", "/a/..", "a/./../x",
    "a\x00b", "\x00", "notes/\x01.md", "a\nb", "C:\\Windows\\system.ini", "C:/Windows/system.ini",
    "\\\\server\\share\\x", "a\\..\\b", "~/.ssh/id_rsa", "~root/x", "file:///etc/passwd",
    "http://example.com/x", "s3://bucket/key", "", "   ", "/" + "a" * 4100, None, 5, b"/a",
]


@pytest.mark.parametrize("bad", ESCAPES, ids=range(len(ESCAPES)))
def test_every_escape_form_is_refused_with_a_clear_error(bad: object) -> None:
    with pytest.raises(PathError) as info:
        normalize(bad)
    assert "\n" not in str(info.value) and "pass" in str(info.value)


def test_plain_paths_are_normalised_under_the_root() -> None:
    assert [normalize(p) for p in ["notes.md", "/notes.md", "./a//b/", "/", "a/./b", "/%2e%2e/x"]] == [
        "/notes.md", "/notes.md", "/a/b", "/", "/a/b", "/%2e%2e/x"]


def _tree(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*"))


async def test_escapes_through_the_tools_write_nothing_outside_a_local_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)  # a symlink inside the root that leads out of it
    tools = workspace_tools(DirFileSystem(str(root), fsspec.filesystem("file")))
    before = _tree(tmp_path)
    for bad in [*[e for e in ESCAPES if isinstance(e, str)], "/link/pwned.txt", "link/x/y.txt"]:
        for name, args in [("write", {"path": bad, "content": "pwned"}), ("edit", {"path": bad, "old_string": "",
                           "new_string": "pwned"}), ("delete", {"path": bad, "recursive": True})]:
            with pytest.raises(WorkspaceToolError):
                await tools[name].invoke(args)
    assert _tree(tmp_path) == before
    assert await tools["write"].invoke({"path": "/inside/ok.txt", "content": "fine"}) == {
        "path": "/inside/ok.txt", "bytesWritten": 4, "lines": 1}
    assert (root / "inside" / "ok.txt").read_text() == "fine"


@pytest.fixture
def fs(tmp_path: Path) -> WorkspaceFileSystem:
    store = AgentStore(open_database(tmp_path / "ws.sqlite"), "T:ws", "T", "ws")
    return WorkspaceFileSystem(store.workspace, tmp_path / "ws.files", spill_threshold=1000)


def test_fsspec_round_trips_ls_open_cat_glob_find_rm(fs: WorkspaceFileSystem) -> None:
    with fs.open("/notes/todo.md", "w") as f:
        f.write("- milk\n- eggs\n")
    fs.pipe_file("/notes/deep/a.txt", b"alpha")
    fs.pipe_file("/top.txt", b"top")
    assert fs.ls("/", detail=False) == ["/notes", "/top.txt"]
    assert fs.ls("/notes", detail=False) == ["/notes/deep", "/notes/todo.md"]
    assert fs.cat("/notes/todo.md") == b"- milk\n- eggs\n"
    with fs.open("/notes/todo.md", "rb") as f:
        assert f.read(6) == b"- milk"
    with fs.open("/notes/todo.md", "a") as f:
        f.write("- tea\n")
    assert fs.cat_file("/notes/todo.md", start=-6) == b"- tea\n"
    assert fs.glob("/**/*.txt") == ["/notes/deep/a.txt", "/top.txt"]
    assert fs.find("/notes") == ["/notes/deep/a.txt", "/notes/todo.md"]
    assert fs.info("/notes")["type"] == "directory" and fs.info("/top.txt")["size"] == 3
    assert fs.isdir("/notes/deep") and fs.isfile("/top.txt") and not fs.exists("/nope")
    fs.copy("/top.txt", "/copy.txt")
    assert fs.cat("/copy.txt") == b"top"
    fs.rm("/notes", recursive=True)
    assert fs.find("/") == ["/copy.txt", "/top.txt"]
    with pytest.raises(FileNotFoundError):
        fs.cat("/notes/todo.md")
    with pytest.raises(IsADirectoryError):
        fs.pipe_file("/", b"x")
    with pytest.raises(PathError):
        fs.cat("/../etc/passwd")
    fs.mkdir("/empty")
    with pytest.raises(FileExistsError):
        fs.mkdir("/empty")
    fs.rmdir("/empty")
    assert not fs.exists("/empty")


def test_large_files_spill_beside_the_database_and_are_removed_with_them(fs: WorkspaceFileSystem,
                                                                        tmp_path: Path) -> None:
    big = os.urandom(5000)
    fs.pipe_file("/blob.bin", big)
    fs.pipe_file("/small.txt", b"small")
    spilled = list((tmp_path / "ws.files").iterdir())
    assert len(spilled) == 1 and spilled[0].read_bytes() == big
    assert fs.cat("/blob.bin") == big and fs.info("/blob.bin")["spilled"] is True
    fs.pipe_file("/blob.bin", b"now small")  # replaced inline: the spilled copy goes
    assert list((tmp_path / "ws.files").iterdir()) == [] and fs.cat("/blob.bin") == b"now small"
    fs.pipe_file("/d/big.bin", big)
    fs.rm("/d", recursive=True)
    assert list((tmp_path / "ws.files").iterdir()) == []


def test_the_workspace_survives_a_new_agent_object_and_is_per_agent(tmp_path: Path) -> None:
    db = tmp_path / "nb.sqlite"
    first = Think("a", db=db)
    first.workspace.pipe_file("/keep.md", b"kept")
    first.workspace.pipe_file("/big.bin", b"x" * (1024 * 1024 + 1))
    again = Think("a", db=db)
    assert again.workspace.cat("/keep.md") == b"kept"
    assert again.workspace.info("/big.bin")["spilled"] is True
    assert [p.parent.name for p in (tmp_path / "nb.files").iterdir()] == ["nb.files"]
    assert Think("b", db=db).workspace.find("/") == []
    df = again.workspace_df()
    assert df.columns.tolist() == ["path", "size", "modified"]
    assert df["path"].tolist() == ["/big.bin", "/keep.md"] and df["size"].tolist() == [1024 * 1024 + 1, 4]
    assert str(df["modified"].dtype) == "datetime64[ns, UTC]"


# -- the tools ----------------------------------------------------------------------------------
async def call(tools: dict, name: str, **args: object) -> object:
    return await tools[name].invoke(args)


async def test_read_numbers_lines_pages_and_says_what_it_cut(fs: WorkspaceFileSystem) -> None:
    tools = workspace_tools(fs)
    fs.pipe_file("/f.txt", b"one\ntwo\nthree\n")
    assert await call(tools, "read", path="f.txt") == {"path": "/f.txt", "content": "1\tone\n2\ttwo\n3\tthree",
                                                       "totalLines": 3}
    assert await call(tools, "read", path="/f.txt", offset=2, limit=1) == {
        "path": "/f.txt", "content": "2\ttwo", "totalLines": 3, "fromLine": 2, "toLine": 2}
    fs.pipe_file("/long.txt", "\n".join(f"l{i}" for i in range(2500)).encode() + b"\n" + b"x" * 2500)
    out = await call(tools, "read", path="/long.txt")
    assert out["totalLines"] == 2501 and out["content"].endswith("... (501 more lines truncated)")
    assert (out["fromLine"], out["toLine"]) == (1, 2000)
    last = await call(tools, "read", path="/long.txt", offset=2501)
    assert last["content"] == "2501\t" + "x" * 2000 + "... (truncated)"


async def test_read_edge_cases_missing_directory_binary_image_huge(fs: WorkspaceFileSystem) -> None:
    tools = workspace_tools(fs)
    with pytest.raises(WorkspaceToolError, match=re.escape("File not found: /nope.txt")):
        await call(tools, "read", path="/nope.txt")
    fs.makedirs("/dir")
    with pytest.raises(WorkspaceToolError, match=re.escape("/dir is a directory, not a file")):
        await call(tools, "read", path="/dir")
    fs.pipe_file("/bin.dat", b"\x00\x01\x02binary")
    assert await call(tools, "read", path="/bin.dat") == {
        "kind": "binary", "path": "/bin.dat", "name": "bin.dat", "mediaType": "application/octet-stream",
        "sizeBytes": 9, "unsupported": True}
    fs.pipe_file("/pic.png", b"\x89PNG\r\n\x1a\n....")
    image = await call(tools, "read", path="/pic.png")  # the descriptor, then the image a vision model sees
    assert image == {"type": "content", "value": [  # issue 31: it was the descriptor only
        {"type": "text", "text": '{"kind":"image","path":"/pic.png","name":"pic.png","mediaType":"image/png",'
                                 '"sizeBytes":12}'},
        {"type": "image-data", "data": "iVBORw0KGgouLi4u", "mediaType": "image/png"}]}
    fs.pipe_file("/huge.txt", b"a" * 3_600_000)
    with pytest.raises(WorkspaceToolError, match=re.escape("more than the 3500000 bytes")):
        await call(tools, "read", path="/huge.txt")


async def test_write_edit_and_their_failures(fs: WorkspaceFileSystem) -> None:
    tools = workspace_tools(fs)
    assert await call(tools, "write", path="/a/b/c.md", content="x = 1\ny = 2\nx = 1\n") == {
        "path": "/a/b/c.md", "bytesWritten": 18, "lines": 3}
    with pytest.raises(WorkspaceToolError, match=re.escape("appears 2 times in /a/b/c.md; include more context")):
        await call(tools, "edit", path="/a/b/c.md", old_string="x = 1", new_string="x = 9")
    assert await call(tools, "edit", path="/a/b/c.md", old_string="x = 1", new_string="x = 9", replace_all=True) == {
        "path": "/a/b/c.md", "replaced": True, "lines": 3, "occurrences": 2}
    with pytest.raises(WorkspaceToolError, match=re.escape("old_string not found in /a/b/c.md")):
        await call(tools, "edit", path="/a/b/c.md", old_string="z = 3", new_string="")
    assert await call(tools, "edit", path="/a/b/c.md", old_string="y  =\t2", new_string="y = 3") == {
        "path": "/a/b/c.md", "replaced": True, "lines": 3, "fuzzyMatch": True}
    assert fs.cat("/a/b/c.md") == b"x = 9\ny = 3\nx = 9\n"
    with pytest.raises(WorkspaceToolError, match=re.escape("File not found: /missing.md")):
        await call(tools, "edit", path="/missing.md", old_string="a", new_string="b")
    assert await call(tools, "edit", path="/new.md", old_string="", new_string="hello") == {
        "path": "/new.md", "created": True, "lines": 1}
    with pytest.raises(WorkspaceToolError, match=re.escape("already exists; use the write tool")):
        await call(tools, "edit", path="/new.md", old_string="", new_string="again")
    fs.pipe_file("/bin.dat", b"\x00\x00")
    with pytest.raises(WorkspaceToolError, match=re.escape("binary file")):
        await call(tools, "edit", path="/bin.dat", old_string="a", new_string="b")
    with pytest.raises(WorkspaceToolError, match=re.escape("is a directory")):
        await call(tools, "write", path="/a", content="no")


LINEAR = """
from fsspec.implementations.memory import MemoryFileSystem
from think_nb.workspace import ops
fs = MemoryFileSystem(skip_instance_cache=True)
fs.pipe_file("/evil.txt", ("a" * 40 + "!\\n").encode())
fs.pipe_file("/" + "a" * 60, b"x")
twelve = "*a" * 12
print(ops.grep(fs, "(a+)+$")["totalMatches"], ops.find(fs, twelve + "*b")["count"],
      ops.grep(fs, "A+!", include=twelve + "*.txt")["totalMatches"], ops.grep(fs, "A+!")["matches"])
"""


def test_a_models_patterns_run_in_linear_time() -> None:
    """grep's regex and find's glob are RE2 (issue 28 §8): `(a+)+$` on forty `a`s and a `!`, and a
    twelve-star glob on a 60-letter name, take Python's `re` longer than anyone waits (2^40 steps;
    n^12), holding the GIL so nothing else runs. In a child process, so that an exponential matcher
    fails this test at the bound (60 s, a bound on termination, not a timing) instead of hanging it."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", LINEAR], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "0 0 0 ['/evil.txt:1: " + "a" * 40 + "!']"


async def test_a_pattern_re2_cannot_run_is_refused_with_the_reason(fs: WorkspaceFileSystem) -> None:
    tools = workspace_tools(fs)
    fs.pipe_file("/a.txt", b"(a+ here\n")
    with pytest.raises(WorkspaceToolError, match=r"Invalid regular expression .*invalid escape.*RE2 syntax: no look"):
        await call(tools, "grep", query=r"(a)\1")
    with pytest.raises(WorkspaceToolError, match=r"Invalid regular expression .*RE2 syntax"):
        await call(tools, "grep", query="a(?=b)")
    assert (await call(tools, "grep", query="(a+", fixedString=True))["totalMatches"] == 1  # type: ignore[index]
    assert (await call(tools, "grep", query=r"\(A\+ H"))["totalMatches"] == 1  # type: ignore[index]
    with pytest.raises(WorkspaceToolError, match=r"Invalid regular expression '\(a\+': missing \)"):
        await call(tools, "grep", query="(a+")


async def test_list_find_grep_delete(fs: WorkspaceFileSystem) -> None:
    tools = workspace_tools(fs)
    for i in range(3):
        fs.pipe_file(f"/src/m{i}.py", f"def f{i}():\n    return {i}\n".encode())
    fs.pipe_file("/README.md", b"# Title\nTODO: write\n")
    fs.pipe_file("/big.log", b"TODO\n" * 300_000)  # over 1 MiB: grep skips it
    assert await call(tools, "list") == {"path": "/", "count": 3, "entries": ["README.md (20)", "big.log (1500000)",
                                                                               "src/"]}
    assert await call(tools, "list", path="/src", limit=2, offset=1) == {
        "path": "/src", "count": 3, "entries": ["m1.py (23)", "m2.py (23)"]}
    with pytest.raises(WorkspaceToolError, match=re.escape("Directory not found: /nope")):
        await call(tools, "list", path="/nope")
    assert await call(tools, "find", pattern="*.py") == {"pattern": "*.py", "count": 3,
                                                          "files": ["/src/m0.py", "/src/m1.py", "/src/m2.py"]}
    assert (await call(tools, "find", pattern="/src/m?.py"))["files"] == (  # type: ignore[index]
        await call(tools, "find", pattern="src/*.py"))["files"]  # type: ignore[index]
    with pytest.raises(WorkspaceToolError, match=re.escape("pattern is empty")):
        await call(tools, "find", pattern="")
    assert await call(tools, "grep", query="todo") == {
        "query": "todo", "filesSearched": 4, "filesWithMatches": 1, "totalMatches": 1,
        "matches": ["/README.md:2: TODO: write"], "filesSkipped": 1, "note": IsStr()}
    assert await call(tools, "grep", query="return [12]", include="src/*.py", contextLines=1) == {
        "query": "return [12]", "filesSearched": 3, "filesWithMatches": 2, "totalMatches": 2, "matches": [
            {"file": "/src/m1.py", "line": 2, "context": "  1: def f1():\n> 2:     return 1"},
            {"file": "/src/m2.py", "line": 2, "context": "  1: def f2():\n> 2:     return 2"}]}
    assert (await call(tools, "grep", query="TODO", caseSensitive=True, fixedString=True))["totalMatches"] == 1  # type: ignore[index]
    with pytest.raises(WorkspaceToolError, match=re.escape("query is empty")):
        await call(tools, "grep", query="")
    with pytest.raises(WorkspaceToolError, match=re.escape("Invalid regular expression")):
        await call(tools, "grep", query="(unclosed")
    for i in range(250):
        fs.pipe_file(f"/many/{i}.txt", b"hit\n")
    many = await call(tools, "grep", query="hit")
    assert many["totalMatches"] == 200 and many["truncated"] is True  # type: ignore[index]
    assert await call(tools, "delete", path="/nope") == {"deleted": "/nope"}
    with pytest.raises(WorkspaceToolError, match=re.escape("not empty; pass recursive=true")):
        await call(tools, "delete", path="/src")
    assert await call(tools, "delete", path="/src", recursive=True) == {"deleted": "/src"}
    assert not fs.exists("/src/m0.py")
    with pytest.raises(WorkspaceToolError, match=re.escape("root cannot be deleted")):
        await call(tools, "delete", path="/", recursive=True)


async def test_the_same_tools_work_on_a_swapped_memory_backend() -> None:
    memory = MemoryFileSystem(skip_instance_cache=True)
    memory.store.clear()
    memory.pseudo_dirs[:] = [""]
    tools = workspace_tools(memory)
    await call(tools, "write", path="/notes/a.md", content="alpha\nbeta\n")
    await call(tools, "edit", path="/notes/a.md", old_string="beta", new_string="gamma")
    assert memory.cat("/notes/a.md") == b"alpha\ngamma\n"
    assert (await call(tools, "read", path="/notes/a.md"))["content"] == "1\talpha\n2\tgamma"  # type: ignore[index]
    assert (await call(tools, "grep", query="gam"))["matches"] == ["/notes/a.md:2: gamma"]  # type: ignore[index]
    assert (await call(tools, "find", pattern="**/*.md"))["files"] == ["/notes/a.md"]  # type: ignore[index]
    assert await call(tools, "list", path="/notes") == {"path": "/notes", "count": 1, "entries": ["a.md (12)"]}
    assert await call(tools, "delete", path="/notes/a.md") == {"deleted": "/notes/a.md"}
    memory.store.clear()


# -- the agent ----------------------------------------------------------------------------------
async def test_the_model_gets_the_workspace_tools_first_and_uses_them() -> None:
    script = S([[S.tool_call("write", {"path": "/todo.md", "content": "- milk\n"})],
                [S.tool_call("edit", {"path": "/todo.md", "old_string": "milk", "new_string": "oat milk"})],
                [S.tool_call("grep", {"query": "oat"})], [S.text("Done.")]])
    agent = scripted_agent(script, tools=[], include_workspace_tools=True)
    result = await agent.send("note milk")
    assert result.status == "completed"
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == [
        "read", "write", "edit", "list", "find", "grep", "delete"]
    outputs = [p["output"] for p in agent.messages[-1]["parts"] if p["type"].startswith("tool-")]
    assert outputs == [{"path": "/todo.md", "bytesWritten": 7, "lines": 1},
                       {"path": "/todo.md", "replaced": True, "lines": 1},
                       {"query": "oat", "filesSearched": 1, "filesWithMatches": 1, "totalMatches": 1,
                        "matches": ["/todo.md:1: - oat milk"]}]
    assert agent.workspace.cat("/todo.md") == b"- oat milk\n"  # the user opens the same file with fsspec


async def test_opt_out_swap_backend_and_approval_setting() -> None:
    script = S([[S.text("ok")]])
    plain = scripted_agent(script, tools=[], name="plain")
    await plain.send("hi")
    assert "tools" not in script.requests[0] or script.requests[0]["tools"] in (None, [])
    memory = MemoryFileSystem(skip_instance_cache=True)
    memory.store.clear()
    gated_script = S([[S.tool_call("write", {"path": "/a.txt", "content": "new"}),
                       S.tool_call("delete", {"path": "/b.txt"})], [S.text("done")]])
    agent = scripted_agent(gated_script, tools=[], name="gated", include_workspace_tools=True,
                           workspace_approval=True)
    agent.workspace = memory
    memory.pipe_file("/a.txt", b"old")
    memory.pipe_file("/b.txt", b"keep?")
    await agent.send("overwrite and delete")
    assert [p["tool_name"] for p in agent.pending_approvals()] == ["write", "delete"]
    assert memory.cat("/a.txt") == b"old" and memory.exists("/b.txt")  # nothing ran before approve()
    agent.deny(agent.pending_approvals()[1]["tool_call_id"], auto_continue=False)
    await agent.approve(agent.pending_approvals()[0]["tool_call_id"])
    assert memory.cat("/a.txt") == b"new" and memory.exists("/b.txt")
    fresh = scripted_agent(S([[S.tool_call("write", {"path": "/c.txt", "content": "c"})], [S.text("ok")]]),
                           tools=[], name="fresh", include_workspace_tools=True, workspace_approval=True)
    fresh.workspace = memory
    await fresh.send("create")  # writing a new file needs no approval
    assert memory.cat("/c.txt") == b"c" and fresh.pending_approvals() == []
    with pytest.raises(Exception, match=re.escape("must be an fsspec file system")):
        agent.workspace = "/tmp"
    memory.store.clear()


def test_think_files_magic_shows_the_workspace(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    import IPython
    from IPython.testing.globalipapp import get_ipython

    import think_nb.frontends.magic.base as commands

    shell = get_ipython() or IPython.get_ipython()
    shell.run_line_magic("load_ext", "think_nb")
    shown: list = []
    monkeypatch.setattr(commands, "display", shown.append)
    capsys.readouterr()  # "already loaded" when another test loaded it first
    agent = Think("magic-files")
    agent.workspace.pipe_file("/a/b.txt", b"hello")
    shell.user_ns["files_agent"] = agent
    shell.run_line_magic("think", "files files_agent")
    assert shown[0]["path"].tolist() == ["/a/b.txt"] and shown[0]["size"].tolist() == [5]
    shell.run_line_magic("think", "files --help")
    assert capsys.readouterr().out.startswith("%think files [AGENT]")


LAZY = '''
import asyncio, sys
from think_nb import Think
from think_nb.testing import ScriptedModel as S
script = S([[S.text("hi")], [S.tool_call("write", {"path": "/a.txt", "content": "x"})], [S.text("written")]])
class A(Think):
    def get_model(self):
        return script.model
async def main():
    agent = A("lazy", db=sys.argv[1])
    await agent.send("one")
    offered = sorted(t["function"]["name"] for t in script.requests[0]["tools"])
    print(offered, "fsspec" in sys.modules, "httpx" in sys.modules, "think_nb.workspace.fs" in sys.modules)
    await agent.send("two")
    print(agent.workspace.cat_file("/a.txt").decode(), "fsspec" in sys.modules, "httpx" in sys.modules)
asyncio.run(main())
'''


def test_the_workspace_tools_are_offered_without_importing_their_machinery(tmp_path: Path) -> None:
    """issue 29 §3: a turn that is offered the workspace tools but calls none imports neither fsspec
    nor httpx (their schemas are declared without them); the first call makes the workspace."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", LAZY, str(tmp_path / "lazy.sqlite")], capture_output=True,
                          text=True, timeout=120, check=True)
    first, second = done.stdout.splitlines()
    assert first == "['delete', 'edit', 'find', 'grep', 'list', 'read', 'write'] False False False"
    assert second == "x True False"


def test_the_workspace_packages_submodules_and_names_are_attributes_in_a_fresh_process() -> None:
    """`import think_nb.workspace as w; w.ops` works as it did before its names became lazy."""
    import subprocess
    import sys

    code = ("import think_nb.workspace as w\n"
            "print([getattr(w, m).__name__ for m in ('execute', 'fetch', 'fs', 'ops', 'paths', 'tools')],"
            " all(n in dir(w) for n in w.__all__), w.normalize.__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["['think_nb.workspace.execute',", "'think_nb.workspace.fetch',",
                                   "'think_nb.workspace.fs',", "'think_nb.workspace.ops',",
                                   "'think_nb.workspace.paths',", "'think_nb.workspace.tools']", "True",
                                   "think_nb.workspace.paths"]


def test_declared_workspace_schemas_are_what_the_signatures_make() -> None:
    """The workspace tools' schemas are written out (`think_nb.workspace.declarations`) so offering them
    builds no pydantic model; they stay what `from_function` makes from the signatures and docstrings,
    and a call's input is still validated by the model built from the signature."""
    import asyncio

    from think_nb.tools.tool import ToolInputError, from_function

    for approval in (False, True):
        for name, tool in workspace_tools(MemoryFileSystem(), approval=approval).items():
            made = from_function(tool.function, needs_approval=tool.needs_approval)
            assert (tool.name, tool.description, tool.parameters) == (made.name, made.description, made.parameters)
            assert tool.needs_approval is made.needs_approval and tool._model is None, name
    tools = workspace_tools(MemoryFileSystem())
    with pytest.raises(ToolInputError, match="limit"):
        tools["list"].validate({"path": "/", "limit": "many"})
    asyncio.run(tools["write"].invoke({"path": "/a.md", "content": "alpha"}))  # the model built off the loop
    assert tools["write"]._model is not None and "alpha" in str(asyncio.run(tools["read"].invoke({"path": "/a.md"})))
