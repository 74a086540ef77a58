"""`%think context|messages|search|sessions` in an in-process IPython shell."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest
from IPython.testing.globalipapp import get_ipython

import think_nb.session.magic_commands as commands
from think_nb import Think
from think_nb.testing import ScriptedModel as S


@pytest.fixture
def ip(monkeypatch):
    import IPython

    shell = get_ipython() or IPython.get_ipython()  # globalipapp starts the shell once per process
    shell.run_line_magic("load_ext", "think_nb")
    shown: list = []
    monkeypatch.setattr(commands, "display", shown.append)
    shell.shown = shown
    return shell


def test_session_subcommands_show_dataframes(ip, capsys) -> None:
    script = S([[S.text("The red fox sleeps.")]])

    class Memo(Think):
        def get_model(self):
            return script.model

        def configure_session(self, session):
            return session.with_context("memory", description="Facts.", max_tokens=100)

    ip.user_ns["Memo"] = Memo
    agent = ip.magics_manager.registry["ThinkMagics"].resolve_agent("Memo", "default", None)
    asyncio.run(agent.send("Where is the fox?"))
    ip.run_line_magic("think", "context Memo")
    ip.run_line_magic("think", "messages Memo")
    ip.run_line_magic("think", "search red fox --agent Memo")
    ip.run_line_magic("think", "sessions")  # the agent last used with %think
    context, messages, search, sessions = ip.shown
    assert all(isinstance(df, pd.DataFrame) for df in ip.shown)
    assert context["label"].tolist() == ["memory"]
    assert messages["text"].tolist() == ["Where is the fox?", "The red fox sleeps."]
    assert search["text"].tolist() == ["The red fox sleeps."]
    assert sessions["name"].tolist() == ["default"]
    ip.run_line_magic("think", "search --help")
    ip.run_line_magic("think", "--help")
    out = capsys.readouterr().out
    assert out.startswith("%think search QUERY [--agent AGENT] [--limit N] [--all]")
    for usage in ("%think context [AGENT]", "%think messages [AGENT]", "%think sessions [AGENT]"):
        assert usage in out
