"""Upkeep of a home's sessions: archive, delete, verify, copy between stores.

**Archive** a session: ``session_archived``, after which the session only reads.

An archived session stays in the home, whole: ``show``, ``timeline``, ``tasks``,
``export``, ``replay``, ``verify`` and ``@@<id>`` references read it as before. Every
write is refused with :class:`~actors.errors.ArchivedSession` — a new run, a retry, a
resume, a switch of its active node — so its history is final. Archiving is final too
(there is no unarchive): to go on from an archived session, start a new one and refer to
it with ``@@<id>`` (its snapshot), or fork it.

A session with an interrupted run is not archived (resume it first: archiving would
leave a run that can never finish). Archiving an archived session writes nothing.

On SQLite the archived session's table pair then moves to a file of its own
(``cold/<sid>.sqlite``, :mod:`eventlog.sqlite.cold`), so the main file's schema — which
every new connection parses — holds only the live sessions; its reads go on unchanged.
Archiving an archived session whose tables are still in the main file (archived before
this, or a crash between the move's two steps) moves them.

**Delete** a session for good: ``Session.delete`` and ``clew delete``.

The store removes the session's events, rows and the artifacts no other session
references, and records the deletion (id, time from the runtime's clock, counts — never
content) in its ``deleted_sessions`` audit table (:mod:`eventlog.sqlite.deletion`,
:mod:`eventlog.postgres.deletion`); deleting here adds what lives beside the store: the
session's Task WALs and plan files under its project's ``.clew/`` (on PostgreSQL the
WALs are ``task_wal`` rows the store deletes itself), and its lock and cancel-request
files in the home.

Refused without ``force`` (:class:`~actors.errors.DeleteRefused`): a session a live
process owns (running), one waiting for an approval or an answer, and one with forked
sessions (their copied nodes read their artifacts through it: forced, the forks stay
and verify, but those artifact bodies are gone). Deleting takes the session's owner lock,
so no run starts meanwhile. Files are removed after the store committed: a crash
between leaves only files, which a second ``delete`` of the (deleted) id removes.

**Verify** sessions: the events' hash chain holds, projections rebuilt from events equal
the stored rows, each ended run's usage equals the sum of its ``token_usage`` events (the
usage projection), every artifact file holds the bytes it was written with, every Task WAL
of the session replays, and each ended main run's WAL agrees with its log.

What ``Runtime.verify`` returns and ``clew verify`` prints. Verification only reads:
a torn Task WAL tail is reported, never cut. The WALs are read from the session's own
project directory (``Session.session_dir``).

**Copy** sessions between stores exactly: a clew home (SQLite) ↔ a PostgreSQL database.

A session is copied by appending its events, in seq order, to the target in **one**
``append_batch`` (one transaction: the target holds all of it or none of it). Every
number and id the writer assigns — ``seq``, ``run_seq``, ``node_seq``, ``event_id`` — is
a function of the append order, and each hash of the chain a function of the stored
values, so the target's rows are the source's rows: the copy is checked event by event
(``StoredEvent`` equality) and by :func:`projections.verify` before it is reported.

Artifacts are copied first (bytes read from the source, written to the target's files
or blob rows under the same content-addressed path), and the target is opened with no
artifact threshold, so nothing is externalised anew. Task WALs are copied record by
record with their recorded ``at`` times (:class:`_RecordedClock`), so their lines are
the source's lines.

A session already on the target is skipped when it is identical (events and Task WALs),
and refused otherwise (``CopyRefused``: exit 2). Every session to copy is checked first
(its events and its Task WALs against the target's), so a refusal comes before anything
is written; a failure while writing names the sessions copied before it. Task WALs copied
to a home go to ``project_dir`` when ``pin_project`` (the CLI's ``--project``), else to
the session's recorded project directory when it exists on this host.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath

import msgspec

from actors.errors import (
    ArchivedSession,
    CopyRefused,
    DeleteRefused,
    NeedsResume,
    ProjectDirGone,
    Unencodable,
    UsageError,
)
from actors.models.storable import check_text
from actors.recording.inputs import flow_of
from actors.runtime import control
from actors.runtime.engine import Engine, session_dir, task_wals
from actors.runtime.status import OPEN_RUN_STATUSES, main_runs
from actors.runtime.waiting import wait_state
from actors.tasks.agreement import disagreements, run_wal_name
from actors.tasks.changes import TaskWalReport
from actors.tasks.inspect import inspect_wals
from actors.tasks.plan_file import plan_dir
from eventlog.errors import ClewError, DeletedSession, IntegrityError, Refused, StoreError
from eventlog.events import ArtifactCreated, ResumedPastDivergence, SessionArchived
from eventlog.ids import owning_main_run, validate_session_id
from eventlog.locations import is_postgres_url, open_store
from eventlog.records import AppendRequest, SessionRow, StoredEvent
from eventlog.store import EventStore, KeepsColdFiles, SessionDeletion
from eventlog.taskwal import WalRecord, wal_dir
from eventlog.wals import FileWals, TaskWals
from projections.usage import Totals
from projections.verify import usage_differences
from projections.verify import verify as verify_projections

# --- archive ------------------------------------------------------------------------------


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
        engine.writer.move_to_cold(sid)  # an archived session is never written: no owner
        return False
    engine.own(sid)
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
        engine.writer.move_to_cold(sid)
    finally:
        engine.release(sid)
    return True


# --- deleting -----------------------------------------------------------------------------


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
        project = session_dir(engine, sid)
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
            engine.own(sid)
        try:
            dirs = _project_dirs(engine, sid)
            deletion = engine.writer.delete_session(
                sid, deleted_at=engine.clock.now(), task_wals=_count_wals(dirs[0])
            )
        finally:
            engine.release(sid)
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


# --- verify -------------------------------------------------------------------------------


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


def list_problems(store: EventStore, sid: str, events: int) -> list[str]:
    """What the sessions list would show of the session, read its batched way (a page's
    runs and event counts in one statement each), against the session's own reads."""
    problems = []
    listed = store.count_events_of([sid])[sid]
    if listed != events:
        problems.append(f"sessions list: {listed} events counted, {events} in the session")
    if store.read_runs_of([sid])[sid] != store.read_runs(sid):
        problems.append("sessions list: the runs read for a page differ from the session's")
    return problems


