"""What a session is now and what it writes next: its status, derived in one place from
its runs (what ``Runtime.sessions()`` and ``clew sessions`` show), its main and
interrupted runs, and its events followed as they land (``Session.follow``).

The status is the last *main* (Brain) run's, read from the ``runs`` table, with one
exception that needs the owner lock: a run the table calls open (``running`` /
``pending``) is ``running`` while a live process owns the session and ``interrupted``
once none does (the lock, not a clock, decides: see :class:`~actors.runtime.engine.SessionLock`).

====================  ==================================================================
status                when
====================  ==================================================================
``new``               no main run yet
``running``           a run is open and a live process (this one included) owns the session
``interrupted``       a run is open and no live process owns the session: resume it
``waiting``           the last main run is parked for a person (status ``waiting``: an
                      approval or an answer, ``clew pending``)
``completed``         the last main run completed
``cancelled``         the last main run was cancelled
``failed``            the last main run failed (or was aborted)
``refused``           the last main run was refused by the input guardrail
``archived``          the session is archived (final: it only reads from now on)
====================  ==================================================================

A status this module does not know yet (a run status added later) is shown as stored.

Follow a session's committed events as they land, whichever process writes them.

Following (:func:`follow`) polls the store: each poll is one indexed range read
(``read_events(session, after_seq=last, limit=FOLLOW_BATCH)``: on SQLite
``WHERE seq > ? ORDER BY seq LIMIT ?``: a range search by ``seq``), so a poll costs
what is new, never a re-read of the session. A reader sees only committed transactions,
so every event yielded is durable, and seqs come gapless and in order. While nothing is
new it sleeps ``poll_s`` (woken early by a ``threading.Event`` stop). On PostgreSQL it
waits on ``LISTEN`` instead and wakes at the commit of the session's next batch, in
whatever process or host (``eventlog/postgres/notify.py``); ``poll_s`` bounds the wait.

It ends when ``stop`` says so, or — with ``until_idle`` — once the session has no run in
progress: no run the store calls running/pending whose owner lock a live process holds
(an interrupted run is not in progress: nothing more will land until a resume). Either
way, what was committed before it ends is yielded first.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final, Protocol

import msgspec

from actors.errors import UsageError
from actors.runtime.coord.ownership import SessionLeases, lock_file
from actors.tasks.agreement import run_wal_name
from eventlog.events import ModelRequested
from eventlog.ids import is_main_run, validate_session_id
from eventlog.locations import is_postgres_url, open_store
from eventlog.records import RunRow, SessionRow, StoredEvent
from eventlog.store import EventStore

#: Run statuses that mean "not finished": owned by a live process, or interrupted.
OPEN_RUN_STATUSES: Final = ("running", "pending")
#: Run statuses of a run parked until a person answers (the human-in-the-loop work).
WAITING_RUN_STATUSES: Final = frozenset({"waiting", "parked"})
#: Stored run statuses shown under another name.
_SHOWN_AS: Final = {"aborted": "failed"}


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One line of ``Runtime.sessions()``.

    ``runs`` counts every run of the session, workers' and reviews' included (its meaning
    since 0.1); ``main_runs`` the main (Brain) runs, one per request; ``all_runs`` is
    ``runs`` again (its name while ``runs`` counted main runs, before 0.2.0).
    ``updated_at`` is the time of the session's last event.
    """

    session_id: str
    #: The derived status (see :mod:`actors.runtime.status`).
    status: str
    created_at: str
    updated_at: str
    interrupted: bool
    runs: int
    events: int
    active_node_id: str | None
    #: True when its last main run waits for a person (``clew pending``).
    waiting: bool = False
    all_runs: int = 0
    #: The main (Brain) runs: one per request.
    main_runs: int = 0
    #: The session row's own status: ``active``, or ``archived``.
    lifecycle: str = "active"


def session_status(session_id: str, runs: Sequence[RunRow], *, owned: bool) -> str:
    """Return the status of the session whose runs are ``runs`` (creation order).

    Args:
        owned: a live process (this one included) holds the session's owner lock.
    """
    if any(r.status in OPEN_RUN_STATUSES for r in runs):
        return "running" if owned else "interrupted"
    mains = [r for r in runs if is_main_run(session_id, r.agent_id)]
    if not mains:
        return "new"
    last = mains[-1].status
    if last in WAITING_RUN_STATUSES:
        return "waiting"
    return _SHOWN_AS.get(last, last)


