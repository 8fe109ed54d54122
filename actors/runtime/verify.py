"""Verify sessions: projections rebuilt from events equal the stored rows, every Task
WAL of the session replays, and each ended main run's WAL agrees with its log.

What ``Runtime.verify`` returns and ``clew verify`` prints. Verification only reads:
a torn Task WAL tail is reported, never cut. The WALs are read from the session's own
project directory (``Runtime.session_dir``).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from actors.errors import ProjectDirGone
from actors.runtime.engine import Engine
from actors.tasks.agreement import disagreements
from actors.tasks.changes import TaskWalReport
from actors.tasks.inspect import inspect_wals
from eventlog.errors import ClewError
from eventlog.ids import validate_session_id, wal_name_for
from projections.verify import verify as verify_projections


class SessionCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The verification of one session: ``ok`` when ``problems`` is empty."""

    session_id: str
    ok: bool
    events: int
    problems: list[str]
    wals: list[TaskWalReport]

    def lines(self) -> list[str]:
        """Return the result for humans, one line per problem."""
        verdict = "ok" if self.ok else f"{len(self.problems)} problems"
        wals = f", {len(self.wals)} task WALs" if self.wals else ""
        return [f"{self.session_id}: {verdict} ({self.events} events{wals})"] + [
            f"  {p}" for p in self.problems
        ]


class VerifyReport(msgspec.Struct, frozen=True, kw_only=True):
    """The verification of one session or of every session of a home."""

    ok: bool
    sessions: list[SessionCheck]

    def summary(self) -> str:
        """One line for humans."""
        verdict = "ok" if self.ok else "PROBLEMS FOUND"
        return f"{len(self.sessions)} sessions verified: {verdict}"


def check_session(engine: Engine, session_id: str) -> SessionCheck:
    """Rebuild the session's projections from its events, compare them with the stored
    rows, and replay every Task WAL of the session; collect every problem found."""
    sid = validate_session_id(session_id)
    problems: list[str] = []
    events = 0
    try:
        report = verify_projections(engine.store, sid)
        events = report.events
        problems += [f"integrity: {p}" for p in report.integrity_errors]
        problems += [str(d) for d in report.differences]
    except ClewError as e:
        problems.append(f"cannot rebuild the session from its events: {e}")
    wals, wal_problems = _check_wals(engine, sid)
    problems += wal_problems
    return SessionCheck(
        session_id=sid, ok=not problems, events=events, problems=problems, wals=wals
    )


def _check_wals(engine: Engine, sid: str) -> tuple[list[TaskWalReport], list[str]]:
    """Replay the session's Task WALs read-only and compare each ended main run's with its
    log; return the reports and the problems found."""
    mains = engine.main_runs(sid)
    try:
        found = inspect_wals(engine.session_dir(sid), sid, mains)
        gone = None
    except ProjectDirGone as e:
        found, gone = [], e
    problems = [f"task WAL {w.name}: {w.error}" for w, _ in found if not w.available]
    by_name = {w.name: (w, tasks) for w, tasks in found}
    for run_id in mains:
        report, tasks = by_name.get(wal_name_for(run_id), (None, []))
        problems += disagreements(run_id, engine.store.read_run(sid, run_id), report, tasks)
    if gone is not None and problems:
        # Every WAL is "missing" because the directory is: say that once, not per run.
        problems = [str(gone)]
    return [w for w, _ in found], problems


def verify(
    engine: Engine,
    session_id: str | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Verify ``session_id``, or every session of the home when it is None.

    Raises:
        InvalidSessionId, UnknownSession: ``session_id`` is given and bad or unknown.
    """
    if session_id is not None:
        sid = validate_session_id(session_id)
        engine.store.read_session(sid)
        ids = [sid]
    else:
        ids = [r.session_id for r in engine.store.list_sessions()]
    checks = []
    for i, sid in enumerate(ids):
        checks.append(check_session(engine, sid))
        if progress is not None:
            progress(i + 1, len(ids))
    return VerifyReport(ok=all(c.ok for c in checks), sessions=checks)
