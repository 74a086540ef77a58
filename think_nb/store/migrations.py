"""The schema as named, append-only migrations (llm's `migrations.py` pattern).

Never edit or reorder a migration that has shipped: add a new one (a test pins the schema that
m001-m013 make), then regenerate the snapshot a new file starts from (`python -m think_nb.store.snapshot`).
Each is applied once, in order, inside a transaction, and recorded in
`_think_nb_migrations(name, applied_at)`.

Names: every name is `think_<name>` (`PREFIX`). A file made before m014 has the plain names of
m001-m013 (`messages`, ...) and m014 renames them; on a new file m001-m013 make the prefixed names
at once (renaming costs ~70 ms even on an empty file: SQLite reloads its schema after each ALTER
TABLE). Later migrations write the prefixed names.
"""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Callable

PREFIX = "think_"
"""Every table, index, trigger and FTS table of think_nb is named `think_<name>`, so a table of the
user's in the same file (`messages`, `notes`, ...) never meets one of think_nb's. The one exception
is the record `_think_nb_migrations`: it always had a prefix, and it is how a file is known to be
think_nb's."""

MIGRATIONS: list[Callable[[sqlite3.Connection, str], None]] = []
"""The steps in order. Each is called as `step(db, p)` inside `migrate`'s transaction. `p` is the
prefix of the names m001-m013 make: `PREFIX` on a new file (m014 then has nothing to rename), ""
on a file made before m014 (which m014 then renames). Steps after m014 ignore `p` and write the
prefixed names."""
migration = MIGRATIONS.append


class NameTaken(Exception):
    """A name a migration needs is held by an object that is not think_nb's (the user's); the message
    says which and what to do. Nothing was changed (the migrations roll back)."""


@migration
def m001_initial(db: sqlite3.Connection, p: str) -> None:
    # Agents are keyed by "<class>:<name>" so two classes may share a name in one notebook.
    db.execute(f"CREATE TABLE {p}agents (key TEXT PRIMARY KEY, class_name TEXT NOT NULL, name TEXT NOT NULL, "
               "created_at REAL NOT NULL)")
    # UIMessages as a tree: regenerate adds a sibling under the same parent, nothing is lost.
    # `seq` gives a stable insertion order; `content` is the whole UIMessage as JSON.
    db.execute(f"CREATE TABLE {p}messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "id TEXT NOT NULL, parent_id TEXT, role TEXT NOT NULL, content TEXT NOT NULL, "
               "created_at REAL NOT NULL, updated_at REAL NOT NULL, UNIQUE (agent_key, id))")
    db.execute(f"CREATE INDEX {p}messages_parent ON {p}messages (agent_key, parent_id)")
    # Small per-agent JSON values: the current leaf of the tree, Think's config blob, ...
    db.execute(f"CREATE TABLE {p}agent_state (agent_key TEXT NOT NULL, key TEXT NOT NULL, value TEXT, "
               "PRIMARY KEY (agent_key, key))")