def owner_decides(runs: Sequence[RunRow]) -> bool:
    """True when the status of a session whose runs are ``runs`` needs the owner lock (a
    run not ended): only then is ``owned`` worth probing."""
    return any(r.status in OPEN_RUN_STATUSES for r in runs)


def session_info(
    row: SessionRow, runs: Sequence[RunRow], *, owned: bool, events: int
) -> SessionInfo:
    """Return the summary line of the session ``row`` whose runs are ``runs``."""
    sid = row.session_id
    status = session_status(sid, runs, owned=owned)
    if row.status == "archived":  # final: an archived session takes no run again
        status = "archived"
    return SessionInfo(
        session_id=sid,
        status=status,
        created_at=row.created_at,
        updated_at=row.updated_at,
        interrupted=status == "interrupted",
        runs=len(runs),
        events=events,
        active_node_id=row.active_node_id,
        waiting=status == "waiting",
        all_runs=len(runs),
        main_runs=sum(1 for r in runs if is_main_run(sid, r.agent_id)),
        lifecycle=row.status,
    )


def info(engine: Owners, row: SessionRow) -> SessionInfo:
    """Return the summary line of the session whose row is ``row``."""
    sid = row.session_id
    return session_info(
        row,
        engine.store.read_runs(sid),
        owned=engine.is_owned(sid),
        events=engine.store.count_events(sid),
    )


#: Sessions whose runs one query reads when the list is built (a page is one chunk).
_RUNS_CHUNK: Final = 500


class Owners(Protocol):
    """What telling sessions' statuses reads: the store, and who owns a session (an
    :class:`~actors.runtime.engine.Engine`, or a :class:`StatusReader`)."""

    @property
    def store(self) -> EventStore: ...

    def is_owned(self, session_id: str) -> bool: ...


class Followed(Owners, Protocol):
    """What following a session as it is written reads besides: where the store is (a
    PostgreSQL store wakes a follower at each commit)."""

    @property
    def location(self) -> str: ...


def infos(engine: Owners, rows: Sequence[SessionRow]) -> list[SessionInfo]:
    """Return the summary lines of the sessions ``rows``, in their order.

    The runs of up to :data:`_RUNS_CHUNK` sessions come from one query of the global
    ``runs`` table and their event counts from one more statement
    (``count_events_of``), and the owner lock is probed only for a session with a run
    not ended (the only status it decides), so a page of the list costs a few
    statements, not a few per session.
    """
    out: list[SessionInfo] = []
    store = engine.store
    for i in range(0, len(rows), _RUNS_CHUNK):
        chunk = rows[i : i + _RUNS_CHUNK]
        sids = [r.session_id for r in chunk]
        runs, counts = store.read_runs_of(sids), store.count_events_of(sids)
        for row in chunk:
            sid, its = row.session_id, runs[row.session_id]
            owned = owner_decides(its) and engine.is_owned(sid)
            out.append(session_info(row, its, owned=owned, events=counts[sid]))
    return out


def main_runs(engine: Owners, session_id: str) -> list[str]:
    """Return the session's main (Brain) runs in start order."""
    sid = validate_session_id(session_id)
    return [r.run_id for r in engine.store.read_runs(sid) if is_main_run(sid, r.agent_id)]


def wal_names(engine: Owners, session_id: str) -> list[str]:
    """Return the Task WAL name of each main run of the session, in run order."""
    sid = validate_session_id(session_id)
    return [run_wal_name(r, engine.store.read_run(sid, r)) for r in main_runs(engine, sid)]


def interrupted_runs(engine: Owners, session_id: str) -> list[str]:
    """Runs the store says are running/pending while no live process owns the session."""
    sid = validate_session_id(session_id)
    runs = engine.store.read_runs(sid)
    open_runs = [r.run_id for r in runs if r.status in OPEN_RUN_STATUSES]
    if not open_runs or engine.is_owned(sid):
        return []
    return open_runs