def check_session(engine: Engine, session_id: str) -> SessionCheck:
    """Follow the session's hash chain, rebuild its projections from its events and compare
    them with the stored rows, check its artifact files, and replay every Task WAL of the
    session; collect every problem found.

    The whole check reads one snapshot of the store (``read_snapshot``): a process
    appending to the session meanwhile cannot make the tables read later disagree with
    the events folded earlier."""
    sid = validate_session_id(session_id)
    with engine.store.read_snapshot():
        return _check_session(engine, sid)


def _check_session(engine: Engine, sid: str) -> SessionCheck:
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
        problems += list_problems(engine.store, sid, events)
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
    mains = main_runs(engine, sid)
    events = {run_id: engine.store.read_run(sid, run_id) for run_id in mains}
    names = [run_wal_name(run_id, events[run_id]) for run_id in mains]
    try:
        found = inspect_wals(session_dir(engine, sid), sid, names, wals=task_wals(engine, sid))
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


# --- copying ------------------------------------------------------------------------------


class CopyResult(msgspec.Struct, frozen=True, kw_only=True):
    """What happened to one session."""

    session_id: str
    #: ``copied``, or ``identical`` (already on the target: nothing written).
    outcome: str
    events: int
    artifacts: int
    task_wal_lines: int


class _RecordedClock:
    """Hands out the recorded ``at`` of each Task WAL line, in order."""

    def __init__(self, records: Sequence[WalRecord]) -> None:
        self._ats: Iterator[str] = iter([r.at for r in records])

    def now(self) -> str:
        return next(self._ats)


class Endpoint:
    """One side of a copy: its store and where each session's Task WALs live."""

    def __init__(
        self, location: str | Path, project_dir: Path, *, read_only: bool, pin_project: bool = False
    ) -> None:
        self.location = str(location)
        self.project_dir = project_dir
        #: Task WAL files go to ``project_dir`` whatever the session's recorded directory.
        self.pin_project = pin_project
        # No threshold on the target: the source's blocks were externalised already.
        self.store: EventStore = open_store(
            location, read_only=read_only, artifact_threshold=sys.maxsize
        )
        self._table: TaskWals | None = None
        if is_postgres_url(self.location):
            from eventlog.postgres.taskwal import PgWals  # noqa: PLC0415 - optional extra

            self._table = PgWals(self.location)

    def wals(self, cwd: str) -> TaskWals:
        """The session's Task WALs: the table, or the files of its recorded project
        directory (``project_dir`` when pinned there, or when that directory is not here)."""
        if self._table is not None:
            return self._table
        recorded = Path(cwd)
        here = recorded.is_absolute() and recorded.is_dir() and not self.pin_project
        return FileWals(recorded if here else self.project_dir)

    def close(self) -> None:
        close_wals = getattr(self._table, "close", None)
        if close_wals is not None:
            close_wals()
        self.store.close()


