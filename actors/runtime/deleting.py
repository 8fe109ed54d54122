"""Delete a session for good: ``rt.delete_session`` and ``clew delete``.

The store removes the session's events, rows and the artifacts no other session
references, and records the deletion (id, time from the runtime's clock, counts — never
content) in its ``deleted_sessions`` audit table (:mod:`eventlog.sqlite.deletion`,
:mod:`eventlog.postgres.deletion`); this module adds what lives beside the store: the
session's Task WALs and plan files under its project's ``.clew/`` (on PostgreSQL the
WALs are ``task_wal`` rows the store deletes itself), and its lock and cancel-request
files in the home.

Refused without ``force`` (:class:`~actors.errors.DeleteRefused`): a session a live
process owns (running), one waiting for an approval or an answer, and one with forked
sessions (their copied nodes read their artifacts through it: forced, the forks stay
and verify, but those artifact bodies are gone). Deleting takes the session's owner lock,
so no run starts meanwhile. Files are removed after the store committed: a crash
between leaves only files, which a second ``delete`` of the (deleted) id removes.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from actors.errors import DeleteRefused, ProjectDirGone
from actors.runtime import control
from actors.runtime.engine import Engine
from actors.runtime.waiting import wait_state
from actors.tasks.plan_file import plan_dir
from eventlog.errors import DeletedSession
from eventlog.ids import validate_session_id
from eventlog.store import SessionDeletion
from eventlog.taskwal import wal_dir


def refusal(engine: Engine, session_id: str) -> str | None:
    """Why deleting ``session_id`` needs ``force``; None when it does not."""
    if engine.is_owned(session_id):
        return f"session {session_id} is running (a live process owns it)"
    state = wait_state(engine, session_id)
    if state is not None:
        return f"session {session_id} is waiting ({state.describe()})"
    forks = [
        row.session_id
        for row in engine.store.list_sessions()
        if row.parent_session_id == session_id
    ]
    if forks:
        return f"session {session_id} has forked sessions ({', '.join(forks)})"
    return None


def _project_dirs(engine: Engine, sid: str) -> tuple[Path | None, Path | None]:
    """The session's Task WAL directory (None: the WALs are PostgreSQL rows) and plan
    directory, under its project directory (both None when that directory is gone)."""
    try:
        project = engine.session_dir(sid)
    except ProjectDirGone:
        return None, None
    wals = wal_dir(project, sid) if engine.table_wals is None else None
    return wals, plan_dir(project, sid)


def _count_wals(wals: Path | None) -> int:
    if wals is None or not wals.is_dir():
        return 0
    return sum(1 for p in wals.iterdir() if p.name.endswith(".wal.jsonl"))


def delete_session(engine: Engine, session_id: str, *, force: bool = False) -> SessionDeletion:
    """Delete the session for good; return what was removed (as audited).

    Raises:
        InvalidSessionId, UnknownSession: a bad or unknown id.
        DeletedSession: it was deleted already (a leftover lock file is removed).
        DeleteRefused: running, waiting or forked, and not ``force``.
        SessionBusy: another thread of this process is running it.
        ReadOnlyStore: the home is open read-only.
    """
    sid = validate_session_id(session_id)
    engine.refuse_if_read_only(f"deleting {sid}")
    try:
        engine.store.read_session(sid)
    except DeletedSession:
        _remove_home_files(engine, sid)
        raise
    why = refusal(engine, sid)
    if why is not None and not force:
        raise DeleteRefused(f"{why}: not deleted (--force deletes it anyway)")
    with engine.live_run(sid):
        if not engine.is_owned(sid) or engine.holds(sid):
            engine.lock(sid)
        try:
            dirs = _project_dirs(engine, sid)
            deletion = engine.writer.delete_session(
                sid, deleted_at=engine.clock.now(), task_wals=_count_wals(dirs[0])
            )
        finally:
            engine.unlock(sid)
    for folder in dirs:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    _remove_home_files(engine, sid)
    return deletion


def _remove_home_files(engine: Engine, sid: str) -> None:
    """Remove the session's owner lock and cancel-request files from the home."""
    control.clear(engine.home, sid)
    with contextlib.suppress(OSError):
        (engine.home / "locks" / f"{sid}.lock").unlink()
