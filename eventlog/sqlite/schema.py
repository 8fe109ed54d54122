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

from eventlog.errors import IntegrityError, StoreError
from eventlog.ids import validate_session_id
from eventlog.row_encoding import node_content_of_event, usage_of
from eventlog.seed_enums import FOLD_STORED_RUNS
from eventlog.sqlite.transaction import Transaction

#: A migration step: a script, or a function of the connection (inside its transaction).
Migration = str | Callable[[apsw.Connection], None]


def _chain_the_events(conn: apsw.Connection) -> None:
    """Version 2: a hash chain over each session's events (:mod:`eventlog.chain`).

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


def _seed_columns(conn: apsw.Connection) -> None:
    """Version 5: every table holds the seed's columns, filled, and the seed's enums.

    - ``nodes_<sid>`` of a session made at version 4 (its rows refer to their
      ``node_appended`` events) is rebuilt in the seed's layout (:func:`nodes_ddl`),
      each row's ``run_id, content_json, metadata_json, token_count`` taken from its
      event and ``created_at`` from the event row, as the rows of every other session
      hold them. Rows of older sessions already hold them.
    - ``runs`` gains ``status_detail``; a parked run (``waiting``) is stored ``pending``,
      a refused one ``failed``, an end reason ``cancelled`` NULL
      (:mod:`eventlog.seed_enums`).
    - A run not ended (``running``, ``pending``) stores its usage so far: the sum of its
      ``token_usage`` events.

    One transaction (the caller's): a failure leaves the file at version 4.
    """
    conn.execute("ALTER TABLE runs ADD COLUMN status_detail TEXT")
    for sql in FOLD_STORED_RUNS:
        conn.execute(sql)
    for (session_id,) in list(conn.execute("SELECT session_id FROM sessions")):
        sid = validate_session_id(session_id)
        if nodes_by_reference(conn, sid):
            _nodes_by_value(conn, sid)
        open_runs = conn.execute(
            "SELECT run_id FROM runs WHERE session_id = ? AND status IN ('running', 'pending')",
            (sid,),
        ).fetchall()
        for (run_id,) in open_runs:
            payloads = conn.execute(
                f"SELECT payload_json FROM events_{sid}"
                " WHERE run_id = ? AND event_type = 'token_usage' ORDER BY seq",
                (run_id,),
            )
            conn.execute(
                "UPDATE runs SET usage_json = ? WHERE session_id = ? AND run_id = ?",
                (usage_of(str(r[0]) for r in payloads), sid, run_id),
            )


def _nodes_by_value(conn: apsw.Connection, sid: str) -> None:
    """Rebuild ``nodes_<sid>`` (rows by reference) in the seed's layout, from its events."""
    conn.execute(nodes_ddl(sid, f"nodes_{sid}_v5"))
    rows = conn.execute(
        f"SELECT n.node_id, n.node_seq, n.parent_id, n.agent_id, n.role, n.node_type,"
        f" e.created_at, e.payload_json FROM nodes_{sid} n"
        f" LEFT JOIN events_{sid} e ON e.seq = n.event_seq ORDER BY n.node_seq"
    ).fetchall()
    for node_id, node_seq, parent, agent, role, node_type, at, payload in rows:
        try:
            run_id, content, metadata, tokens = node_content_of_event(
                str(node_id), None if payload is None else str(payload)
            )
        except IntegrityError as e:
            raise StoreError(f"cannot migrate session {sid} to schema version 5: {e}") from e
        conn.execute(
            f"INSERT INTO nodes_{sid}_v5 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                node_id,
                node_seq,
                parent,
                agent,
                run_id,
                role,
                node_type,
                content,
                metadata,
                tokens,
                at,
            ),
        )
    conn.execute(f"DROP TABLE nodes_{sid}")
    conn.execute(f"ALTER TABLE nodes_{sid}_v5 RENAME TO nodes_{sid}")
    conn.execute(f"CREATE INDEX nodes_{sid}_by_parent ON nodes_{sid}(parent_id)")


#: The indexes of the sessions list (the same SQL on both backends; PostgreSQL's
#: migration 5 runs it too).
SESSIONS_LIST_INDEXES = """
    CREATE INDEX IF NOT EXISTS sessions_by_created ON sessions(created_at, session_id);
    CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions(updated_at, session_id);
    CREATE INDEX IF NOT EXISTS runs_open ON runs(session_id)
        WHERE status IN ('running', 'pending');
    """

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
    _seed_columns,
    # Version 6: the sessions list at 10^5 sessions (docs/postgres.md, "Size"): keyset
    # pages of ``sessions`` by creation and by last activity, and the few sessions with a
    # run not ended (the only ones whose status needs the owner lock), each an index range
    # scan; only indexes are built, no row or session table is touched.
    SESSIONS_LIST_INDEXES,
]

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)
#: The oldest version a read-only store can read without migrating it (version 1 lacks
#: only the hash chain: its events read as legacy).
OLDEST_READABLE = 1


def nodes_ddl(sid: str, table: str = "") -> str:
    """Return the DDL of the node table of ``sid`` (validated), named ``table`` (default
    ``nodes_<sid>``; the migration builds the new layout under another name first).

    The seed's columns in the seed's order (``node_id, node_seq, parent_id, agent_id,
    run_id, role, node_type, content_json, metadata_json, token_count, created_at``):
    the row holds the node's content (its provider-neutral blocks, an ``artifact_ref``
    where a block was made an artifact), as its ``node_appended`` event does.
    """
    name = table or f"nodes_{sid}"
    return f"""
    CREATE TABLE {name} (
        node_id TEXT NOT NULL UNIQUE,
        node_seq INTEGER PRIMARY KEY,
        parent_id TEXT,
        agent_id TEXT NOT NULL,
        run_id TEXT,
        role TEXT NOT NULL,
        node_type TEXT NOT NULL,
        content_json TEXT NOT NULL,
        metadata_json TEXT,
        token_count INTEGER,
        created_at TEXT NOT NULL
    );
    """


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

    Both tables have the seed's columns in the seed's order (``events_<sid>`` adds its
    chain ``hash`` after them); see :func:`nodes_ddl` and docs/storage.md.
    """
    sid = validate_session_id(session_id)
    return f"""
    {nodes_ddl(sid)}
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
    content (made by schema version 4, before the migration to 5) rather than holding it
    (``content_json``)."""
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