def copy_sessions(
    source: str | Path,
    target: str | Path,
    session_ids: Sequence[str],
    project_dir: Path,
    *,
    pin_project: bool = False,
) -> list[CopyResult]:
    """Copy ``session_ids`` (every session of the source when empty) from ``source`` to
    ``target`` (each a clew home or a ``postgresql://`` URL). ``pin_project``: a home's
    Task WALs go to ``project_dir``, whatever each session's recorded directory.

    Every session is checked before the first is written: a refusal says nothing was
    copied, and it is true. A failure while writing names the sessions copied before it.

    Raises:
        CopyRefused: a session (or a Task WAL) on the target differs from the source's.
        UnknownSession: the source has no such session.
        StoreError: a store cannot be opened, read or written.
    """
    src = Endpoint(source, project_dir, read_only=True)
    try:
        dst = Endpoint(target, project_dir, read_only=False, pin_project=pin_project)
        try:
            sids = list(session_ids) or [r.session_id for r in src.store.list_sessions()]
            for sid in sids:
                src.store.read_session(validate_session_id(sid))  # UnknownSession first
            present: dict[str, CopyResult] = {}
            for sid in sids:  # one session's events in memory at a time
                try:
                    same = check_landing(dst, read_image(src, sid))
                except CopyRefused as e:
                    raise CopyRefused(f"{e}; nothing was copied") from e
                if same is not None:
                    present[sid] = same
            return _copy_checked(src, dst, sids, present)
        finally:
            dst.close()
    finally:
        src.close()


def _copy_checked(
    src: Endpoint, dst: Endpoint, sids: Sequence[str], present: dict[str, CopyResult]
) -> list[CopyResult]:
    """Copy the checked ``sids`` (those in ``present`` are on the target already)."""
    results: list[CopyResult] = []
    for sid in sids:
        if sid in present:
            results.append(present[sid])
            continue
        try:
            results.append(land_image(dst, read_image(src, sid), src.store.artifacts.read))
        except (CopyRefused, StoreError) as e:
            copied = [r.session_id for r in results if r.outcome == "copied"]
            done = (
                f"; copied before it (on the target, verified): {', '.join(copied)}"
                if copied
                else "; nothing was copied"
            )
            # A refusal stays one (exit 2: a role that may not write), a failure one (1).
            again = CopyRefused if isinstance(e, Refused) else StoreError
            raise again(f"{e}{done}") from e
    return results


def _wal_records(end: Endpoint, sid: str, cwd: str) -> dict[str, list[WalRecord]]:
    wals = end.wals(cwd)
    return {name: wals.replay(sid, name, repair=False).records for name in wals.names(sid)}


class SessionImage(msgspec.Struct, frozen=True, kw_only=True):
    """One session as a copy moves it: its events in seq order and its Task WALs' lines
    (what :func:`read_image` reads from a store and :func:`land_image` writes to one; a
    session bundle, :mod:`actors.runtime.bundles.files`, carries these)."""

    session_id: str
    #: The project directory the session was recorded in (where its Task WALs live).
    cwd: str
    events: list[StoredEvent]
    wals: dict[str, list[WalRecord]]

    def artifacts(self) -> list[ArtifactCreated]:
        """The artifacts the session's own events created."""
        return [e.event for e in self.events if isinstance(e.event, ArtifactCreated)]

    def result(self, outcome: str) -> CopyResult:
        """What :func:`land_image` reports for this session."""
        return CopyResult(
            session_id=self.session_id,
            outcome=outcome,
            events=len(self.events),
            artifacts=len(self.artifacts()),
            task_wal_lines=sum(len(r) for r in self.wals.values()),
        )


def read_image(end: Endpoint, sid: str) -> SessionImage:
    """Read the session ``sid`` of ``end``: its events and its Task WALs' lines."""
    row = end.store.read_session(sid)
    events = list(end.store.iter_events(sid))
    return SessionImage(
        session_id=sid, cwd=row.cwd, events=events, wals=_wal_records(end, sid, row.cwd)
    )


