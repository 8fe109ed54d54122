"""What both backends share when deleting a session: the audit row, the message naming a
deleted session, and finding the artifacts another session still references.

Artifact paths are ``<sid>/<sha256>.<ext>`` on both backends. A fork copies its parent's
nodes as they are, so their ``artifact_ref`` blocks keep pointing at the parent's
artifacts: deleting the parent must keep those (and only those).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable

from eventlog.errors import DeletedSession
from eventlog.store import SessionDeletion

#: The audit table's columns, in the order :func:`audit_values` gives them.
AUDIT_COLUMNS = (
    "session_id, deleted_at, events, nodes, agents, runs, artifacts, artifacts_kept, task_wals"
)


def deletion_time(deleted_at: str) -> str:
    """Return ``deleted_at``, or the wall clock when the caller gave none."""
    return deleted_at or _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


def audit_values(d: SessionDeletion) -> tuple[str | int, ...]:
    """Return the audit row of ``d`` in :data:`AUDIT_COLUMNS` order."""
    return (
        d.session_id,
        d.deleted_at,
        d.events,
        d.nodes,
        d.agents,
        d.runs,
        d.artifacts,
        d.artifacts_kept,
        d.task_wals,
    )


def from_audit_row(row: Iterable[object]) -> SessionDeletion:
    """Rebuild a :class:`SessionDeletion` from an audit row (:data:`AUDIT_COLUMNS`)."""
    sid, at, events, nodes, agents, runs, arts, kept, wals = row
    return SessionDeletion(
        session_id=str(sid),
        deleted_at=str(at),
        events=int(str(events)),
        nodes=int(str(nodes)),
        agents=int(str(agents)),
        runs=int(str(runs)),
        artifacts=int(str(arts)),
        artifacts_kept=int(str(kept)),
        task_wals=int(str(wals)),
    )


def deleted_error(deletion: SessionDeletion) -> DeletedSession:
    """The error a read of a deleted session raises: it says when it was deleted."""
    return DeletedSession(f"session {deletion.session_id} was deleted at {deletion.deleted_at}")


def referenced_paths(session_id: str, texts: Iterable[str | None]) -> set[str]:
    """Return the artifact paths of ``session_id`` that appear in ``texts``."""
    pattern = re.compile(re.escape(session_id) + r"/[0-9a-f]{64}\.[A-Za-z0-9]+")
    found: set[str] = set()
    for text in texts:
        if text:
            found.update(pattern.findall(text))
    return found
