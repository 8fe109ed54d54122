"""Verify sessions: the events' hash chain holds, projections rebuilt from events equal
the stored rows, each ended run's usage equals the sum of its ``token_usage`` events (the
usage projection), every artifact file holds the bytes it was written with, every Task WAL
of the session replays, and each ended main run's WAL agrees with its log.

What ``Runtime.verify`` returns and ``clew verify`` prints. Verification only reads:
a torn Task WAL tail is reported, never cut. The WALs are read from the session's own
project directory (``Runtime.session_dir``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import PurePosixPath

import msgspec

from actors.errors import ProjectDirGone
from actors.recording.inputs import flow_of
from actors.runtime.engine import Engine
from actors.tasks.agreement import disagreements, run_wal_name
from actors.tasks.changes import TaskWalReport
from actors.tasks.inspect import inspect_wals
from eventlog.errors import ClewError, IntegrityError
from eventlog.events import ResumedPastDivergence
from eventlog.ids import owning_main_run, validate_session_id
from eventlog.store import EventStore
from projections.usage import Totals
from projections.verify import usage_differences
from projections.verify import verify as verify_projections


class SessionCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The verification of one session: ``ok`` when ``problems`` is empty."""

    session_id: str
    ok: bool
    events: int
    problems: list[str]
    wals: list[TaskWalReport]
    #: Events written before clew hashed events: the hash chain does not cover them.
    unchained_events: int = 0

    def lines(self) -> list[str]:
        """Return the result for humans, one line per problem."""
        verdict = "ok" if self.ok else f"{len(self.problems)} problems"
        wals = f", {len(self.wals)} task WALs" if self.wals else ""
        unchained = (
            f", {self.unchained_events} unchained (written before the hash chain)"
            if self.unchained_events
            else ""
        )
        return [f"{self.session_id}: {verdict} ({self.events} events{unchained}{wals})"] + [
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
    """Follow the session's hash chain, rebuild its projections from its events and compare
    them with the stored rows, check its artifact files, and replay every Task WAL of the
    session; collect every problem found."""
    sid = validate_session_id(session_id)
    problems: list[str] = []
    events = unchained = 0
    try:
        chain = engine.store.check_chain(sid)
        events, unchained = chain.events, chain.legacy_events
        report = verify_projections(engine.store, sid)
        events = report.events
        problems += [f"integrity: {p}" for p in report.integrity_errors]
        problems += [str(d) for d in report.differences]
        problems += usage_problems(engine.store, sid, report.usage_by_run)
        problems += artifact_problems(engine.store, sid)
    except IntegrityError as e:
        problems.append(f"integrity: {e}")
    except ClewError as e:
        problems.append(f"cannot rebuild the session from its events: {e}")
    try:
        wals, wal_problems = _check_wals(engine, sid)
    except IntegrityError as e:  # a run's events cannot be read: said once, above or here
        wals, wal_problems = [], [] if problems else [f"integrity: {e}"]
    problems += wal_problems
    return SessionCheck(
        session_id=sid,
        ok=not problems,
        events=events,
        problems=problems,
        wals=wals,
        unchained_events=unchained,
    )


def _check_wals(engine: Engine, sid: str) -> tuple[list[TaskWalReport], list[str]]:
    """Replay the session's Task WALs read-only and compare each ended main run's with its
    log; return the reports and the problems found."""
    mains = engine.main_runs(sid)
    events = {run_id: engine.store.read_run(sid, run_id) for run_id in mains}
    names = [run_wal_name(run_id, events[run_id]) for run_id in mains]
    try:
        found = inspect_wals(engine.session_dir(sid), sid, names, wals=engine.task_wals(sid))
        gone = None
    except ProjectDirGone as e:
        found, gone = [], e
    problems = [f"task WAL {w.name}: {w.error}" for w, _ in found if not w.available]
    by_name = {w.name: (w, tasks) for w, tasks in found}
    for run_id, name in zip(mains, names, strict=True):
        report, tasks = by_name.get(name, (None, []))
        problems += disagreements(run_id, events[run_id], report, tasks)
    if gone is not None and problems:
        # Every WAL is "missing" because the directory is: say that once, not per run.
        problems = [str(gone)]
    return [w for w, _ in found], problems


def usage_problems(
    store: EventStore, session_id: str, usage_by_run: dict[str, Totals]
) -> list[str]:
    """Compare each ended run's ``usage_json`` with the usage projection of its events.

    Runs of a main run recorded before flow 2 are skipped: that flow left the router's
    call out of the main run's usage (and a failed run's calls out of its), so those
    rows differ by design, and their events are what they are.
    """
    runs = store.read_runs(session_id)
    legacy = {
        r.run_id for r in runs if r.run_id == owning_main_run(r.run_id) and flow_of(r.metadata) < 2
    }
    skip = [r.run_id for r in runs if owning_main_run(r.run_id) in legacy]
    differences = usage_differences(runs, usage_by_run, skip)
    # A run resumed past a divergence keeps the token usage of the calls it abandoned in
    # its log, while its run_ended counts the calls it went on with: not a problem.
    return [
        str(d)
        for d in differences
        if not any(
            isinstance(e.event, ResumedPastDivergence) for e in store.read_run(session_id, d.key)
        )
    ]


def artifact_problems(store: EventStore, session_id: str) -> list[str]:
    """Check that each artifact file of the session holds the bytes it was written with.

    The files are content-addressed (``<sid>/<sha256>.<ext>``), and the path comes from
    the ``artifact_created`` event, which the hash chain covers.
    """
    problems: list[str] = []
    for row in store.read_artifacts(session_id):
        try:
            data = store.artifacts.read(row.path)
        except ClewError as e:
            problems.append(f"artifact {row.artifact_id}: {e}")
            continue
        if hashlib.sha256(data).hexdigest() != PurePosixPath(row.path).stem:
            problems.append(
                f"artifact {row.artifact_id}: {row.path} does not hold the bytes it was"
                " written with (its sha256 differs from its name)"
            )
    return problems


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
