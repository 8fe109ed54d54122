"""Deleting a session for good: its tables, its rows, its artifact files, and the audit.

The log is append-only, so deleting is the one write that removes history: it drops
``events_<sid>`` and ``nodes_<sid>`` (of an archived session in its cold file: its
location row, and the file once committed, :mod:`eventlog.sqlite.cold`), deletes the
session's rows of ``sessions``, ``agents``, ``runs`` and ``artifacts`` and inserts the
``deleted_sessions`` audit row (counts and time, no content) in one transaction on the
write connection, then removes the files of ``artifacts/<sid>/`` that no other session
references (a fork's copied nodes point at its parent's artifacts:
:mod:`eventlog.deletions`). Other sessions, and their hash chains, are untouched.

Only the writer actor runs it (``Writer.delete_session``), after committing everything
queued before it, so the writer's cached counters of the session are dropped with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Set as AbstractSet
from pathlib import Path

import apsw

from eventlog.deletions import (
    AUDIT_COLUMNS,
    audit_values,
    deleted_error,
    deletion_time,
    from_audit_row,
    referenced_paths,
)
from eventlog.errors import StoreError, UnknownSession
from eventlog.ids import validate_session_id
from eventlog.sqlite.cold import (
    all_cold_files,
    cold_files,
    cold_path,
    forget_cold,
    has_main_tables,
    read_only_uri,
)
from eventlog.sqlite.transaction import Transaction
from eventlog.store import SessionDeletion


def _count(conn: apsw.Connection, sql: str, params: tuple[str, ...] = ()) -> int:
    row = conn.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def read_deletion(conn: apsw.Connection, session_id: str) -> SessionDeletion | None:
    """Return the last audit row of ``session_id`` (None: none, or a schema without it)."""
    try:
        row = conn.execute(
            f"SELECT {AUDIT_COLUMNS} FROM deleted_sessions WHERE session_id = ?"
            " ORDER BY rowid DESC LIMIT 1",
            (session_id,),
        ).fetchone()
    except apsw.SQLError:  # a read-only store of an older schema: no audit table yet
        return None
    return from_audit_row(row) if row is not None else None


def list_deletions(conn: apsw.Connection) -> list[SessionDeletion]:
    """Return every audit row, oldest first."""
    try:
        rows = conn.execute(f"SELECT {AUDIT_COLUMNS} FROM deleted_sessions ORDER BY rowid")
        return [from_audit_row(r) for r in rows]
    except apsw.SQLError:
        return []


def kept_paths(conn: apsw.Connection, sid: str, main: Path) -> set[str]:
    """The artifact paths of ``sid`` another session references (its nodes or its rows);
    a cold session's events are read from its cold file (``main``: the main file).

    A session with no artifact row has nothing another session could reference (its
    files are written before the events that record them: one without a row was never
    committed), so nothing is searched: with 10^5 sessions, most of them in cold files,
    the search opens every one.
    """
    if (
        conn.execute("SELECT 1 FROM artifacts WHERE session_id = ? LIMIT 1", (sid,)).fetchone()
        is None
    ):
        return set()
    like = f"%{sid}/%"
    others = [
        validate_session_id(r[0])
        for r in conn.execute("SELECT session_id FROM sessions WHERE session_id <> ?", (sid,))
    ]
    cold = all_cold_files(conn)
    texts: list[str | None] = []
    for other in others:
        # A node's content is in its node_appended event (and, in a session made before
        # schema version 4, in its row too): the events are searched.
        sql = (
            f"SELECT payload_json FROM events_{other}"
            " WHERE event_type = 'node_appended' AND payload_json LIKE ?"
        )
        if other in cold:
            # Not attached to the write connection (inside this transaction it could not
            # be detached again): read on a connection of its own.
            cold_conn = apsw.Connection(
                read_only_uri(main.parent / cold[other]),
                flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI,
            )
            try:
                texts += [r[0] for r in cold_conn.execute(sql, (like,))]
            finally:
                cold_conn.close()
            continue
        texts += [r[0] for r in conn.execute(sql, (like,))]
    texts += [
        r[0]
        for r in conn.execute(
            "SELECT path FROM artifacts WHERE session_id <> ? AND path LIKE ?", (sid, like)
        )
    ]
    return referenced_paths(sid, texts)


def delete_session_rows(
    conn: apsw.Connection,
    session_id: str,
    main: Path,
    *,
    deleted_at: str = "",
    task_wals: int = 0,
) -> tuple[SessionDeletion, set[str], Path]:
    """Drop the session's tables, delete its rows and record the deletion, in one
    transaction; return the deletion, the artifact paths to keep and the session's cold
    file path (for the caller to remove once committed, if it exists).

    Raises:
        InvalidSessionId: ``session_id`` is not a session id (before any SQL runs).
        DeletedSession: it was deleted already.
        UnknownSession: no such session.
    """
    sid = validate_session_id(session_id)
    with Transaction(conn, f"deleting session {sid}"):
        if conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone() is None:
            gone = read_deletion(conn, sid)
            raise deleted_error(gone) if gone else UnknownSession(f"unknown session {sid}")
        by_session = (sid,)
        keep = kept_paths(conn, sid, main)
        cold = {} if has_main_tables(conn, sid) else cold_files(conn, [sid])
        if cold:  # its tables are in its cold file, its counts in the location row
            events, nodes = cold[sid][1:]
        else:
            events = _count(conn, f"SELECT COUNT(*) FROM events_{sid}")
            nodes = _count(conn, f"SELECT COUNT(*) FROM nodes_{sid}")
        deletion = SessionDeletion(
            session_id=sid,
            deleted_at=deletion_time(deleted_at),
            events=events,
            nodes=nodes,
            agents=_count(conn, "SELECT COUNT(*) FROM agents WHERE session_id = ?", by_session),
            runs=_count(conn, "SELECT COUNT(*) FROM runs WHERE session_id = ?", by_session),
            artifacts=_count(
                conn, "SELECT COUNT(*) FROM artifacts WHERE session_id = ?", by_session
            ),
            artifacts_kept=len(keep),
            task_wals=task_wals,
        )
        # The cold file goes once committed; one a crash left unused goes too.
        cold_file = forget_cold(conn, main, sid) or cold_path(main, sid)
        if not cold:
            conn.execute(f"DROP TABLE events_{sid}")
            conn.execute(f"DROP TABLE nodes_{sid}")
        for table in ("agents", "runs", "artifacts", "sessions"):
            conn.execute(f"DELETE FROM {table} WHERE session_id = ?", by_session)
        conn.execute(
            f"INSERT INTO deleted_sessions ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            audit_values(deletion),
        )
    return deletion, keep, cold_file


def delete_artifact_files(
    root: Path, session_id: str, keep: AbstractSet[str] = frozenset()
) -> None:
    """Remove the files of ``<root>/<sid>/`` but those in ``keep`` (relative paths), and
    the folder when nothing is kept (after the rows that referenced them are gone)."""
    sid = validate_session_id(session_id)
    folder = root / sid
    try:
        names = [p.name for p in folder.iterdir()]
    except FileNotFoundError:
        return
    except OSError as e:
        raise StoreError(f"cannot remove the artifacts of {sid}: {e.strerror or e}") from e
    try:
        for name in names:
            if f"{sid}/{name}" not in keep:
                with contextlib.suppress(FileNotFoundError):
                    (folder / name).unlink()
        if not keep:
            with contextlib.suppress(FileNotFoundError):
                folder.rmdir()
    except OSError as e:
        raise StoreError(f"cannot remove the artifacts of {sid}: {e.strerror or e}") from e
