"""What importing think_nb costs, checked by what it imports (issue 29 §3): `import think_nb` imports
nothing heavy (its public names load on first access, PEP 562), and neither `from think_nb import
Think, tool` nor a whole first turn of a text-only agent (the workspace tools offered, as by
default) imports pydantic, docstring-parser or importlib.metadata (pydantic's plugin scan reads every
installed distribution's entry points). A first text turn also leaves out what only other work needs
(`LAZY`: filelock, MCP, the panel's frames, recovery, actions, the tool hooks' and before_step's
types, session blocks/search, unused repositories, a thread pool); the turn still runs the engine and
the SQLite store (WAL) and offers the workspace tools. Each case runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import think_nb

HEAVY = ("pydantic", "docstring_parser", "importlib.metadata", "litellm", "fsspec", "httpx", "anywidget", "ipywidgets")
LAZY = (
    "filelock",  # owner locks: fcntl.flock (think_nb.store.owners)
    "concurrent.futures.thread",  # the workspace tools are built on the loop
    "think_nb.mcp", "think_nb.mcp.servers", "think_nb.mcp.config",  # no MCP server added
    "think_nb.panel.protocol",  # no panel: the recorder only coalesces
    "think_nb.turns.recovery", "think_nb.agent_tools",  # no dead kernel's work in the file
    "think_nb.actions.spec", "think_nb.actions.context",  # no get_actions()
    "think_nb.submissions", "think_nb.messages.shapes",  # no submit_messages(); a plain message
    "think_nb.models.errors",  # no failed model call
    "think_nb.turns.tool_hooks", "think_nb.turns.steps",  # no tool call, no before_step
    "think_nb.session.blocks", "think_nb.session.providers", "think_nb.session.search", "think_nb.store.fts",
    "think_nb.store.schedules", "think_nb.store.approvals", "think_nb.store.submissions", "think_nb.store.workspace",
    "think_nb.store.mcp_servers", "think_nb.store.extensions", "think_nb.store.child_runs", "think_nb.store.blocks",
)
"""Modules a first text turn (scripted in-process model, workspace tools offered) does not import
(issue 29 §3: each cost instructions a fresh process's first token waited for)."""


def imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    probe = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_think_nb_imports_only_its_version() -> None:
    modules = imported_after("import think_nb")
    assert {m for m in modules if m.startswith("think_nb")} == {"think_nb", "think_nb._version"}
    assert not modules & {*HEAVY, "asyncio", "sqlite3", "typing"}


def test_think_and_tool_import_nothing_heavy() -> None:
    modules = imported_after("from think_nb import Think, tool")
    assert "think_nb.agent" in modules and "think_nb.tools.tool" in modules
    assert not modules & set(HEAVY)


FIRST_TURN = '''
        import asyncio, tempfile, os
        from think_nb import Think
        from think_nb.testing import ScriptedModel as S
        script = S([[S.text("hello there")]])
        class Bot(Think):
            def get_model(self):
                return script.model
        agent = Bot("bot", db=os.path.join(tempfile.mkdtemp(), "bot.sqlite"))
        result = asyncio.run(agent.send("hi"))
        assert result.status == "completed" and agent.messages[-1]["parts"][-1]["text"] == "hello there"
        offered = [t["function"]["name"] for t in script.requests[0]["tools"]]
        assert offered == ["read", "write", "edit", "list", "find", "grep", "delete"], offered
        import sqlite3
        with sqlite3.connect(agent.db_path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert conn.execute("SELECT count(*) FROM think_messages").fetchone() == (2,)
'''
"""A first text turn in a fresh interpreter: an agent made, a turn run through the engine and the
SQLite store (write-ahead log), the workspace tools offered as by default."""


def test_a_first_text_turn_imports_no_pydantic() -> None:
    assert not imported_after(FIRST_TURN) & set(HEAVY)


def test_a_first_text_turn_imports_only_what_it_uses() -> None:
    modules = imported_after(FIRST_TURN)
    assert {"think_nb.turns.engine", "think_nb.store.db", "think_nb.workspace.tools"} <= modules  # the work was done
    assert sorted(modules & set(LAZY)) == []


@pytest.mark.parametrize("name", sorted(set(think_nb.__all__) - {"__version__", "load_ipython_extension"}))
def test_every_public_name_loads_on_access(name: str) -> None:
    value = getattr(think_nb, name)
    assert getattr(value, "__name__", name) == name or name == "LOCAL_MODEL"
    assert name in dir(think_nb)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Thinker'"):
        think_nb.Thinker  # noqa: B018


@pytest.mark.parametrize("package", ["think_nb.actions", "think_nb.session", "think_nb.kernel", "think_nb.workspace",
                                     "think_nb.turns.hooks"])
def test_a_package_s_lazy_names_load_and_unknown_ones_are_named(package: str) -> None:
    """Each package that loads its names on access (`think_nb.lazy`) gives every name it exports, and
    an unknown name is Python's own error naming the module and the name."""
    module = __import__(package, fromlist=["__all__"])
    for name in module.__all__:
        assert getattr(module, name) is getattr(module, name)
    with pytest.raises(AttributeError, match=rf"^module '{package}' has no attribute 'Thinker'$"):
        module.Thinker  # noqa: B018
