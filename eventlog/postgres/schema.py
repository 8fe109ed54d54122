"""The PostgreSQL schema: shared tables keyed by ``session_id``, and its migrations.

The SQLite store gives each session its own ``events_<sid>`` and ``nodes_<sid>`` tables;
here every session shares one ``events`` and one ``nodes`` table whose primary keys start
with ``session_id`` (``(session_id, seq)``, ``(session_id, node_id)``). With thousands of
sessions a table per session would mean thousands of catalog entries, a DDL statement
(and its catalog lock) in the transaction creating each session, and plans cached per
table; a composite B-tree key keeps every per-session read an index range scan whatever
the number of sessions (docs/postgres.md).

``sessions`` also holds the counters the writer continues from (``last_seq``,
``last_node_seq``) next to ``chain_head``: the append locks the session's row
(``SELECT … FOR UPDATE``) and so numbers events gaplessly however many processes write.

Migrations run under a transaction-scoped advisory lock, so processes opening a new
database at once apply each step once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from eventlog.errors import IntegrityError, StoreError
from eventlog.row_encoding import node_content_of_event, usage_of
from eventlog.seed_enums import FOLD_STORED_RUNS

Conn = psycopg.Connection[Any]
#: A migration step: a script, or a function of the connection (inside the transaction).
Migration = str | Callable[[Conn], None]

#: The advisory lock key that serialises migrations (any fixed 64-bit number).
MIGRATION_LOCK = 0x636C6577_0001

#: Version 4's tables: the seed's columns in the seed's order (``../shared/seeds/004``),
#: then what only PostgreSQL needs: ``session_id`` after the columns of the tables the
#: seed keeps per session (``nodes``, ``events``), ``hash``, ``status_detail``.
_SEED_TABLES: dict[str, tuple[str, str]] = {
    "events": (
        "event_id TEXT NOT NULL, seq BIGINT NOT NULL, run_seq BIGINT, agent_id TEXT,"
        " run_id TEXT, level TEXT NOT NULL, event_type TEXT NOT NULL, node_id TEXT,"
        " tool_call_id TEXT, payload_json TEXT, created_at TEXT NOT NULL, hash TEXT,"
        " session_id TEXT NOT NULL REFERENCES sessions",
        "PRIMARY KEY (session_id, seq), UNIQUE (session_id, event_id),"
        " UNIQUE (session_id, run_id, run_seq)",
    ),
    "nodes": (
        "node_id TEXT NOT NULL, node_seq BIGINT NOT NULL, parent_id TEXT,"
        " agent_id TEXT NOT NULL, run_id TEXT, role TEXT NOT NULL, node_type TEXT NOT NULL,"
        " content_json TEXT NOT NULL, metadata_json TEXT, token_count BIGINT,"
        " created_at TEXT NOT NULL, session_id TEXT NOT NULL REFERENCES sessions",
        "PRIMARY KEY (session_id, node_id), UNIQUE (session_id, node_seq)",
    ),
    "agents": (
        "agent_id TEXT NOT NULL, session_id TEXT NOT NULL, parent_agent_id TEXT,"
        " agent_type TEXT NOT NULL, created_by_run_id TEXT, fork_from_node_id TEXT,"
        " status TEXT NOT NULL, result_json TEXT, metadata_json TEXT,"
        " created_at TEXT NOT NULL, updated_at TEXT NOT NULL",
        "PRIMARY KEY (session_id, agent_id)",
    ),
    "runs": (
        "run_id TEXT NOT NULL, session_id TEXT NOT NULL, agent_id TEXT NOT NULL,"
        " status TEXT NOT NULL, start_node_id TEXT, end_node_id TEXT, end_reason TEXT,"
        " turn_count BIGINT, usage_json TEXT, error_json TEXT, metadata_json TEXT,"
        " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, status_detail TEXT",
        "PRIMARY KEY (session_id, run_id)",
    ),
    "artifacts": (
        "artifact_id TEXT NOT NULL, session_id TEXT NOT NULL, agent_id TEXT, run_id TEXT,"
        " node_id TEXT, tool_call_id TEXT, path TEXT NOT NULL, filename TEXT,"
        " mime_type TEXT, size_bytes BIGINT, summary TEXT, metadata_json TEXT,"
        " created_at TEXT NOT NULL",
        "PRIMARY KEY (session_id, artifact_id)",
    ),
}


def _seed_columns(conn: Conn) -> None:
    """Version 4: the seed's columns, filled, in the seed's order, and the seed's enums.

    - A node row written at version 3 (content only in its ``node_appended`` event)
      gets ``run_id, content_json, metadata_json, token_count`` from that event.
    - ``runs`` gains ``status_detail``; a parked run (``waiting``) is stored ``pending``,
      a refused one ``failed``, an end reason ``cancelled`` NULL (:mod:`eventlog.seed_enums`);
      a run not ended stores its usage so far (the sum of its ``token_usage`` events).
    - ``events``, ``nodes``, ``agents``, ``runs``, ``artifacts`` are rebuilt with their
      columns in the seed's order (:data:`_SEED_TABLES`): PostgreSQL cannot reorder
      columns in place, so each table is copied once (its cost grows with the history).

    All in the migration's one transaction: a failure leaves the database at version 3.
    """
    refer = conn.execute(
        "SELECT n.session_id, n.node_id, e.payload_json FROM nodes n"
        " LEFT JOIN events e ON e.session_id = n.session_id AND e.seq = n.event_seq"
        " WHERE n.event_seq IS NOT NULL"
    ).fetchall()
    filled = []
    for sid, node_id, payload in refer:
        try:
            filled.append((*node_content_of_event(node_id, payload), sid, node_id))
        except IntegrityError as e:
            raise StoreError(f"cannot migrate session {sid} to schema version 4: {e}") from e
    with conn.cursor() as cur:
        cur.executemany(
            "UPDATE nodes SET run_id = %s, content_json = %s, metadata_json = %s,"
            " token_count = %s WHERE session_id = %s AND node_id = %s",
            filled,
        )
    conn.execute("ALTER TABLE runs ADD COLUMN IF NOT EXISTS status_detail TEXT")
    for sql in FOLD_STORED_RUNS:
        conn.execute(sql)
    open_runs = conn.execute(
        "SELECT session_id, run_id FROM runs WHERE status IN ('running', 'pending')"
    ).fetchall()
    for sid, run_id in open_runs:
        payloads = conn.execute(
            "SELECT payload_json FROM events WHERE session_id = %s AND run_id = %s"
            " AND event_type = 'token_usage' ORDER BY seq",
            (sid, run_id),
        ).fetchall()
        conn.execute(
            "UPDATE runs SET usage_json = %s WHERE session_id = %s AND run_id = %s",
            (usage_of(r[0] for r in payloads), sid, run_id),
        )
    for table in _SEED_TABLES:
        _rebuild(conn, table)
    conn.execute("CREATE INDEX nodes_by_parent ON nodes (session_id, parent_id)")


def _rebuild(conn: Conn, table: str) -> None:
    """Copy ``table`` into a new one with :data:`_SEED_TABLES`' columns, in that order;
    its constraints keep the names PostgreSQL gave the old ones (``<table>_pkey``, …)."""
    columns, constraints = _SEED_TABLES[table]
    names = ", ".join(c.split()[0] for c in columns.split(", "))
    new = f"{table}_v4"
    conn.execute(f"CREATE TABLE {new} ({columns}, {constraints})")
    conn.execute(f"INSERT INTO {new} ({names}) SELECT {names} FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE {new} RENAME TO {table}")
    renamed = conn.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass", (table,)
    ).fetchall()
    for (name,) in renamed:
        if name.startswith(f"{new}_"):
            conn.execute(
                f"ALTER TABLE {table} RENAME CONSTRAINT {name} TO {table}_{name[len(new) + 1 :]}"
            )


#: Version 5: an artifact's bytes beyond its first chunk (:mod:`eventlog.postgres.blobs`);
#: a blob written before has none and reads as it is.
_ARTIFACT_CHUNKS = """
    CREATE TABLE IF NOT EXISTS artifact_chunks (
        path TEXT NOT NULL REFERENCES artifact_blobs ON DELETE CASCADE,
        chunk_no INTEGER NOT NULL,
        byte_offset BIGINT NOT NULL,
        data BYTEA NOT NULL,
        PRIMARY KEY (path, chunk_no)
    );
    """

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
        updated_at TEXT NOT NULL,
        chain_from BIGINT,
        chain_head TEXT,
        last_seq BIGINT NOT NULL DEFAULT 0,
        last_node_seq BIGINT NOT NULL DEFAULT 0
    );
    CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions,
        seq BIGINT NOT NULL,
        event_id TEXT NOT NULL,
        run_seq BIGINT,
        agent_id TEXT,
        run_id TEXT,
        level TEXT NOT NULL,
        event_type TEXT NOT NULL,
        node_id TEXT,
        tool_call_id TEXT,
        payload_json TEXT,
        created_at TEXT NOT NULL,
        hash TEXT,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, event_id),
        UNIQUE (session_id, run_id, run_seq)
    );
    CREATE TABLE nodes (
        session_id TEXT NOT NULL REFERENCES sessions,
        node_id TEXT NOT NULL,
        node_seq BIGINT NOT NULL,
        parent_id TEXT,
        agent_id TEXT NOT NULL,
        run_id TEXT,
        role TEXT NOT NULL,
        node_type TEXT NOT NULL,
        content_json TEXT NOT NULL,
        metadata_json TEXT,
        token_count BIGINT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (session_id, node_id),
        UNIQUE (session_id, node_seq)
    );
    CREATE INDEX nodes_by_parent ON nodes (session_id, parent_id);
    CREATE TABLE agents (
        session_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        parent_agent_id TEXT,
        agent_type TEXT NOT NULL,
        created_by_run_id TEXT,
        fork_from_node_id TEXT,
        status TEXT NOT NULL,
        result_json TEXT,
        metadata_json TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (session_id, agent_id)
    );
    CREATE TABLE runs (
        session_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        start_node_id TEXT,
        end_node_id TEXT,
        end_reason TEXT,
        turn_count BIGINT,
        usage_json TEXT,
        error_json TEXT,
        metadata_json TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (session_id, run_id)
    );
    CREATE TABLE artifacts (
        session_id TEXT NOT NULL,
        artifact_id TEXT NOT NULL,
        agent_id TEXT,
        run_id TEXT,
        node_id TEXT,
        tool_call_id TEXT,
        path TEXT NOT NULL,
        filename TEXT,
        mime_type TEXT,
        size_bytes BIGINT,
        summary TEXT,
        metadata_json TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (session_id, artifact_id)
    );
    CREATE TABLE artifact_blobs (
        path TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        data BYTEA NOT NULL
    );
    CREATE TABLE task_wal (
        session_id TEXT NOT NULL,
        name TEXT NOT NULL,
        seq BIGINT NOT NULL,
        line BYTEA NOT NULL,
        PRIMARY KEY (session_id, name, seq)
    );
    """,
    """
    CREATE TABLE deleted_sessions (
        session_id TEXT NOT NULL,
        deleted_at TEXT NOT NULL,
        events BIGINT NOT NULL,
        nodes BIGINT NOT NULL,
        agents BIGINT NOT NULL,
        runs BIGINT NOT NULL,
        artifacts BIGINT NOT NULL,
        artifacts_kept BIGINT NOT NULL,
        task_wals BIGINT NOT NULL
    );
    CREATE INDEX deleted_sessions_by_id ON deleted_sessions (session_id);
    """,
    # Version 3: a node's content is stored once, in its node_appended event; a node row
    # written from now on refers to that event (event_seq) and leaves content_json,
    # metadata_json, run_id and token_count NULL. Rows written before keep them and are
    # read as they are: no row is rewritten (docs/storage.md).
    """
    ALTER TABLE nodes ADD COLUMN IF NOT EXISTS event_seq BIGINT;
    ALTER TABLE nodes ALTER COLUMN content_json DROP NOT NULL;
    """,
    _seed_columns,
    _ARTIFACT_CHUNKS,
    # Version 6: the sessions list at 10^5 sessions (docs/postgres.md, "Size"): keyset
    # pages of ``sessions`` by creation and by last activity, and the sessions with a run
    # not ended; indexes only.
    """
    CREATE INDEX IF NOT EXISTS sessions_by_created ON sessions (created_at, session_id);
    CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated_at, session_id);
    CREATE INDEX IF NOT EXISTS runs_open ON runs (session_id)
        WHERE status IN ('running', 'pending');
    """,
]

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)
#: The first version whose artifacts may be in chunks (``artifact_chunks``).
CHUNKED_ARTIFACTS = MIGRATIONS.index(_ARTIFACT_CHUNKS) + 1
#: The oldest version a read-only store reads without migrating it (version 1 lacks only
#: the ``deleted_sessions`` audit: no deletion is recorded there).
OLDEST_READABLE = 1

_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS clew_schema (version INTEGER NOT NULL)"


def schema_version(conn: Conn) -> int:
    """Return the database's schema version (0: clew never wrote to it)."""
    row = conn.execute("SELECT to_regclass('clew_schema') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return 0
    got = conn.execute("SELECT version FROM clew_schema").fetchone()
    return int(got[0]) if got is not None else 0


def check_not_newer(version: int) -> None:
    """Raise ``StoreError`` if ``version`` was written by a newer clew than this one."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"database schema version {version} is newer than this clew ({SCHEMA_VERSION})"
        )


def migrate(conn: Conn) -> None:
    """Bring the database to the latest schema (``conn`` not in autocommit).

    Raises:
        StoreError: written by a newer clew.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(_VERSION_TABLE)
        version = schema_version(conn)
        check_not_newer(version)
        if version == 0:
            conn.execute("INSERT INTO clew_schema VALUES (0)")
        for i in range(version, SCHEMA_VERSION):
            step = MIGRATIONS[i]
            if isinstance(step, str):
                conn.execute(step)
            else:
                step(conn)
            conn.execute("UPDATE clew_schema SET version = %s", (i + 1,))
    conn.commit()
