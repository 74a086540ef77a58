"""The schema as named, append-only migrations (llm's `migrations.py` pattern).

Never edit or reorder a migration that has shipped: add a new one. Each is applied once, in
order, inside a transaction, and recorded in `_think_nb_migrations(name, applied_at)`.
"""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Callable

MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []
migration = MIGRATIONS.append


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    # Agents are keyed by "<class>:<name>" so two classes may share a name in one notebook.
    db.execute("CREATE TABLE agents (key TEXT PRIMARY KEY, class_name TEXT NOT NULL, name TEXT NOT NULL, "
               "created_at REAL NOT NULL)")
    # UIMessages as a tree: regenerate adds a sibling under the same parent, nothing is lost.
    # `seq` gives a stable insertion order; `content` is the whole UIMessage as JSON.
    db.execute("CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "id TEXT NOT NULL, parent_id TEXT, role TEXT NOT NULL, content TEXT NOT NULL, "
               "created_at REAL NOT NULL, updated_at REAL NOT NULL, UNIQUE (agent_key, id))")
    db.execute("CREATE INDEX messages_parent ON messages (agent_key, parent_id)")
    # Small per-agent JSON values: the current leaf of the tree, Think's config blob, ...
    db.execute("CREATE TABLE agent_state (agent_key TEXT NOT NULL, key TEXT NOT NULL, value TEXT, "
               "PRIMARY KEY (agent_key, key))")


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded, all in one transaction; returns the names applied now.

    Several kernels may open one new file at once: each takes the write lock once (`BEGIN
    IMMEDIATE`, waiting as long as the connection's busy timeout: `Database` opens with
    `think_nb.store.db.LOCK_WAIT_S`), reads the record again under it, and applies only what is
    still missing. (One lock per migration had six processes take turns thirteen times;
    under load one of them could wait out SQLite's busy timeout: "database is locked".)
    """
    db.execute("CREATE TABLE IF NOT EXISTS _think_nb_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    done = {row[0] for row in db.execute("SELECT name FROM _think_nb_migrations")}
    if all(step.__name__ in done for step in MIGRATIONS):
        return []
    db.execute("BEGIN IMMEDIATE")  # the connection is in autocommit mode; DDL is transactional in SQLite
    applied = []
    try:
        # another process may have applied them while this one waited for the write lock: read again
        done = {row[0] for row in db.execute("SELECT name FROM _think_nb_migrations")}
        for step in MIGRATIONS:
            if step.__name__ not in done:
                step(db)
                db.execute("INSERT INTO _think_nb_migrations VALUES (?, ?)", (step.__name__, time.time()))
                applied.append(step.__name__)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return applied


@migration
def m002_turns(db: sqlite3.Connection) -> None:
    # The turn log (Think's chat:turn:start/finish events as rows). A turn still 'running' after
    # a kernel restart was interrupted.
    db.execute("CREATE TABLE turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "request_id TEXT NOT NULL, trigger TEXT NOT NULL, continuation INTEGER NOT NULL DEFAULT 0, "
               "status TEXT NOT NULL, error TEXT, started_at REAL NOT NULL, finished_at REAL, duration_ms REAL, "
               "UNIQUE (agent_key, request_id))")


# -- session memory (think_nb.session) -------------------------------------------------------------
_MESSAGE_TEXT_SQL = ("coalesce((SELECT group_concat(json_extract(p.value, '$.text'), char(10)) "
                     "FROM json_each({row}.content, '$.parts') AS p "
                     "WHERE json_extract(p.value, '$.type') = 'text'), '')")


@migration
def m003_session_memory(db: sqlite3.Connection) -> None:
    # Several sessions (conversations) per agent. The default session has id "" and its messages
    # keep `messages.agent_key = "<class>:<name>"`; session S uses "<class>:<name>#S" (the
    # conversation key), so `messages` needs no new column and old files keep working.
    db.execute("CREATE TABLE sessions (agent_key TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, "
               "parent_session_id TEXT, forked_from_message_id TEXT, created_at REAL NOT NULL, "
               "updated_at REAL NOT NULL, PRIMARY KEY (agent_key, id))")
    # Writable context blocks without a provider (Think's cf_agents_context_blocks), per agent:
    # memory written by the model persists across sessions. `_system_prompt:<session>` rows hold
    # the cached prompt of `with_cached_prompt()`.
    db.execute("CREATE TABLE context_blocks (agent_key TEXT NOT NULL, label TEXT NOT NULL, content TEXT NOT NULL, "
               "updated_at REAL NOT NULL, PRIMARY KEY (agent_key, label))")
    # Non-destructive compaction overlays (Think's assistant_compactions): `summary` replaces the
    # branch range from_id..to_id when the history is read; the messages themselves stay.
    db.execute("CREATE TABLE compactions (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_key TEXT NOT NULL, "
               "summary TEXT NOT NULL, from_id TEXT NOT NULL, to_id TEXT NOT NULL, tokens_before INTEGER, "
               "created_at REAL NOT NULL)")
    db.execute("CREATE INDEX compactions_conversation ON compactions (conversation_key)")
    # Keyed entries of searchable context blocks (Think's cf_agents_search_entries + FTS5).
    db.execute("CREATE TABLE search_entries (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "label TEXT NOT NULL, key TEXT NOT NULL, content TEXT NOT NULL, created_at REAL NOT NULL, "
               "updated_at REAL NOT NULL, UNIQUE (agent_key, label, key))")
    db.execute("CREATE VIRTUAL TABLE search_entries_fts USING fts5(content, content='search_entries', "
               "content_rowid='seq', tokenize='porter unicode61')")
    db.execute("CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN "
               "INSERT INTO search_entries_fts (rowid, content) VALUES (new.seq, new.content); END")
    db.execute("CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN "
               "INSERT INTO search_entries_fts (search_entries_fts, rowid, content) "
               "VALUES ('delete', old.seq, old.content); END")
    db.execute("CREATE TRIGGER search_entries_au AFTER UPDATE OF content ON search_entries BEGIN "
               "INSERT INTO search_entries_fts (search_entries_fts, rowid, content) "
               "VALUES ('delete', old.seq, old.content); "
               "INSERT INTO search_entries_fts (rowid, content) VALUES (new.seq, new.content); END")
    # FTS5 over the text parts of every message (Think's assistant_fts), rowid = messages.seq,
    # kept current by triggers so every write path (turns, tools, sessions) is indexed.
    db.execute("CREATE VIRTUAL TABLE messages_fts USING fts5(content, tokenize='porter unicode61')")
    new_text = _MESSAGE_TEXT_SQL.format(row="new")
    db.execute(f"CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN "
               f"INSERT INTO messages_fts (rowid, content) VALUES (new.seq, {new_text}); END")
    db.execute("CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN "
               "DELETE FROM messages_fts WHERE rowid = old.seq; END")
    db.execute(f"CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages BEGIN "
               f"DELETE FROM messages_fts WHERE rowid = old.seq; "
               f"INSERT INTO messages_fts (rowid, content) VALUES (new.seq, {new_text}); END")
    db.execute(f"INSERT INTO messages_fts (rowid, content) SELECT seq, {_MESSAGE_TEXT_SQL.format(row='messages')} "
               f"FROM messages")


@migration
def m004_stream_buffer(db: sqlite3.Connection) -> None:
    # The resumable stream buffer (Think's cf_ai_chat_stream_chunks / _metadata): the chunks of
    # a turn being streamed, packed in segments (a JSON list of coalesced chunks each), so a
    # view created mid-stream replays the turn so far. `status` is streaming | completed |
    # error | aborted | skipped | interrupted (left streaming by a kernel that died).
    db.execute("CREATE TABLE stream_metadata (agent_key TEXT NOT NULL, request_id TEXT NOT NULL, "
               "continuation INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL, owner TEXT NOT NULL, "
               "created_at REAL NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (agent_key, request_id))")
    db.execute("CREATE TABLE stream_chunks (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "request_id TEXT NOT NULL, chunks TEXT NOT NULL, created_at REAL NOT NULL)")
    db.execute("CREATE INDEX stream_chunks_request ON stream_chunks (agent_key, request_id, seq)")


@migration
def m005_turn_traces(db: sqlite3.Connection) -> None:
    # One row per traced turn: the hook trace (`rows`, one entry per hook call and chunk group)
    # and the recording (`chunks`, every UIMessageChunk with its time offset) used for replay.
    # Bounded by think_nb.turns.trace (rows per turn, chunks per turn, turns kept per agent).
    db.execute("CREATE TABLE turn_traces (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "request_id TEXT NOT NULL, rows TEXT NOT NULL, chunks TEXT, created_at REAL NOT NULL, "
               "UNIQUE (agent_key, request_id))")


@migration
def m006_approvals(db: sqlite3.Connection) -> None:
    # The approvals ledger: the one record of `approve()` / `deny()` decisions. A tool call whose
    # stored part says "approved" runs only when this table holds an approval for that call id and
    # that exact input (think_nb.messages.validate keeps outside data from writing tool parts;
    # this keeps any other path, a hand-edited database included, from opening a gate).
    db.execute("CREATE TABLE approvals (agent_key TEXT NOT NULL, tool_call_id TEXT NOT NULL, approval_id TEXT, "
               "approved INTEGER NOT NULL, reason TEXT, input TEXT NOT NULL, decided_at REAL NOT NULL, "
               "PRIMARY KEY (agent_key, tool_call_id))")


@migration
def m007_turn_owner(db: sqlite3.Connection) -> None:
    # The process that runs a turn (think_nb.store.owners.PROCESS): a row still 'running' that
    # another process owned was cut off when that process died; recovery marks it 'interrupted'.
    # Rows written before this migration have no owner (their process is gone as well).
    db.execute("ALTER TABLE turns ADD COLUMN owner TEXT")


@migration
def m008_submissions(db: sqlite3.Connection) -> None:
    # Think's cf_think_submissions: messages durably accepted before inference (`submit_messages`),
    # drained FIFO (`seq`). `messages` is the JSON list as accepted (ids assigned), `digest` its
    # canonical JSON (idempotency: the same id with other messages is refused). `status`:
    # pending | running | completed | aborted | skipped | error. `owner`: the process running it.
    db.execute("CREATE TABLE submissions (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "id TEXT NOT NULL, idempotency_key TEXT, request_id TEXT, status TEXT NOT NULL, "
               "messages TEXT NOT NULL, digest TEXT NOT NULL, error TEXT, metadata TEXT, owner TEXT, "
               "created_at REAL NOT NULL, started_at REAL, completed_at REAL, UNIQUE (agent_key, id))")
    db.execute("CREATE UNIQUE INDEX submissions_key ON submissions (agent_key, idempotency_key) "
               "WHERE idempotency_key IS NOT NULL")
    db.execute("CREATE INDEX submissions_status ON submissions (agent_key, status, seq)")


@migration
def m009_schedules(db: sqlite3.Connection) -> None:
    # Scheduled tasks (Think's cf_agents_schedules + cf_think_scheduled_tasks, one table here):
    # `source` declared (get_scheduled_tasks, reconciled at creation) | runtime (agent.schedule).
    # `kind` once | delay | interval | cron, `spec` the normalised schedule, `task` JSON
    # {"prompt": text} | {"handler": "method:<name>" | "<module>:<qualname>" | null (not restorable)},
    # `next_run_at` epoch s (NULL: disarmed), `anchor` the phase of an interval.
    db.execute("CREATE TABLE schedules (agent_key TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL, "
               "kind TEXT NOT NULL, spec TEXT NOT NULL, timezone TEXT, seconds REAL, task TEXT NOT NULL, "
               "task_repr TEXT NOT NULL, metadata TEXT, digest TEXT NOT NULL, next_run_at REAL, anchor REAL NOT NULL, "
               "last_run_at REAL, last_status TEXT, last_error TEXT, runs INTEGER NOT NULL DEFAULT 0, "
               "created_at REAL NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (agent_key, id))")


@migration
def m010_workspace(db: sqlite3.Connection) -> None:
    # Think's cf_workspace_<namespace>: the agent's virtual file system (think_nb.workspace). One row
    # per file or directory, keyed by the normalised absolute POSIX path; `parent` indexes listings.
    # A file's bytes are `content`, or, above the spill threshold, a file named `spill` in the
    # directory beside the database (`.think/<stem>.files/`, Think's R2 overflow). Times are Unix seconds.
    db.execute("CREATE TABLE workspace_files (agent_key TEXT NOT NULL, path TEXT NOT NULL, parent TEXT NOT NULL, "
               "kind TEXT NOT NULL, size INTEGER NOT NULL DEFAULT 0, content BLOB, spill TEXT, "
               "created_at REAL NOT NULL, modified_at REAL NOT NULL, PRIMARY KEY (agent_key, path))")
    db.execute("CREATE INDEX workspace_files_parent ON workspace_files (agent_key, parent)")


@migration
def m011_mcp_servers(db: sqlite3.Connection) -> None:
    # MCP servers an agent connects to (Think's cf_agents_mcp_servers), reconnected when the agent
    # is created again. `transport`: stdio | http; `target`: the command or the URL; `args`, `env`,
    # `headers`: JSON. Credentials are never stored: env/header values that are secrets must be
    # `${VAR}` references, resolved from the environment at connect time.
    db.execute("CREATE TABLE mcp_servers (agent_key TEXT NOT NULL, name TEXT NOT NULL, transport TEXT NOT NULL, "
               "target TEXT NOT NULL, args TEXT NOT NULL, env TEXT NOT NULL, headers TEXT NOT NULL, "
               "approval TEXT NOT NULL, timeout REAL NOT NULL, created_at REAL NOT NULL, "
               "PRIMARY KEY (agent_key, name))")


@migration
def m012_extensions(db: sqlite3.Connection) -> None:
    # Extensions loaded at run time (by the model's `load_extension` or `agent.load_extension`), restored
    # when the agent is created again (Think's DO storage `ext:<name>`). Static ones (`get_extensions()`)
    # come from the class each time and are not stored.
    db.execute("CREATE TABLE extensions (agent_key TEXT NOT NULL, name TEXT NOT NULL, version TEXT NOT NULL, "
               "manifest TEXT NOT NULL, source TEXT NOT NULL, created_at REAL NOT NULL, "
               "PRIMARY KEY (agent_key, name))")


# -- phrase search over adjacent-term pairs (think_nb.session.search) -------------------------------
# FTS5 matches a phrase by merging the position lists of its words: for two common words that is
# two lists over ~40% of the messages, ~17 ms at 100,000 messages. `messages_pairs` indexes every
# message's adjacent term pairs as single tokens, so a phrase of n words is a phrase of n-1 pair
# tokens whose lists hold only the messages with those pairs.
#   text "The red foxes"  ->  terms of messages_fts (porter unicode61): the red fox
#                         ->  pairs row: "the_red red_fox fox_"
# The last term's "x_" keeps a row's token count equal to its messages_fts count, so bm25 gives a
# phrase the same rank on either table (same row count, hits, lengths and average length). Terms
# never hold "_" or other ASCII punctuation (unicode61 splits on them), so the `ascii` tokenizer
# with "_" as a token character reads each pair back as one token, unchanged.
# The terms come from FTS5 itself (no second stemmer): the text is indexed in the one-row
# contentless table `messages_terms` and read back in order through its fts5vocab `instance` table.
# `messages_pairs` is contentless too (a stored copy would be 2x the text): deleting a row gives
# FTS5 its pairs again, made the same way from the old message (as messages_fts re-tokenizes its
# stored text to delete).
# Cost: a message's text is tokenized three times on write instead of once (+~0.25 ms for 25 words,
# +~0.2 s for 20,000; a 100,000-message bulk fill 12.5 -> 37 s); the file grows ~17%.
# group_concat joins the pairs in the order its subquery gives them (offset order): what SQLite
# does, though its documentation leaves the order open; the window alternative (group_concat OVER
# the whole frame, ordered) cost twice as much. Tests check phrases of 3+ words on both paths.
_PAIRS_OF_TERMS_SQL = (
    "coalesce((SELECT group_concat(pair, ' ') FROM (SELECT term || '_' || lead(term, 1, '') OVER (ORDER BY offset) "
    "AS pair FROM messages_terms_vocab ORDER BY offset)), '')")


def _pairs_sql(row: str, command: str) -> str:
    """Trigger statements that index (`command` "insert") or un-index ("delete") the pairs of `row` (new/old)."""
    head, value = (("messages_pairs, rowid, content", "'delete', ") if command == "delete" else ("rowid, content", ""))
    return ("INSERT INTO messages_terms (messages_terms) VALUES ('delete-all'); "
            f"INSERT INTO messages_terms (rowid, content) VALUES ({row}.seq, {_MESSAGE_TEXT_SQL.format(row=row)}); "
            f"INSERT INTO messages_pairs ({head}) VALUES ({value}{row}.seq, {_PAIRS_OF_TERMS_SQL}); ")


@migration
def m013_message_pairs(db: sqlite3.Connection) -> None:
    db.execute("CREATE VIRTUAL TABLE messages_pairs USING fts5(content, content='', tokenize=\"ascii tokenchars '_'\")")
    db.execute("CREATE VIRTUAL TABLE messages_terms USING fts5(content, content='', tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE messages_terms_vocab USING fts5vocab(messages_terms, instance)")
    db.execute(f"CREATE TRIGGER messages_pairs_ai AFTER INSERT ON messages BEGIN {_pairs_sql('new', 'insert')}END")
    db.execute(f"CREATE TRIGGER messages_pairs_ad AFTER DELETE ON messages BEGIN {_pairs_sql('old', 'delete')}END")
    # most updates change tool parts or metadata, not the text: those leave the pairs as they are
    text_changed = f"{_MESSAGE_TEXT_SQL.format(row='old')} IS NOT {_MESSAGE_TEXT_SQL.format(row='new')}"
    db.execute(f"CREATE TRIGGER messages_pairs_au AFTER UPDATE OF content ON messages WHEN {text_changed} BEGIN "
               f"{_pairs_sql('old', 'delete')}{_pairs_sql('new', 'insert')}END")
    _backfill_pairs(db)


def _backfill_pairs(db: sqlite3.Connection, chunk: int = 5000) -> None:
    """Pairs rows for the messages already indexed, as the triggers make them, built per chunk of
    rows (100,000 messages in ~7 s)."""
    (last,) = db.execute("SELECT coalesce(max(rowid), 0) FROM messages_fts").fetchone()
    for start in range(0, last + 1, chunk):
        bounds = (start, start + chunk)
        db.execute("INSERT INTO messages_terms (messages_terms) VALUES ('delete-all')")
        db.execute("INSERT INTO messages_terms (rowid, content) SELECT rowid, content FROM messages_fts "
                   "WHERE rowid >= ? AND rowid < ?", bounds)
        terms: dict[int, list[tuple[int, str]]] = {}
        for doc, offset, term in db.execute("SELECT doc, offset, term FROM messages_terms_vocab"):
            terms.setdefault(doc, []).append((offset, term))
        rows = []
        for (seq,) in db.execute("SELECT rowid FROM messages_fts WHERE rowid >= ? AND rowid < ?", bounds):
            ordered = [term for _, term in sorted(terms.get(seq, ()))]
            rows.append((seq, " ".join(f"{a}_{b}" for a, b in itertools.pairwise([*ordered, ""]))))
        db.executemany("INSERT INTO messages_pairs (rowid, content) VALUES (?, ?)", rows)
    db.execute("INSERT INTO messages_terms (messages_terms) VALUES ('delete-all')")