class StatusReader:
    """A home opened read-only to list its sessions and tell their status, without an
    :class:`~actors.runtime.engine.Engine`: the store and the owner probes (the lock
    files; the leases, on a PostgreSQL store), and no writer, no actors, none of what a
    run imports — so ``clew sessions`` and ``clew show`` start in a few times the
    interpreter's own start (``benchmarks/bench_cli.py``). It takes no lock, writes
    nothing, and tells a status as a read-only :class:`~actors.runtime.runtime.Runtime`
    does."""

    def __init__(self, home: Path, store: str | None = None) -> None:
        """Open the store of the home ``home`` (SQLite), or the ``postgresql://`` store
        ``store``, read-only.

        Raises:
            StoreError: there is no store, or its schema cannot be read without migrating it.
        """
        postgres = store is not None and is_postgres_url(store)
        self.home = home
        # Opened as a read-only Engine opens it (engine.py, ``_open_store``).
        #: The event store, read-only.
        self.store: EventStore = (
            open_store(store, read_only=True)
            if store is not None and postgres
            else open_store(
                home / "sessions.sqlite", artifacts_dir=home / "artifacts", read_only=True
            )
        )
        # Leases read (never taken) where a read-only Engine reads them: a PostgreSQL store's.
        self._leases = SessionLeases(home, coordinator=store if postgres else None, enabled=False)

    def __enter__(self) -> StatusReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the leases' coordinator (if one was opened) and the store."""
        self._leases.close()
        self.store.close()

    def is_owned(self, session_id: str) -> bool:
        """True when a live process holds the session's owner lock (or its lease)."""
        return lock_file(self.home, session_id).held_elsewhere() or self._leases.held_elsewhere(
            session_id
        )

    def sessions(self) -> list[SessionInfo]:
        """Every session with its status, as ``Runtime.sessions()`` returns them."""
        return infos(self, self.store.list_sessions())

    def infos(self, rows: Sequence[SessionRow]) -> list[SessionInfo]:
        """The summary lines of the sessions ``rows``, in their order (:func:`infos`)."""
        return infos(self, rows)

    def main_runs(self, session_id: str) -> list[str]:
        """The session's main (Brain) runs in start order (:func:`main_runs`)."""
        return main_runs(self, session_id)


# --- following ----------------------------------------------------------------------------

#: What may stop a follower: an event to set, or a function that says when.
Stop = threading.Event | Callable[[], bool]
#: Most events read by one query: a long backlog streams in bounded memory.
FOLLOW_BATCH = 1000


def run_in_progress(engine: Owners, session_id: str) -> bool:
    """True when a run of the session is open in the store and its owner is alive."""
    runs = engine.store.read_runs(session_id)
    # The store first: the owner-lock probe only when a run is open (a live owner then
    # holds the lock, so the probe never takes it from under a starting run).
    return any(r.status in OPEN_RUN_STATUSES for r in runs) and engine.is_owned(session_id)


def follow(
    engine: Followed,
    session_id: str,
    since_seq: int = 0,
    *,
    poll_s: float = 0.2,
    stop: Stop | None = None,
    until_idle: bool = False,
) -> Iterator[StoredEvent]:
    """Return an iterator over the session's events with ``seq > since_seq``, as they land.

    The session is checked now, not at the first ``next()``.

    Raises:
        InvalidSessionId, UnknownSession: a bad or unknown session id.
        UsageError: ``since_seq`` is negative or not a whole number, ``poll_s`` not > 0.
    """
    sid = validate_session_id(session_id)
    if isinstance(since_seq, bool) or not isinstance(since_seq, int) or since_seq < 0:
        raise UsageError(f"since_seq must be a whole number >= 0, not {since_seq!r}")
    if not poll_s > 0:
        raise UsageError(f"poll_s must be > 0 seconds, not {poll_s!r}")
    engine.store.read_session(sid)
    idle = (lambda: not run_in_progress(engine, sid)) if until_idle else None
    return _poll(engine.store, sid, since_seq, poll_s, stop, idle, lambda: _waiter(engine, sid))


def _waiter(engine: Followed, sid: str) -> _Waiter | None:
    """On PostgreSQL, a ``LISTEN`` connection that wakes the follower at each commit of the
    session, whichever process or host wrote it (eventlog/postgres/notify.py)."""
    if not is_postgres_url(engine.location):
        return None
    from eventlog.postgres.notify import CommitWaiter  # noqa: PLC0415 - the optional extra

    return CommitWaiter(engine.location, sid)


