"""Deleting a session for good: its tables, its rows, its artifact files.

The log is append-only, so deleting is the one write that removes history: it drops
``events_<sid>`` and ``nodes_<sid>`` and deletes the session's rows of ``sessions``,
``agents``, ``runs`` and ``artifacts`` in one transaction on the write connection, then
removes ``artifacts/<sid>/`` (artifact files are per session: no other session
references them). Other sessions, and their hash chains, are untouched.

Only the writer actor runs it (``Writer.delete_session``), after committing everything
queued before it, so the writer's cached counters of the session are dropped with it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw

from eventlog.errors import StoreError, UnknownSession
from eventlog.ids import validate_session_id
from eventlog.sqlite.transaction import Transaction
from eventlog.store import SessionDeletion


def _count(conn: apsw.Connection, sql: str, params: tuple[str, ...] = ()) -> int:
    row = conn.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def delete_session_rows(conn: apsw.Connection, session_id: str) -> SessionDeletion:
    """Drop the session's tables and delete its rows, in one transaction.

    Raises:
        InvalidSessionId: ``session_id`` is not a session id (before any SQL runs).
        UnknownSession: no such session.
    """
    sid = validate_session_id(session_id)
    with Transaction(conn, f"deleting session {sid}"):
        if conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone() is None:
            raise UnknownSession(f"unknown session {sid}")
        by_session = (sid,)
        deletion = SessionDeletion(
            session_id=sid,
            events=_count(conn, f"SELECT COUNT(*) FROM events_{sid}"),
            nodes=_count(conn, f"SELECT COUNT(*) FROM nodes_{sid}"),
            agents=_count(conn, "SELECT COUNT(*) FROM agents WHERE session_id = ?", by_session),
            runs=_count(conn, "SELECT COUNT(*) FROM runs WHERE session_id = ?", by_session),
            artifacts=_count(
                conn, "SELECT COUNT(*) FROM artifacts WHERE session_id = ?", by_session
            ),
        )
        conn.execute(f"DROP TABLE events_{sid}")
        conn.execute(f"DROP TABLE nodes_{sid}")
        for table in ("agents", "runs", "artifacts", "sessions"):
            conn.execute(f"DELETE FROM {table} WHERE session_id = ?", by_session)
    return deletion


def delete_artifact_files(root: Path, session_id: str) -> None:
    """Remove ``<root>/<sid>/`` (after the rows that referenced its files are gone)."""
    sid = validate_session_id(session_id)
    folder = root / sid
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        return
    except OSError as e:
        raise StoreError(f"cannot remove the artifacts of {sid}: {e.strerror or e}") from e
