"""SQL schema: global tables, per-session tables, and the append-only migration list.

Migrating is safe when several processes open a fresh (or old) home at once: each
migration runs in its own ``BEGIN IMMEDIATE`` transaction that re-reads
``PRAGMA user_version`` under the write lock and skips a step another process applied
meanwhile (two processes racing on a new home once failed with "table sessions already
exists").
"""

from __future__ import annotations

from collections.abc import Callable

import apsw

from eventlog.errors import StoreError
from eventlog.ids import validate_session_id
from eventlog.sqlite.transaction import Transaction

#: A migration step: a script, or a function of the connection (inside its transaction).
Migration = str | Callable[[apsw.Connection], None]


def _chain_the_events(conn: apsw.Connection) -> None:
    """Version 2: a hash chain over each session's events (:mod:`eventlog.sqlite.chain`).

    ``ALTER TABLE … ADD COLUMN`` only rewrites the schema, not the rows: the cost does not
    grow with the history. The rows already there stay unhashed (legacy): each session's
    chain starts after its last row (``chain_from``).
    """
    conn.execute("ALTER TABLE sessions ADD COLUMN chain_from INTEGER")
    conn.execute("ALTER TABLE sessions ADD COLUMN chain_head TEXT")
    for (session_id,) in list(conn.execute("SELECT session_id FROM sessions")):
        sid = validate_session_id(session_id)
        conn.execute(f"ALTER TABLE events_{sid} ADD COLUMN hash TEXT")
        conn.execute(
            "UPDATE sessions SET chain_from ="
            f" (SELECT COALESCE(MAX(seq), 0) + 1 FROM events_{sid}) WHERE session_id = ?",
            (sid,),
        )


def _nodes_by_reference(conn: apsw.Connection) -> None:
    """Version 4: a session created from now on keeps its node content once, in the
    ``node_appended`` event; its ``nodes_<sid>`` row refers to that event (``event_seq``).

    No row is rewritten: a session's tables keep the layout they were made with
    (:func:`nodes_by_reference` tells which) and both are read. The version exists so an
    older clew, which would read a node row without its content, refuses the file.
    """
    del conn


# Append-only: migration i brings ``PRAGMA user_version`` from i to i+1. Never edit a
# shipped entry; add a new one.
MIGRATIONS: list[Migration] = [
    """
    CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        root_agent_id TEXT NOT NULL,
        active_node_id TEXT,
        parent_session_id TEXT,
        status TEXT NOT NULL,
        metadata_json TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE agents (
        agent_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        parent_agent_id TEXT,
        agent_type TEXT NOT NULL,
        created_by_run_id TEXT,
        fork_from_node_id TEXT,
        status TEXT NOT NULL,
        result_json TEXT,
        metadata_json TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX agents_by_session ON agents(session_id);
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        start_node_id TEXT,
        end_node_id TEXT,
        end_reason TEXT,
        turn_count INTEGER,
        usage_json TEXT,
        error_json TEXT,
        metadata_json TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX runs_by_session ON runs(session_id);
    CREATE TABLE artifacts (
        artifact_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        agent_id TEXT,
        run_id TEXT,
        node_id TEXT,
        tool_call_id TEXT,
        path TEXT NOT NULL,
        filename TEXT,
        mime_type TEXT,
        size_bytes INTEGER,
        summary TEXT,
        metadata_json TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX artifacts_by_session ON artifacts(session_id);
    """,
    _chain_the_events,
    # Version 3: the audit of deleted sessions (counts and time, never content); an id
    # made again and deleted again has one row per deletion.
    """
    CREATE TABLE deleted_sessions (
        session_id TEXT NOT NULL,
        deleted_at TEXT NOT NULL,
        events INTEGER NOT NULL,
        nodes INTEGER NOT NULL,
        agents INTEGER NOT NULL,
        runs INTEGER NOT NULL,
        artifacts INTEGER NOT NULL,
        artifacts_kept INTEGER NOT NULL,
        task_wals INTEGER NOT NULL
    );
    CREATE INDEX deleted_sessions_by_id ON deleted_sessions(session_id);
    """,
    _nodes_by_reference,
]

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)
#: The oldest version a read-only store can read without migrating it (version 1 lacks
#: only the hash chain: its events read as legacy).
OLDEST_READABLE = 1