def land_image(
    dst: Endpoint, image: SessionImage, read_artifact: Callable[[str], bytes]
) -> CopyResult:
    """Write ``image`` to ``dst`` exactly (``read_artifact``: the bytes of an artifact path),
    read it back and verify it; ``identical`` when ``dst`` holds it already.

    Raises:
        CopyRefused: ``dst`` holds a different session of that id, or the copy is wrong.
    """
    sid, events, wal_records = image.session_id, image.events, image.wals
    same = check_landing(dst, image)  # refuses before writing
    if same is not None:
        return same
    to_write = _wals_to_write(dst, sid, image.cwd, wal_records)
    for art in image.artifacts():
        data = read_artifact(art.path)
        rel, _, _ = dst.store.artifacts.write(sid, data, ext=art.path.rsplit(".", 1)[-1])
        if rel != art.path:  # pragma: no cover - content-addressed on both backends
            raise CopyRefused(f"artifact {art.path} of {sid} lands at {rel} on the target")
        del data  # before the next is read: one artifact in memory at a time
    _append_all(dst.store, sid, events)
    _copy_wals(dst.wals(image.cwd), sid, to_write)
    _check_copy(dst, sid, events, wal_records, image.cwd)
    if isinstance(dst.store, KeepsColdFiles) and dst.store.read_session(sid).status == "archived":
        dst.store.move_to_cold(sid)  # as `clew archive` leaves it (a home: in its cold file)
    return image.result("copied")


def check_landing(dst: Endpoint, image: SessionImage) -> CopyResult | None:
    """Return ``identical`` when ``dst`` holds ``image`` already, None when it can be
    written there; write nothing.

    Raises:
        CopyRefused: ``dst`` holds a different session of that id, or a different Task
            WAL of it.
    """
    sid = image.session_id
    if dst.store.session_exists(sid):
        same = image.events == list(dst.store.iter_events(sid))
        if same and image.wals == _wal_records(dst, sid, image.cwd):
            return image.result("identical")
        raise CopyRefused(
            f"session {sid} already exists on the target and differs from the source;"
            " it is not copied (remove it there first)"
        )
    _wals_to_write(dst, sid, image.cwd, image.wals)
    return None


def _append_all(store: EventStore, sid: str, events: Sequence[StoredEvent]) -> None:
    requests = [
        AppendRequest(
            session_id=sid,
            event=e.event,
            created_at=e.created_at,
            agent_id=e.agent_id,
            run_id=e.run_id,
        )
        for e in events
    ]
    errors = [r for r in store.append_batch(requests) if isinstance(r, ClewError)]
    if errors:
        raise CopyRefused(f"copying {sid} failed: {errors[0]} ({len(errors)} events refused)")


def _wals_to_write(
    dst: Endpoint, sid: str, cwd: str, wal_records: dict[str, list[WalRecord]]
) -> dict[str, list[WalRecord]]:
    """The WALs the target lacks; one it holds already must be the source's, line for line
    (the same project directory on one host: the files are shared)."""
    wals = dst.wals(cwd)
    elsewhere = (
        ""
        if dst.pin_project or is_postgres_url(dst.location)
        else " (--project DIR puts the copy's Task WALs in another project directory)"
    )
    extra = sorted(set(wals.names(sid)) - set(wal_records))
    if extra:
        raise CopyRefused(
            f"the target already holds a Task WAL {extra[0]} of {sid} the source does not"
            f" ({wals.location(sid, extra[0])}); it is not copied{elsewhere}"
        )
    out: dict[str, list[WalRecord]] = {}
    for name, records in wal_records.items():
        there = wals.replay(sid, name, repair=False).records
        if not there:
            out[name] = records
        elif there != records:
            raise CopyRefused(
                f"the target already holds a different Task WAL {name} of {sid}"
                f" ({wals.location(sid, name)}); it is not copied{elsewhere}"
            )
    return out


def _copy_wals(wals: TaskWals, sid: str, wal_records: dict[str, list[WalRecord]]) -> None:
    for name, records in wal_records.items():
        appender = wals.appender(sid, name, last_seq=0, clock=_RecordedClock(records))
        try:
            appender.append([r.event for r in records])
        finally:
            appender.close()


def _check_copy(
    dst: Endpoint,
    sid: str,
    events: Sequence[StoredEvent],
    wal_records: dict[str, list[WalRecord]],
    cwd: str,
) -> None:
    """Read the copy back: the same events, the same WAL lines, and it verifies."""
    problems: list[str] = []
    if list(events) != list(dst.store.iter_events(sid)):
        problems.append("its events differ from the source's")
    if wal_records != _wal_records(dst, sid, cwd):
        problems.append("its Task WALs differ from the source's")
    check = verify_projections(dst.store, sid)
    if not check.ok:
        problems.append("it does not verify: " + "; ".join(check.lines()[:3]))
    if problems:
        raise CopyRefused(f"the copy of {sid} on the target is wrong: " + ", ".join(problems))
