"""`AgentStore`: every table of one agent, behind one object (the only way code reaches SQLite).

    store = AgentStore(open_database(path), "Calc:calc", "Calc", "calc")
    store.messages        MessageStore of the active session (tree, leaf, FTS)
    store.state           AgentState: small JSON values (config, client tools, leaf pointers)
    store.turn_log        TurnLog: one row per turn
    store.traces          TraceStore: hook traces and recordings
    store.records         TurnRecords: what each turn's hook sites saw (time travel: think_nb.turns.fork)
    store.streams         StreamStore: the resumable stream (chunks of turns in flight)
    store.submissions     SubmissionRows: the submission ledger (`submit_messages`)
    store.sessions        SessionStore: session rows
    store.blocks          BlockRows: context blocks without a provider, cached prompts
    store.approvals       Approvals: the ledger of approve()/deny() decisions
    store.actions         ActionRows: the actions' idempotency ledger and parked approvals
    store.schedules       ScheduleRows: scheduled tasks (declared and runtime)
    store.mcp_servers     McpServerRows: MCP servers to reconnect
    store.extensions      ExtensionRows: extensions loaded at run time, to load again
    store.workspace       WorkspaceRows: the agent's virtual files (think_nb.workspace)
    store.child_runs      ChildRunRows: the agent-tool runs its tools started (think_nb.agent_tools)
    store.search_rows(label), store.compactions(), store.session_messages(id)

`store.transaction()` groups writes of several repositories into one transaction.
`stored_agent_names(db, class_name)` lists the top-level agents of a class a file holds,
`stored_sub_agent_keys(db, class_name, name)` the sub-agents of that class and name.
Switching the active session is `store.open_session(id)`; nothing else reassigns `messages`.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from functools import cached_property
from typing import TYPE_CHECKING

from think_nb.store.db import Database
from think_nb.store.messages import ACTIVE_SESSION, MessageStore, conversation_key

if TYPE_CHECKING:  # each repository's module loads with it (an agent that never schedules imports no schedules)
    from think_nb.store.actions import ActionRows
    from think_nb.store.approvals import Approvals
    from think_nb.store.blocks import BlockRows, SearchRows
    from think_nb.store.child_runs import ChildRunRows
    from think_nb.store.compactions import CompactionRows
    from think_nb.store.extensions import ExtensionRows
    from think_nb.store.mcp_servers import McpServerRows
    from think_nb.store.records import TurnRecords
    from think_nb.store.schedules import ScheduleRows
    from think_nb.store.sessions import SessionStore
    from think_nb.store.state import AgentState
    from think_nb.store.streams import StreamStore
    from think_nb.store.submissions import SubmissionRows
    from think_nb.store.traces import TraceStore
    from think_nb.store.turn_log import TurnLog
    from think_nb.store.workspace import WorkspaceRows


class AgentStore:
    """The repositories of one agent (see the module docstring).

    Args:
        db: the open `Database`.
        agent_key: "<class>:<name>" (sub-agents: "<parent key>/<class>:<name>").
        class_name, name: recorded in the `think_agents` table (unless `registered`: it is there).
        session_id: the active session when the caller knows it (`think_nb.store.presence`), else None.

    Nothing is read or written here; each repository is made when first used.
    """

    def __init__(self, db: Database, agent_key: str, class_name: str, name: str, *, registered: bool = False,
                 session_id: str | None = None) -> None:
        self.db = db
        self.agent_key = agent_key
        self._session_id = session_id  # the active session when known (None: read from the state)
        if not registered:  # batched with others, before this file's next write (see `Database.register_agent`)
            db.register_agent(agent_key, class_name, name, time.time())

    # Each repository is made on first use: an agent that never schedules reads no schedule rows.
    @cached_property
    def state(self) -> AgentState:
        from think_nb.store.state import AgentState

        return AgentState(self.db, self.agent_key)

    @cached_property
    def turn_log(self) -> TurnLog:
        from think_nb.store.turn_log import TurnLog

        return TurnLog(self.db, self.agent_key)

    @cached_property
    def traces(self) -> TraceStore:
        from think_nb.store.traces import TraceStore

        return TraceStore(self.db, self.agent_key)

    @cached_property
    def records(self) -> TurnRecords:
        from think_nb.store.records import TurnRecords

        return TurnRecords(self.db, self.agent_key)

    @cached_property
    def streams(self) -> StreamStore:
        from think_nb.store.streams import StreamStore

        return StreamStore(self.db, self.agent_key)

    @cached_property
    def submissions(self) -> SubmissionRows:
        from think_nb.store.submissions import SubmissionRows

        return SubmissionRows(self.db, self.agent_key)

    @cached_property
    def sessions(self) -> SessionStore:
        from think_nb.store.sessions import SessionStore

        return SessionStore(self.db, self.agent_key)

    @cached_property
    def blocks(self) -> BlockRows:
        from think_nb.store.blocks import BlockRows

        return BlockRows(self.db, self.agent_key)

    @cached_property
    def messages(self) -> MessageStore:
        """The active session's messages (`open_session` replaces it)."""
        return MessageStore(self.db, self.agent_key, self._session_id)

    @cached_property
    def approvals(self) -> Approvals:
        from think_nb.store.approvals import Approvals

        return Approvals(self.db, self.agent_key)

    @cached_property
    def actions(self) -> ActionRows:
        from think_nb.store.actions import ActionRows

        return ActionRows(self.db, self.agent_key)

    @cached_property
    def schedules(self) -> ScheduleRows:
        from think_nb.store.schedules import ScheduleRows

        return ScheduleRows(self.db, self.agent_key)

    @cached_property
    def mcp_servers(self) -> McpServerRows:
        from think_nb.store.mcp_servers import McpServerRows

        return McpServerRows(self.db, self.agent_key)

    @cached_property
    def extensions(self) -> ExtensionRows:
        from think_nb.store.extensions import ExtensionRows

        return ExtensionRows(self.db, self.agent_key)

    @cached_property
    def workspace(self) -> WorkspaceRows:
        from think_nb.store.workspace import WorkspaceRows

        return WorkspaceRows(self.db, self.agent_key)

    @cached_property
    def child_runs(self) -> ChildRunRows:
        from think_nb.store.child_runs import ChildRunRows

        return ChildRunRows(self.db, self.agent_key)

    def transaction(self) -> AbstractContextManager:
        """Group calls to several repositories into one transaction (all or nothing):
        `with store.transaction(): store.messages.append_to_leaf(m); store.turn_log.start(...)`."""
        return self.db.write()

    @property
    def session_id(self) -> str:
        """The active session's id ("" = the default session)."""
        return self.messages.session_id

    def session_messages(self, session_id: str) -> MessageStore:
        """The messages of session `session_id` (not necessarily the active one)."""
        return MessageStore(self.db, self.agent_key, session_id)

    def open_session(self, session_id: str) -> MessageStore:
        """Make `session_id` the active session (persisted) and return its messages."""
        self.state.set(ACTIVE_SESSION, session_id)
        self.messages = MessageStore(self.db, self.agent_key, session_id)
        return self.messages

    def search_rows(self, label: str) -> SearchRows:
        """The entries of searchable block `label`."""
        from think_nb.store.blocks import SearchRows

        return SearchRows(self.db, self.agent_key, label)

    def compactions(self, session_id: str | None = None) -> CompactionRows:
        """The compaction overlays of a session (default: the active one)."""
        sid = self.session_id if session_id is None else session_id
        from think_nb.store.compactions import CompactionRows

        return CompactionRows(self.db, conversation_key(self.agent_key, sid))

    def conversation_key(self, session_id: str) -> str:
        return conversation_key(self.agent_key, session_id)


def stored_agent_names(db: Database, class_name: str) -> list[str]:
    """The names of the top-level agents of `class_name` stored in `db` (key `<class>:<name>`; a
    sub-agent's key holds its parent's), sorted."""
    db.flush_agents()
    return [name for (name,) in db.read("SELECT name FROM think_agents WHERE class_name = ? AND key = class_name || "
                                        "':' || name ORDER BY name", (class_name,))]


def stored_sub_agent_keys(db: Database, class_name: str, name: str) -> list[str]:
    """The keys of the sub-agents of `class_name` named `name` stored in `db` (`<parent key>/<class>:<name>`)."""
    db.flush_agents()
    return [key for (key,) in db.read("SELECT key FROM think_agents WHERE class_name = ? AND name = ? AND key != "
                                      "class_name || ':' || name ORDER BY key", (class_name, name))]