def session_tables_ddl(session_id: str) -> str:
    """Return the DDL of ``nodes_<sid>`` and ``events_<sid>`` (session id validated first).

    Every index here serves a query (eventlog/sqlite/reads.py, counters.py): ``node_id``
    (a node, the active path), ``parent_id`` (children), ``(run_id, run_seq)`` (a run's
    events, its next run_seq). ``seq`` and ``node_seq`` are the tables' rowids, so the
    range scans in seq order read the table itself and no index is kept for them; no
    query looks an event up by ``event_id``, so it has none. A durable step (a node and
    its event) writes 6 B-tree pages instead of 9: ~29 KB → ~21 KB of WAL per commit.
    Tables of sessions created before this keep their extra indexes (they still work;
    nothing migrates them), so only the column types and order are relied on.

    A node row holds the tree's shape (what :meth:`read_node_links` and the parent and
    id lookups need) and ``event_seq``, the seq of its ``node_appended`` event, whose
    payload holds the node's content, metadata, run and token count: the content is
    stored once (docs/storage.md). Sessions made before schema version 4 keep their
    rows as they were: ``node_id, node_seq, parent_id, agent_id, run_id, role,
    node_type, content_json, metadata_json, token_count, created_at``.
    """
    sid = validate_session_id(session_id)
    return f"""
    CREATE TABLE nodes_{sid} (
        node_id TEXT NOT NULL UNIQUE,
        node_seq INTEGER PRIMARY KEY,
        parent_id TEXT,
        agent_id TEXT NOT NULL,
        role TEXT NOT NULL,
        node_type TEXT NOT NULL,
        event_seq INTEGER NOT NULL
    );
    CREATE INDEX nodes_{sid}_by_parent ON nodes_{sid}(parent_id);
    CREATE TABLE events_{sid} (
        event_id TEXT NOT NULL,
        seq INTEGER PRIMARY KEY,
        run_seq INTEGER,
        agent_id TEXT,
        run_id TEXT,
        level TEXT NOT NULL,
        event_type TEXT NOT NULL,
        node_id TEXT,
        tool_call_id TEXT,
        payload_json TEXT,
        created_at TEXT NOT NULL,
        hash TEXT
    );
    CREATE UNIQUE INDEX events_{sid}_by_run ON events_{sid}(run_id, run_seq);
    """


def nodes_by_reference(conn: apsw.Connection, sid: str) -> bool:
    """Return whether ``nodes_<sid>`` (``sid`` validated) refers to its events for the
    content (made by schema version 4+) rather than holding it (``content_json``)."""
    return any(row[1] == "event_seq" for row in conn.execute(f"PRAGMA table_info(nodes_{sid})"))


def schema_version(conn: apsw.Connection) -> int:
    """Return the file's ``PRAGMA user_version``."""
    return int(conn.pragma("user_version"))


def check_not_newer(version: int) -> None:
    """Raise ``StoreError`` if ``version`` was written by a newer clew than this one."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"database schema version {version} is newer than this clew ({SCHEMA_VERSION})"
        )


def migrate(conn: apsw.Connection) -> None:
    """Bring the file to the latest schema, one transaction per migration.

    Safe against other processes migrating the same file at the same moment: the
    version is read again inside each step's write lock.

    Raises:
        StoreError: the file was written by a newer clew, or a migration failed.
    """
    version = schema_version(conn)
    check_not_newer(version)
    for i in range(version, SCHEMA_VERSION):
        with Transaction(conn, f"migrating the schema to version {i + 1}"):
            current = schema_version(conn)
            check_not_newer(current)
            if current > i:
                continue  # another process applied this step since we looked
            step = MIGRATIONS[i]
            if isinstance(step, str):
                conn.execute(step)
            else:
                step(conn)
            conn.pragma("user_version", i + 1)
