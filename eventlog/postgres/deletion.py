"""Deleting a session for good on PostgreSQL: its rows of the shared tables, its artifact
blobs no other session references, its ``task_wal`` rows, and the audit row.

Everything happens in one transaction on the writer's connection, after locking the
session's ``sessions`` row (``FOR UPDATE``: a writer in another process appending to it
waits, then finds it gone). Blobs another session's nodes or artifact rows reference (a
fork's copied nodes point at the parent's) are kept (:mod:`eventlog.deletions`).
"""

from __future__ import annotations

from typing import Any

import psycopg

from eventlog.deletions import (
    AUDIT_COLUMNS,
    audit_values,
    deleted_error,
    deletion_time,
    from_audit_row,
    referenced_paths,
)
from eventlog.errors import UnknownSession
from eventlog.ids import validate_session_id
from eventlog.postgres.connections import translate_errors
from eventlog.store import SessionDeletion

Conn = psycopg.Connection[Any]


def _has_audit(conn: Conn) -> bool:
    """False on a schema older than the audit (a read-only store does not migrate)."""
    row = conn.execute("SELECT to_regclass('deleted_sessions') IS NOT NULL").fetchone()
    return bool(row and row[0])


def read_deletion(conn: Conn, session_id: str) -> SessionDeletion | None:
    """Return the last audit row of ``session_id``, or None."""
    if not _has_audit(conn):
        return None
    row = conn.execute(
        f"SELECT {AUDIT_COLUMNS} FROM deleted_sessions WHERE session_id = %s"
        " ORDER BY deleted_at DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return from_audit_row(row) if row is not None else None


def list_deletions(conn: Conn) -> list[SessionDeletion]:
    """Return every audit row, oldest first."""
    if not _has_audit(conn):
        return []
    rows = conn.execute(f"SELECT {AUDIT_COLUMNS} FROM deleted_sessions ORDER BY deleted_at")
    return [from_audit_row(r) for r in rows]


def _count(conn: Conn, table: str, sid: str) -> int:
    row = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE session_id = %s", (sid,)).fetchone()
    return int(row[0]) if row else 0


def _kept(conn: Conn, sid: str) -> set[str]:
    like = f"%{sid}/%"
    texts = [
        r[0]
        for r in conn.execute(
            # A node's content is in its node_appended event (and, for a row written
            # before schema version 3, in the row too): the events are searched.
            "SELECT payload_json FROM events WHERE session_id <> %s"
            " AND event_type = 'node_appended' AND payload_json LIKE %s"
            " UNION ALL"
            " SELECT path FROM artifacts WHERE session_id <> %s AND path LIKE %s",
            (sid, like, sid, like),
        )
    ]
    return referenced_paths(sid, texts)


def delete_session(
    conn: Conn, session_id: str, *, deleted_at: str = "", task_wals: int = 0
) -> SessionDeletion:
    """Delete the session in one transaction of ``conn`` (not autocommit); commit.

    ``task_wals`` is added to the number of the session's WALs in ``task_wal``.

    Raises:
        InvalidSessionId: a bad id (before any SQL runs).
        DeletedSession: it was deleted already.
        UnknownSession: no such session.
    """
    sid = validate_session_id(session_id)
    try:
        deletion = _delete(conn, sid, deleted_at, task_wals)
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
    return deletion


def _delete(conn: Conn, sid: str, deleted_at: str, task_wals: int) -> SessionDeletion:
    with translate_errors(f"deleting session {sid}"), conn.transaction():
        locked = conn.execute(
            "SELECT 1 FROM sessions WHERE session_id = %s FOR UPDATE", (sid,)
        ).fetchone()
        if locked is None:
            gone = read_deletion(conn, sid)
            raise deleted_error(gone) if gone else UnknownSession(f"unknown session {sid}")
        keep = _kept(conn, sid)
        wals = conn.execute(
            "SELECT COUNT(DISTINCT name) FROM task_wal WHERE session_id = %s", (sid,)
        ).fetchone()
        deletion = SessionDeletion(
            session_id=sid,
            deleted_at=deletion_time(deleted_at),
            events=_count(conn, "events", sid),
            nodes=_count(conn, "nodes", sid),
            agents=_count(conn, "agents", sid),
            runs=_count(conn, "runs", sid),
            artifacts=_count(conn, "artifacts", sid),
            artifacts_kept=len(keep),
            task_wals=task_wals + (int(wals[0]) if wals else 0),
        )
        for table in ("events", "nodes", "agents", "runs", "artifacts", "task_wal"):
            conn.execute(f"DELETE FROM {table} WHERE session_id = %s", (sid,))
        conn.execute(
            "DELETE FROM artifact_blobs WHERE session_id = %s AND NOT (path = ANY(%s))",
            (sid, sorted(keep)),
        )
        conn.execute("DELETE FROM sessions WHERE session_id = %s", (sid,))
        conn.execute(
            f"INSERT INTO deleted_sessions ({AUDIT_COLUMNS})"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            audit_values(deletion),
        )
    return deletion