def migrate(db: sqlite3.Connection, *, snapshot: bool = True) -> list[str]:
    """Apply every migration not yet recorded, all in one transaction; returns the names applied now.
    A new file (no migration recorded) gets the schema of the migrations `think_nb.store.schema`'s
    snapshot stands for in one step (unless `snapshot=False`), then the later ones one by one.

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
        p = "" if done else PREFIX  # a file made before m014 keeps its plain names until m014 renames them
        if not done and snapshot:
            from think_nb.store import schema

            names = schema.covered([step.__name__ for step in MIGRATIONS])
            if names:
                schema.apply(db)
                db.executemany("INSERT INTO _think_nb_migrations VALUES (?, ?)", [(n, time.time()) for n in names])
                applied, done = list(names), set(names)
        for step in MIGRATIONS:
            if step.__name__ not in done:
                step(db, p)
                db.execute("INSERT INTO _think_nb_migrations VALUES (?, ?)", (step.__name__, time.time()))
                applied.append(step.__name__)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return applied


@migration
def m002_turns(db: sqlite3.Connection, p: str) -> None:
    # The turn log (Think's chat:turn:start/finish events as rows). A turn still 'running' after
    # a kernel restart was interrupted.
    db.execute(f"CREATE TABLE {p}turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "request_id TEXT NOT NULL, trigger TEXT NOT NULL, continuation INTEGER NOT NULL DEFAULT 0, "
               "status TEXT NOT NULL, error TEXT, started_at REAL NOT NULL, finished_at REAL, duration_ms REAL, "
               "UNIQUE (agent_key, request_id))")


# -- session memory (think_nb.session) -------------------------------------------------------------
_MESSAGE_TEXT_SQL = ("coalesce((SELECT group_concat(json_extract(p.value, '$.text'), char(10)) "
                     "FROM json_each({row}.content, '$.parts') AS p "
                     "WHERE json_extract(p.value, '$.type') = 'text'), '')")


@migration
def m003_session_memory(db: sqlite3.Connection, p: str) -> None:
    # Several sessions (conversations) per agent. The default session has id "" and its messages
    # keep `messages.agent_key = "<class>:<name>"`; session S uses "<class>:<name>#S" (the
    # conversation key), so `messages` needs no new column and old files keep working.
    db.execute(f"CREATE TABLE {p}sessions (agent_key TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, "
               "parent_session_id TEXT, forked_from_message_id TEXT, created_at REAL NOT NULL, "
               "updated_at REAL NOT NULL, PRIMARY KEY (agent_key, id))")
    # Writable context blocks without a provider (Think's cf_agents_context_blocks), per agent:
    # memory written by the model persists across sessions. `_system_prompt:<session>` rows hold
    # the cached prompt of `with_cached_prompt()`.
    db.execute(f"CREATE TABLE {p}context_blocks (agent_key TEXT NOT NULL, label TEXT NOT NULL, "
               "content TEXT NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (agent_key, label))")
    # Non-destructive compaction overlays (Think's assistant_compactions): `summary` replaces the
    # branch range from_id..to_id when the history is read; the messages themselves stay.
    db.execute(f"CREATE TABLE {p}compactions (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_key TEXT NOT NULL, "
               "summary TEXT NOT NULL, from_id TEXT NOT NULL, to_id TEXT NOT NULL, tokens_before INTEGER, "
               "created_at REAL NOT NULL)")
    db.execute(f"CREATE INDEX {p}compactions_conversation ON {p}compactions (conversation_key)")
    # Keyed entries of searchable context blocks (Think's cf_agents_search_entries + FTS5).
    db.execute(f"CREATE TABLE {p}search_entries (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "label TEXT NOT NULL, key TEXT NOT NULL, content TEXT NOT NULL, created_at REAL NOT NULL, "
               "updated_at REAL NOT NULL, UNIQUE (agent_key, label, key))")
    _search_entries_fts(db, p)
    # FTS5 over the text parts of every message (Think's assistant_fts), rowid = messages.seq,
    # kept current by triggers so every write path (turns, tools, sessions) is indexed.
    db.execute(f"CREATE VIRTUAL TABLE {p}messages_fts USING fts5(content, tokenize='porter unicode61')")
    _messages_fts_triggers(db, p)
    text = _MESSAGE_TEXT_SQL.format(row=f"{p}messages")
    db.execute(f"INSERT INTO {p}messages_fts (rowid, content) SELECT seq, {text} FROM {p}messages")


def _search_entries_fts(db: sqlite3.Connection, p: str) -> None:
    """The FTS5 index of `<p>search_entries` (external content: it reads the entries' text from
    that table) and the triggers that keep it current; `p`: the names' prefix ("" or `PREFIX`)."""
    db.execute(f"CREATE VIRTUAL TABLE {p}search_entries_fts USING fts5(content, content='{p}search_entries', "
               "content_rowid='seq', tokenize='porter unicode61')")
    db.execute(f"CREATE TRIGGER {p}search_entries_ai AFTER INSERT ON {p}search_entries BEGIN "
               f"INSERT INTO {p}search_entries_fts (rowid, content) VALUES (new.seq, new.content); END")
    db.execute(f"CREATE TRIGGER {p}search_entries_ad AFTER DELETE ON {p}search_entries BEGIN "
               f"INSERT INTO {p}search_entries_fts ({p}search_entries_fts, rowid, content) "
               "VALUES ('delete', old.seq, old.content); END")
    db.execute(f"CREATE TRIGGER {p}search_entries_au AFTER UPDATE OF content ON {p}search_entries BEGIN "
               f"INSERT INTO {p}search_entries_fts ({p}search_entries_fts, rowid, content) "
               "VALUES ('delete', old.seq, old.content); "
               f"INSERT INTO {p}search_entries_fts (rowid, content) VALUES (new.seq, new.content); END")


