"""Verify sessions: projections rebuilt from events equal the stored rows, and every
Task WAL of the session replays.

What ``Runtime.verify`` returns and ``clew verify`` prints. Verification only reads:
a torn Task WAL tail is reported, never cut.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from actors.runtime.engine import Engine
from actors.tasks.changes import TaskWalReport
from actors.tasks.inspect import inspect_wals
from eventlog.errors import ClewError
from eventlog.ids import validate_session_id
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
    wals = [w for w, _ in inspect_wals(engine.project_dir, sid, engine.main_runs(sid))]
    problems += [f"task WAL {w.name}: {w.error}" for w in wals if not w.available]
    return SessionCheck(
        session_id=sid, ok=not problems, events=events, problems=problems, wals=wals
    )


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
