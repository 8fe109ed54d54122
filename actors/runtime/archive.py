"""Archive a session: ``session_archived``, after which the session only reads.

An archived session stays in the home, whole: ``show``, ``timeline``, ``tasks``,
``export``, ``replay``, ``verify`` and ``@@<id>`` references read it as before. Every
write is refused with :class:`~actors.errors.ArchivedSession` — a new run, a retry, a
resume, a switch of its active node — so its history is final. Archiving is final too
(there is no unarchive): to go on from an archived session, start a new one and refer to
it with ``@@<id>`` (its snapshot), or fork it.

A session with an interrupted run is not archived (resume it first: archiving would
leave a run that can never finish). Archiving an archived session writes nothing.
"""

from __future__ import annotations

from actors.errors import ArchivedSession, NeedsResume, Unencodable, UsageError
from actors.models.storable import check_text
from actors.runtime.engine import OPEN_RUN_STATUSES, Engine
from eventlog.events import SessionArchived
from eventlog.ids import validate_session_id
from eventlog.records import AppendRequest, SessionRow


def refuse_if_archived(row: SessionRow, what: str) -> None:
    """Raise ``ArchivedSession`` naming ``what`` when the session of ``row`` is archived."""
    if row.status == "archived":
        sid = row.session_id
        raise ArchivedSession(
            f"session {sid} is archived: {what} refused (an archived session only reads;"
            f" start a new session and refer to it with @@{sid})"
        )


def archive_session(engine: Engine, session_id: str, reason: str = "") -> bool:
    """Archive the session; return False when it was archived already (nothing written).

    Raises:
        UnknownSession, InvalidSessionId: no such session.
        NeedsResume: the session has an interrupted run.
        SessionBusy: a live process owns the session.
        ReadOnlyStore: the home is open read-only.
        UsageError: ``reason`` is not text the log can hold.
    """
    sid = validate_session_id(session_id)
    try:
        check_text(reason, "the reason")
    except Unencodable as e:
        raise UsageError(str(e)) from None
    engine.refuse_if_read_only(f"archiving {sid}")
    if engine.store.read_session(sid).status == "archived":
        return False
    engine.lock(sid)
    try:
        if engine.store.read_session(sid).status == "archived":
            return False
        if any(r.status in OPEN_RUN_STATUSES for r in engine.store.read_runs(sid)):
            raise NeedsResume(
                f"session {sid} has an interrupted run; resume it (clew resume {sid})"
                " before archiving it"
            )
        engine.writer.append(
            AppendRequest(
                session_id=sid,
                event=SessionArchived(reason=reason),
                created_at=engine.clock.now(),
            )
        )
    finally:
        engine.unlock(sid)
    return True