def _messages_fts_triggers(db: sqlite3.Connection, p: str) -> None:
    """The triggers that keep `<p>messages_fts` (rowid = `<p>messages.seq`) current."""
    new_text = _MESSAGE_TEXT_SQL.format(row="new")
    db.execute(f"CREATE TRIGGER {p}messages_fts_ai AFTER INSERT ON {p}messages BEGIN "
               f"INSERT INTO {p}messages_fts (rowid, content) VALUES (new.seq, {new_text}); END")
    db.execute(f"CREATE TRIGGER {p}messages_fts_ad AFTER DELETE ON {p}messages BEGIN "
               f"DELETE FROM {p}messages_fts WHERE rowid = old.seq; END")
    db.execute(f"CREATE TRIGGER {p}messages_fts_au AFTER UPDATE OF content ON {p}messages BEGIN "
               f"DELETE FROM {p}messages_fts WHERE rowid = old.seq; "
               f"INSERT INTO {p}messages_fts (rowid, content) VALUES (new.seq, {new_text}); END")


@migration
def m004_stream_buffer(db: sqlite3.Connection, p: str) -> None:
    # The resumable stream buffer (Think's cf_ai_chat_stream_chunks / _metadata): the chunks of
    # a turn being streamed, packed in segments (a JSON list of coalesced chunks each), so a
    # view created mid-stream replays the turn so far. `status` is streaming | completed |
    # error | aborted | skipped | interrupted (left streaming by a kernel that died).
    db.execute(f"CREATE TABLE {p}stream_metadata (agent_key TEXT NOT NULL, request_id TEXT NOT NULL, "
               "continuation INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL, owner TEXT NOT NULL, "
               "created_at REAL NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (agent_key, request_id))")
    db.execute(f"CREATE TABLE {p}stream_chunks (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "request_id TEXT NOT NULL, chunks TEXT NOT NULL, created_at REAL NOT NULL)")
    db.execute(f"CREATE INDEX {p}stream_chunks_request ON {p}stream_chunks (agent_key, request_id, seq)")


@migration
def m005_turn_traces(db: sqlite3.Connection, p: str) -> None:
    # One row per traced turn: the hook trace (`rows`, one entry per hook call and chunk group)
    # and the recording (`chunks`, every UIMessageChunk with its time offset) used for replay.
    # Bounded by think_nb.turns.trace (rows per turn, chunks per turn, turns kept per agent).
    db.execute(f"CREATE TABLE {p}turn_traces (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "request_id TEXT NOT NULL, rows TEXT NOT NULL, chunks TEXT, created_at REAL NOT NULL, "
               "UNIQUE (agent_key, request_id))")


@migration
def m006_approvals(db: sqlite3.Connection, p: str) -> None:
    # The approvals ledger: the one record of `approve()` / `deny()` decisions. A tool call whose
    # stored part says "approved" runs only when this table holds an approval for that call id and
    # that exact input (think_nb.messages.validate keeps outside data from writing tool parts;
    # this keeps any other path, a hand-edited database included, from opening a gate).
    db.execute(f"CREATE TABLE {p}approvals (agent_key TEXT NOT NULL, tool_call_id TEXT NOT NULL, approval_id TEXT, "
               "approved INTEGER NOT NULL, reason TEXT, input TEXT NOT NULL, decided_at REAL NOT NULL, "
               "PRIMARY KEY (agent_key, tool_call_id))")


@migration
def m007_turn_owner(db: sqlite3.Connection, p: str) -> None:
    # The process that runs a turn (think_nb.store.owners.PROCESS): a row still 'running' that
    # another process owned was cut off when that process died; recovery marks it 'interrupted'.
    # Rows written before this migration have no owner (their process is gone as well).
    db.execute(f"ALTER TABLE {p}turns ADD COLUMN owner TEXT")


@migration
def m008_submissions(db: sqlite3.Connection, p: str) -> None:
    # Think's cf_think_submissions: messages durably accepted before inference (`submit_messages`),
    # drained FIFO (`seq`). `messages` is the JSON list as accepted (ids assigned), `digest` its
    # canonical JSON (idempotency: the same id with other messages is refused). `status`:
    # pending | running | completed | aborted | skipped | error. `owner`: the process running it.
    db.execute(f"CREATE TABLE {p}submissions (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "id TEXT NOT NULL, idempotency_key TEXT, request_id TEXT, status TEXT NOT NULL, "
               "messages TEXT NOT NULL, digest TEXT NOT NULL, error TEXT, metadata TEXT, owner TEXT, "
               "created_at REAL NOT NULL, started_at REAL, completed_at REAL, UNIQUE (agent_key, id))")
    db.execute(f"CREATE UNIQUE INDEX {p}submissions_key ON {p}submissions (agent_key, idempotency_key) "
               "WHERE idempotency_key IS NOT NULL")
    db.execute(f"CREATE INDEX {p}submissions_status ON {p}submissions (agent_key, status, seq)")