class _Waiter(Protocol):
    def wait(self, after_seq: int, timeout: float) -> bool: ...

    def close(self) -> None: ...


def _stopped(stop: Stop | None) -> bool:
    if stop is None:
        return False
    if isinstance(stop, threading.Event):
        return stop.is_set()
    return bool(stop())


def _poll(
    store: EventStore,
    sid: str,
    last: int,
    poll_s: float,
    stop: Stop | None,
    idle: Callable[[], bool] | None,
    make_waiter: Callable[[], _Waiter | None] = lambda: None,
) -> Iterator[StoredEvent]:
    waiter = make_waiter()  # at the first next(): an iterator never started holds nothing
    try:
        while True:
            batch = store.read_events(sid, after_seq=last, limit=FOLLOW_BATCH)
            yield from batch
            if batch:
                last = batch[-1].seq
                if len(batch) == FOLLOW_BATCH:
                    continue  # a backlog: read on before sleeping
            if _stopped(stop) or (idle is not None and idle()):
                # Read once more: the run may have committed its last events (and ended,
                # or made ``stop`` true) between the read above and this check.
                yield from store.read_events(sid, after_seq=last)
                return
            if waiter is not None:
                waiter.wait(last, poll_s)  # woken by the commit, or polls on after poll_s
            elif isinstance(stop, threading.Event):
                stop.wait(poll_s)
            else:
                time.sleep(poll_s)
    finally:
        if waiter is not None:
            waiter.close()


# --- selecting sessions (``clew sessions --status/--error/--model/--role/--since``, ``clew
# redrive``) ---------------------------------------------------------------------------------


class Home(Protocol):
    """What selecting sessions reads of an open home (a ``Runtime``)."""

    store: EventStore

    def sessions(self) -> list[SessionInfo]: ...


class SessionFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which sessions to select; every field None matches every session."""

    status: str | None = None
    #: A regular expression searched in ``<type>: <message>`` of the last run's failure.
    error: str | None = None
    model: str | None = None
    role: str | None = None
    #: ISO-8601: sessions whose last event is at or after it.
    since: str | None = None

    def selects_all(self) -> bool:
        """True when no field is set."""
        return all(v is None for v in msgspec.structs.astuple(self))


def last_main_run(rt: Home, sid: str) -> RunRow | None:
    """The session's last main run (None: it has none)."""
    mains = [r for r in rt.store.read_runs(sid) if is_main_run(sid, r.agent_id)]
    return mains[-1] if mains else None


def failure_text(run: RunRow | None) -> str:
    """The failure of a run as ``<type>: <message>`` ('' when it did not fail)."""
    if run is None or run.status != "failed" or not run.error:
        return ""
    return f"{run.error.get('type', '')}: {run.error.get('message', '')}"


def _matches(rt: Home, info: SessionInfo, f: SessionFilter) -> bool:
    if f.status is not None and info.status != f.status:
        return False
    if f.since is not None and info.updated_at < f.since:
        return False
    last = last_main_run(rt, info.session_id)
    if f.error is not None and not re.search(f.error, failure_text(last)):
        return False
    if f.model is None and f.role is None:
        return True
    if last is None:
        return False
    requests = [
        e.event
        for e in rt.store.read_runs_under(info.session_id, last.run_id)
        if isinstance(e.event, ModelRequested)
    ]
    return (f.model is None or any(f.model in r.model for r in requests)) and (
        f.role is None or any(r.role == f.role for r in requests)
    )


def select_sessions(
    rt: Home, f: SessionFilter, among: Sequence[SessionInfo] | None = None
) -> list[SessionInfo]:
    """The sessions of the home (or of ``among``, a page of them) ``f`` selects, oldest first.

    Raises:
        UsageError: ``f.error`` is not a regular expression.
    """
    if f.error is not None:
        try:
            re.compile(f.error)
        except re.error as e:
            raise UsageError(f"--error {f.error!r} is not a regular expression: {e}") from e
    infos = rt.sessions() if among is None else among
    return [info for info in infos if _matches(rt, info, f)]