@migration
def m009_schedules(db: sqlite3.Connection, p: str) -> None:
    # Scheduled tasks (Think's cf_agents_schedules + cf_think_scheduled_tasks, one table here):
    # `source` declared (get_scheduled_tasks, reconciled at creation) | runtime (agent.schedule).
    # `kind` once | delay | interval | cron, `spec` the normalised schedule, `task` JSON
    # {"prompt": text} | {"handler": "method:<name>" | "<module>:<qualname>" | null (not restorable)},
    # `next_run_at` epoch s (NULL: disarmed), `anchor` the phase of an interval.
    db.execute(f"CREATE TABLE {p}schedules (agent_key TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL, "
               "kind TEXT NOT NULL, spec TEXT NOT NULL, timezone TEXT, seconds REAL, task TEXT NOT NULL, "
               "task_repr TEXT NOT NULL, metadata TEXT, digest TEXT NOT NULL, next_run_at REAL, anchor REAL NOT NULL, "
               "last_run_at REAL, last_status TEXT, last_error TEXT, runs INTEGER NOT NULL DEFAULT 0, "
               "created_at REAL NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (agent_key, id))")


@migration
def m010_workspace(db: sqlite3.Connection, p: str) -> None:
    # Think's cf_workspace_<namespace>: the agent's virtual file system (think_nb.workspace). One row
    # per file or directory, keyed by the normalised absolute POSIX path; `parent` indexes listings.
    # A file's bytes are `content`, or, above the spill threshold, a file named `spill` in the
    # directory beside the database (`.think/<stem>.files/`, Think's R2 overflow). Times are Unix seconds.
    db.execute(f"CREATE TABLE {p}workspace_files (agent_key TEXT NOT NULL, path TEXT NOT NULL, parent TEXT NOT NULL, "
               "kind TEXT NOT NULL, size INTEGER NOT NULL DEFAULT 0, content BLOB, spill TEXT, "
               "created_at REAL NOT NULL, modified_at REAL NOT NULL, PRIMARY KEY (agent_key, path))")
    db.execute(f"CREATE INDEX {p}workspace_files_parent ON {p}workspace_files (agent_key, parent)")


@migration
def m011_mcp_servers(db: sqlite3.Connection, p: str) -> None:
    # MCP servers an agent connects to (Think's cf_agents_mcp_servers), reconnected when the agent
    # is created again. `transport`: stdio | http; `target`: the command or the URL; `args`, `env`,
    # `headers`: JSON. Credentials are never stored: env/header values that are secrets must be
    # `${VAR}` references, resolved from the environment at connect time.
    db.execute(f"CREATE TABLE {p}mcp_servers (agent_key TEXT NOT NULL, name TEXT NOT NULL, transport TEXT NOT NULL, "
               "target TEXT NOT NULL, args TEXT NOT NULL, env TEXT NOT NULL, headers TEXT NOT NULL, "
               "approval TEXT NOT NULL, timeout REAL NOT NULL, created_at REAL NOT NULL, "
               "PRIMARY KEY (agent_key, name))")


@migration
def m012_extensions(db: sqlite3.Connection, p: str) -> None:
    # Extensions loaded at run time (by the model's `load_extension` or `agent.load_extension`), restored
    # when the agent is created again (Think's DO storage `ext:<name>`). Static ones (`get_extensions()`)
    # come from the class each time and are not stored.
    db.execute(f"CREATE TABLE {p}extensions (agent_key TEXT NOT NULL, name TEXT NOT NULL, version TEXT NOT NULL, "
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
def _pairs_of_terms_sql(p: str) -> str:
    return ("coalesce((SELECT group_concat(pair, ' ') FROM (SELECT term || '_' || lead(term, 1, '') OVER (ORDER BY "
            f"offset) AS pair FROM {p}messages_terms_vocab ORDER BY offset)), '')")


def _pairs_sql(row: str, command: str, p: str) -> str:
    """Trigger statements that index (`command` "insert") or un-index ("delete") the pairs of `row` (new/old)."""
    head, value = ((f"{p}messages_pairs, rowid, content", "'delete', ") if command == "delete"
                   else ("rowid, content", ""))
    return (f"INSERT INTO {p}messages_terms ({p}messages_terms) VALUES ('delete-all'); "
            f"INSERT INTO {p}messages_terms (rowid, content) VALUES ({row}.seq, {_MESSAGE_TEXT_SQL.format(row=row)}); "
            f"INSERT INTO {p}messages_pairs ({head}) VALUES ({value}{row}.seq, {_pairs_of_terms_sql(p)}); ")


@migration
def m013_message_pairs(db: sqlite3.Connection, p: str) -> None:
    db.execute(f"CREATE VIRTUAL TABLE {p}messages_pairs USING fts5(content, content='', tokenize=\"ascii tokenchars "
               "'_'\")")
    db.execute(f"CREATE VIRTUAL TABLE {p}messages_terms USING fts5(content, content='', tokenize='porter unicode61')")
    db.execute(f"CREATE VIRTUAL TABLE {p}messages_terms_vocab USING fts5vocab({p}messages_terms, instance)")
    _pairs_triggers(db, p)
    _backfill_pairs(db, p)


def _pairs_triggers(db: sqlite3.Connection, p: str) -> None:
    """The triggers that keep `<p>messages_pairs` current (through `<p>messages_terms` and its vocab)."""
    db.execute(f"CREATE TRIGGER {p}messages_pairs_ai AFTER INSERT ON {p}messages BEGIN "
               f"{_pairs_sql('new', 'insert', p)}END")
    db.execute(f"CREATE TRIGGER {p}messages_pairs_ad AFTER DELETE ON {p}messages BEGIN "
               f"{_pairs_sql('old', 'delete', p)}END")
    # most updates change tool parts or metadata, not the text: those leave the pairs as they are
    text_changed = f"{_MESSAGE_TEXT_SQL.format(row='old')} IS NOT {_MESSAGE_TEXT_SQL.format(row='new')}"
    db.execute(f"CREATE TRIGGER {p}messages_pairs_au AFTER UPDATE OF content ON {p}messages WHEN {text_changed} "
               f"BEGIN {_pairs_sql('old', 'delete', p)}{_pairs_sql('new', 'insert', p)}END")


def _backfill_pairs(db: sqlite3.Connection, p: str, chunk: int = 5000) -> None:
    """Pairs rows for the messages already indexed, as the triggers make them, built per chunk of
    rows (100,000 messages in ~7 s)."""
    (last,) = db.execute(f"SELECT coalesce(max(rowid), 0) FROM {p}messages_fts").fetchone()
    for start in range(0, last + 1, chunk):
        bounds = (start, start + chunk)
        db.execute(f"INSERT INTO {p}messages_terms ({p}messages_terms) VALUES ('delete-all')")
        db.execute(f"INSERT INTO {p}messages_terms (rowid, content) SELECT rowid, content FROM {p}messages_fts "
                   "WHERE rowid >= ? AND rowid < ?", bounds)
        terms: dict[int, list[tuple[int, str]]] = {}
        for doc, offset, term in db.execute(f"SELECT doc, offset, term FROM {p}messages_terms_vocab"):
            terms.setdefault(doc, []).append((offset, term))
        rows = []
        for (seq,) in db.execute(f"SELECT rowid FROM {p}messages_fts WHERE rowid >= ? AND rowid < ?", bounds):
            ordered = [term for _, term in sorted(terms.get(seq, ()))]
            rows.append((seq, " ".join(f"{a}_{b}" for a, b in itertools.pairwise([*ordered, ""]))))
        db.executemany(f"INSERT INTO {p}messages_pairs (rowid, content) VALUES (?, ?)", rows)
    db.execute(f"INSERT INTO {p}messages_terms ({p}messages_terms) VALUES ('delete-all')")


# -- every name prefixed (m014) --------------------------------------------------------------------
_M014_TABLES = ("agents", "messages", "agent_state", "turns", "sessions", "context_blocks", "compactions",
                "search_entries", "stream_metadata", "stream_chunks", "turn_traces", "approvals", "submissions",
                "schedules", "workspace_files", "mcp_servers", "extensions",
                "messages_fts", "messages_pairs", "messages_terms")  # FTS5: renamed with their shadow tables
_M014_FTS = ("messages_fts", "messages_pairs", "messages_terms", "search_entries_fts")
_M014_INDEXES = ("messages_parent", "compactions_conversation", "stream_chunks_request", "submissions_key",
                 "submissions_status", "workspace_files_parent")
_M014_TRIGGERS = ("search_entries_ai", "search_entries_ad", "search_entries_au", "messages_fts_ai",
                  "messages_fts_ad", "messages_fts_au", "messages_pairs_ai", "messages_pairs_ad", "messages_pairs_au")


@migration
def m014_prefixed_names(db: sqlite3.Connection, p: str) -> None:
    """Rename every object m001-m013 made to `think_<name>` (`PREFIX`), keeping every row (a file
    made before m014; on a new file, `p` is the prefix already and there is nothing to do).

    Tables (FTS5 ones too, with their shadow tables) are renamed with ALTER TABLE, which keeps
    their rows, rowids and AUTOINCREMENT counters. What SQLite cannot rename is made again under
    the new name: the indexes (from their own SQL), the triggers (a rename rewrites the table
    names in a trigger's body but not FTS5's command column, named after its table: `INSERT INTO
    t (t, rowid, ...) VALUES ('delete', ...)`), the vocabulary table over `messages_terms`
    (fts5vocab names its table in its arguments) and `search_entries_fts` (external content: it
    names `search_entries` in its arguments; rebuilt from the entries). A user's own view or
    trigger on a think_nb table follows the rename (SQLite rewrites it).

    Raises:
        NameTaken: a new name is held by an object that is not think_nb's (checked before anything changes).
    """
    if p:
        return
    new = PREFIX
    new_names = [new + name for name in (*_M014_TABLES, *_M014_INDEXES, *_M014_TRIGGERS, "search_entries_fts",
                                       "messages_terms_vocab")]
    new_names += [f"{new}{table}_{shadow}" for table in _M014_FTS for shadow in ("data", "idx", "content", "docsize",
                                                                                "config")]
    marks = ", ".join("?" for _ in new_names)
    taken = db.execute(f"SELECT type, name FROM sqlite_master WHERE lower(name) IN ({marks}) ORDER BY name",
                       [name.lower() for name in new_names]).fetchall()
    if taken:
        kind, name = taken[0]
        article = "an" if kind == "index" else "a"
        raise NameTaken(f"holds {article} {kind} named {name!r} that is not think_nb's, and think_nb needs that name "
                        f"for its own tables (all named {new}*); rename or drop yours and open the file again")
    for trigger in _M014_TRIGGERS:
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE messages_terms_vocab")
    db.execute("DROP TABLE search_entries_fts")
    try:
        for table in _M014_TABLES:
            db.execute(f"ALTER TABLE {table} RENAME TO {new}{table}")
    except sqlite3.OperationalError as exc:  # a rename checks the whole schema: a broken view of the user's
        raise NameTaken(f"cannot rename think_nb's tables to {new}* ({' '.join(str(exc).split())}); "
                        "drop or mend that object and open the file again") from None
    for index in _M014_INDEXES:
        (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (index,)).fetchone()
        head = f"INDEX {index} ON "
        assert head in sql, sql  # m001-m013 made them so
        db.execute(f"DROP INDEX {index}")
        db.execute(sql.replace(head, f"INDEX {new}{index} ON ", 1))
    _search_entries_fts(db, new)
    db.execute(f"INSERT INTO {new}search_entries_fts ({new}search_entries_fts) VALUES ('rebuild')")
    _messages_fts_triggers(db, new)
    db.execute(f"CREATE VIRTUAL TABLE {new}messages_terms_vocab USING fts5vocab({new}messages_terms, instance)")
    _pairs_triggers(db, new)


@migration
def m015_edited_approvals(db: sqlite3.Connection, p: str) -> None:
    # An approval may come with an edited input (`approve(id, code=...)`, issue 26): `input` stays
    # what the model proposed (the part's input; `granted` compares it), `edited_input` is what the
    # user approved instead, and what the engine runs. NULL: approved as proposed.
    db.execute(f"ALTER TABLE {PREFIX}approvals ADD COLUMN edited_input TEXT")


@migration
def m016_message_depths(db: sqlite3.Connection, p: str) -> None:
    # Each message knows its depth in its session's tree and a skew-binary jump pointer to an
    # ancestor (`think_nb.store.ancestry`), so "is this message on the current branch" is
    # answered in O(log depth) lookups instead of walking the branch (issue 29 §1: ~1 s at
    # 100,000 messages on every search). Rows are filled in depth order, parents first.
    from think_nb.store.ancestry import backfill

    for column in ("depth INTEGER", "jump_id TEXT", "jump_depth INTEGER"):
        db.execute(f"ALTER TABLE {PREFIX}messages ADD COLUMN {column}")
    backfill(db, f"{PREFIX}messages")


@migration
def m017_used_approvals(db: sqlite3.Connection, p: str) -> None:
    # An approval is used once (issue 28 §2): `used_at` is set, in its own committed transaction,
    # when the approved call starts (`Approvals.claim`); a used approval never runs the call again
    # (a part hand-edited back to `approval-responded`, a recovered continuation after SIGKILL).
    # NULL: not used yet. A new decision (`record`) replaces the row, so it starts unused.
    db.execute(f"ALTER TABLE {PREFIX}approvals ADD COLUMN used_at REAL")


@migration
def m018_schedule_retries(db: sqlite3.Connection, p: str) -> None:
    # A scheduled task may retry a failed run (Think's RetryOptions, `think_nb.schedules.retry`):
    # `retry` is its options (JSON, NULL: no retries); `attempt` the attempts the latest occurrence
    # has made; `retry_at` when its next attempt runs (NULL: none pending) and `retry_for` the
    # occurrence (its scheduled_for) being retried, so a pending retry survives a restart.
    for column in ("retry TEXT", "attempt INTEGER NOT NULL DEFAULT 0", "retry_at REAL", "retry_for REAL"):
        db.execute(f"ALTER TABLE {PREFIX}schedules ADD COLUMN {column}")


@migration
def m019_actions(db: sqlite3.Connection, p: str) -> None:
    # Actions (issue 30, `think_nb.actions`; `think_nb.store.actions`): Think's idempotency ledger
    # (`cf_think_action_ledger`: a settled result is replayed, never re-run) and the calls of
    # `durable-pause` actions parked for approval (`cf_think_action_pending_approvals`).
    db.execute(f"CREATE TABLE {PREFIX}action_ledger (agent_key TEXT NOT NULL, key TEXT NOT NULL, "
               "action_name TEXT NOT NULL, request_id TEXT, tool_call_id TEXT, input_hash TEXT NOT NULL, "
               "status TEXT NOT NULL, result TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL, "
               "PRIMARY KEY (agent_key, key))")
    db.execute(f"CREATE INDEX {PREFIX}action_ledger_sweep ON {PREFIX}action_ledger (agent_key, status, updated_at)")
    db.execute(f"CREATE TABLE {PREFIX}action_pending_approvals (agent_key TEXT NOT NULL, execution_id TEXT NOT NULL, "
               "action_name TEXT NOT NULL, tool_call_id TEXT NOT NULL, request_id TEXT, input TEXT NOT NULL, "
               "descriptor TEXT, created_at REAL NOT NULL, PRIMARY KEY (agent_key, execution_id))")
    db.execute(f"CREATE INDEX {PREFIX}action_pending_created ON {PREFIX}action_pending_approvals "
               "(agent_key, created_at)")


@migration
def m020_child_runs(db: sqlite3.Connection, p: str) -> None:
    # Agent-tool runs (Think's `cf_agent_tool_child_runs`, with the parent's `cf_agent_tool_runs`
    # registry: parent and child share this file, so one table): one row per sub-agent turn a
    # parent's tool started (`delegate`), keyed by the parent and the run id (`agent-tool:<tool
    # call id>`). `request_id` is the child's turn, bound before it starts; `input_message_id` the
    # child's user message; `status` running | completed | error | aborted | interrupted; `output`
    # JSON; `owner` the process running it (a dead owner's `running` row is re-attached when the
    # parent is created again: think_nb.agent_tools).
    db.execute(f"CREATE TABLE {PREFIX}child_runs (agent_key TEXT NOT NULL, run_id TEXT NOT NULL, "
               "child_key TEXT NOT NULL, child_class TEXT NOT NULL, child_name TEXT NOT NULL, class_ref TEXT, "
               "parent_request_id TEXT, parent_tool_call_id TEXT, request_id TEXT, input_message_id TEXT, "
               "status TEXT NOT NULL, summary TEXT, output TEXT, error TEXT, owner TEXT, started_at REAL NOT NULL, "
               "finished_at REAL, PRIMARY KEY (agent_key, run_id))")
    db.execute(f"CREATE INDEX {PREFIX}child_runs_child ON {PREFIX}child_runs (agent_key, child_key)")


@migration
def m021_turn_records(db: sqlite3.Connection, p: str) -> None:
    # Turn records (issue 32, time travel): per stored turn, what its hook sites saw, compactly
    # (`think_nb.turns.turn_record`): the message the turn answered (`parent_id`, its history is the
    # path to it), the reply (`message_id`), the class's code version, and `record` (JSON: the system
    # prompt, tools offered, config, each step's model output as delta lengths into the reply's
    # parts, each tool call). Not trimmed with the traces' window: a row goes when its conversation
    # is cleared (`think_nb.store.records`).
    db.execute(f"CREATE TABLE {PREFIX}turn_records (agent_key TEXT NOT NULL, request_id TEXT NOT NULL, "
               "conversation_key TEXT NOT NULL, parent_id TEXT, message_id TEXT, class_version TEXT NOT NULL, "
               "record TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (agent_key, request_id))")
    db.execute(f"CREATE INDEX {PREFIX}turn_records_conversation ON {PREFIX}turn_records (conversation_key)")
    # Long texts records share (a system prompt is the same turn after turn), stored once by hash.
    db.execute(f"CREATE TABLE {PREFIX}record_texts (sha TEXT PRIMARY KEY, text TEXT NOT NULL)")


@migration
def m022_batch_runs(db: sqlite3.Connection, p: str) -> None:
    # Batch runs (`agent.map`, issue 33, `think_nb.batch`): one row per run of an agent over a
    # DataFrame (`spec`: JSON of what the run was asked: total rows, prompt, bounds; `status`:
    # running | completed | stopped | cancelled) and one per DataFrame row (`row_key`: the index
    # label as JSON, `position` its place, `conversation_id` the stored conversation the row ran in,
    # `result` its results-table row as JSON once settled). Which rows are pending, running or
    # settled is the submissions ledger's (`think_submissions`, keyed `<agent key>/map:<run id>`).
    db.execute(f"CREATE TABLE {PREFIX}batch_runs (agent_key TEXT NOT NULL, run_id TEXT NOT NULL, "
               "spec TEXT NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, "
               "PRIMARY KEY (agent_key, run_id))")
    db.execute(f"CREATE TABLE {PREFIX}batch_rows (agent_key TEXT NOT NULL, run_id TEXT NOT NULL, "
               "row_key TEXT NOT NULL, position INTEGER NOT NULL, conversation_id TEXT, result TEXT, "
               "PRIMARY KEY (agent_key, run_id, row_key))")


@migration
def m024_status_indexes(db: sqlite3.Connection, p: str) -> None:
    # What an agent's start-up asks (`think_nb.store.presence`) and recovery reads: its turns, streams
    # and agent-tool runs in one status ('running' / 'streaming'). By primary key alone SQLite read every
    # row of the agent (the turn log grows by one per turn); by (agent_key, status) it reads the few
    # in that status. bench/bench_agents.py, "think_nb reopened" (50 turns each): 200.8 k -> 160.6 k
    # instructions per agent; presence() of an agent with 1000 turns: 2.8 ms -> 0.06 ms.
    db.execute(f"CREATE INDEX {PREFIX}turns_status ON {PREFIX}turns (agent_key, status)")
    db.execute(f"CREATE INDEX {PREFIX}stream_metadata_status ON {PREFIX}stream_metadata (agent_key, status)")
    db.execute(f"CREATE INDEX {PREFIX}child_runs_status ON {PREFIX}child_runs (agent_key, status)")



@migration
def m025_message_sizes(db: sqlite3.Connection, p: str) -> None:
    # Media eviction (`think_nb.session.media_eviction`, Think's `getHistoryRowStats` for #1710): which
    # stored messages are large enough to hold media worth evicting. The index holds each row's size
    # (characters of its JSON, computed once when the row is written) with its depth and id, so a
    # background pass asks "which rows of this conversation are at least N characters" from the index
    # alone, never reading a message: a conversation with nothing to evict costs one index range scan.
    # bench/bench_media_eviction.py: the check after a turn, 6.7 us at 2,000 and at 10,000 messages;
    # the same question without the index (every row read) 360 us and 8.3 ms.
    db.execute(f"CREATE INDEX {PREFIX}messages_size ON {PREFIX}messages (agent_key, length(content), depth, id)")


LARGE_ROW_FLOOR = 1024
"""Characters of a message's JSON from which `m026`'s size index holds its row."""


@migration
def m026_partial_message_sizes(db: sqlite3.Connection, p: str) -> None:
    # m025's index covered (agent_key, ..., depth, id) for every row, so SQLite's planner took it, as a
    # covering scan of all a conversation's rows, for any query on a conversation's ids and depths:
    # `MessageStore.on_branch`'s depths of the search hits scanned 100,000 rows (session.search at
    # 100,000 messages: a rare word 0.25 -> 11 ms of CPU). The index now holds only rows of at least
    # LARGE_ROW_FLOOR characters (a query uses a partial index only when its WHERE names the index's
    # condition: `MessageStore.large_rows` does, no other query does); few rows, same covering reads.
    db.execute(f"DROP INDEX IF EXISTS {PREFIX}messages_size")
    db.execute(f"CREATE INDEX {PREFIX}messages_size ON {PREFIX}messages (agent_key, length(content), depth, id) "
               f"WHERE length(content) >= {LARGE_ROW_FLOOR}")
