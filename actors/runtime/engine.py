"""The open parts of a clew home that every runtime operation uses, and who owns a session.

An :class:`Engine` owns the store, the single writer, the session owner locks, the
task manager of each session, and the seams (clock, ids, faults). The operations —
starting, recovering, branching, upkeep, serving — are functions over an engine in
their own modules; :class:`~actors.runtime.session.Session` applies them to one session
and :class:`~actors.runtime.runtime.Runtime` opens the home.

Session ownership is an ``flock`` on ``<home>/locks/<session_id>.lock``
(:class:`~actors.runtime.coord.ownership.SessionLock`).
Why a lock file and not an owner id + heartbeat: the kernel drops an ``flock`` the
instant its process dies (``kill -9``, OOM, power loss included), so "interrupted" needs
no clock, no timeout and no guess about a slow process. A run the store says is
``running`` while nobody holds the lock is interrupted. The ``locks/`` directory is
created 0700 and a lock file 0600, whatever the umask.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from actors.errors import ProjectDirGone, SessionBusy
from actors.observe.logs import RunLogs
from actors.observe.tracing import Tracing, trace_commits, tracer_for
from actors.recording.inputs import RunSettings
from actors.runtime.coord.ownership import SessionLeases, SessionLock, lock_file
from actors.runtime.coord.protocol import DEFAULT_LEASE_TTL_S, Coordinator
from actors.runtime.faults import FaultPlan
from actors.runtime.status import OPEN_RUN_STATUSES  # noqa: F401 - its 0.2 path (docs/events.md)
from actors.tasks.manager import TaskManagerProxy, start_task_manager, stop_task_manager
from eventlog.clock import Clock, SystemClock
from eventlog.errors import ReadOnlyStore, StoreError
from eventlog.ids import DerivedIds, IdSource, validate_session_id
from eventlog.locations import is_postgres_url, open_store, store_name
from eventlog.sqlite import Durability, SQLiteStore
from eventlog.store import EventStore
from eventlog.taskwal import wal_dir
from eventlog.wals import FileWals, TaskWals
from eventlog.writer import Writer

if TYPE_CHECKING:
    # What a run is made of; importing it when a run starts keeps opening a home (the
    # CLI's read commands: tests/actors/cli/test_startup_imports.py) free of the orchestration.
    from actors.models.protocol import Model
    from actors.models.tools import ToolRegistry
    from actors.orchestration.env import SessionEnv
    from actors.orchestration.session_memo import SessionMemo

#: How long closing an engine waits for each run in progress to record its cancellation.
CLOSE_WAIT_S = 10.0


class _RunInProgress(Protocol):
    session_id: str
    run_id: str

    def stop(self, reason: str, wait: float) -> None: ...


#: Sessions whose runs' memo (context, hashers) an engine keeps: a few hundred KB each
#: at 800 messages (the messages are the store's kept path's, shared).
MEMO_SESSIONS = 8

#: Engines not closed yet. Every actor runs on a daemon thread, so an engine its owner
#: never closes cannot keep the interpreter alive; at exit it is closed here, so what
#: its writer holds is committed and its locks are released.
_OPEN: set[Engine] = set()
_OPEN_LOCK = threading.Lock()


@atexit.register
def _close_open_engines() -> None:
    with _OPEN_LOCK:
        engines = list(_OPEN)
    for engine in engines:
        engine.close()


def runs_in_progress() -> bool:
    """True when an open engine of this process has a main run in progress."""
    with _OPEN_LOCK:
        return any(engine.runs for engine in _OPEN)


class Engine:
    """Store, writer, locks, task managers and seams of one open clew home."""

    def __init__(  # long: one open clew home's every part, each with why it is there
        self,
        home: Path,
        project_dir: Path,
        *,
        durability: Durability,
        clock: Clock | None,
        ids: IdSource | None,
        settings: RunSettings | None,
        fault: FaultPlan | None,
        environ: Mapping[str, str] | None = None,
        read_only: bool = False,
        tracing: Tracing = None,
        coordination: Coordinator | str | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL_S,
        store: str | None = None,
    ) -> None:
        # First: refusing tracing (no OpenTelemetry) must leave nothing open behind it.
        tracer = None if read_only else tracer_for(tracing)
        self.home = home
        #: Where a role's model spec (``openai:…``) finds its keys; read at the edge, once.
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        # Absolute: it is recorded in each new session (session_created.cwd) and used
        # by later processes, whatever their working directory.
        self.project_dir = project_dir.absolute()
        self.read_only = read_only
        if not read_only:
            # Private whatever the umask: the home holds every prompt and tool output.
            self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        #: Where the store lives: a ``postgresql://`` URL, or the home (SQLite).
        self.location: str = store if store is not None else str(self.home)
        self.store: EventStore
        #: The Task WALs of a PostgreSQL store (its ``task_wal`` table); None: files.
        self.table_wals: TaskWals | None
        fault = fault or FaultPlan()
        self.store, self.table_wals = _open_store(
            home, store, durability, read_only=read_only, fault_hook=fault.store_hook()
        )
        self.clock: Clock = clock or SystemClock()
        self.ids: IdSource = ids or DerivedIds()
        self.settings = settings or RunSettings()
        # One hook for the engine's lifetime: its count spans every run.
        self._before_tool = fault.before_tool_hook()
        self.writer = Writer(self.store, after_commit=fault.commit_hook(), read_only=read_only)
        #: Runs commit their events in groups, at most one commit before each side effect
        #: (docs/replay-and-recovery.md); False commits each event on its own (the log is
        #: the same: benchmarks and tests compare the two).
        self.group_commits = True
        # The run digest's log lines, from commits; nothing subscribed when info is off.
        self._run_logs = None if read_only else RunLogs.attach(self.writer)
        # Spans of every run committed; with tracing off nothing is subscribed.
        self._untrace = trace_commits(self.writer, tracer) if tracer is not None else None
        self.tracing = tracer is not None
        self._task_managers: dict[str, TaskManagerProxy] = {}
        self._locks: dict[str, SessionLock] = {}
        if coordination is None and store is not None and is_postgres_url(store):
            # Homes sharing one database share nothing else: their lock files exclude
            # nobody across homes, so the store's own database holds the session leases
            # (read-only runtimes included: they read them to tell running from
            # interrupted). docs/serve.md, "Leases and the lock files".
            coordination = store
        self.leases = SessionLeases(
            home, coordinator=coordination, ttl=lease_ttl, enabled=not read_only
        )
        #: The main runs this engine has in progress (their ``RunHandle``).
        self.runs: set[_RunInProgress] = set()
        #: The application's hooks every run of this engine calls (``Runtime.hooks``).
        self.hooks: Any = None
        #: Sessions with a run executing in this engine, on some thread (:meth:`live_run`).
        self._live: set[str] = set()
        self._live_lock = threading.Lock()
        #: What recent sessions' runs keep between runs (:meth:`memo`), newest last.
        self._memos: OrderedDict[str, SessionMemo] = OrderedDict()
        with _OPEN_LOCK:
            _OPEN.add(self)

    def close(self) -> None:
        """Stop every actor, flush and close the writer, release session locks."""
        with _OPEN_LOCK:
            _OPEN.discard(self)
        for run in list(self.runs):
            # Recorded as cancelled rather than cut off by the writer stopping under it.
            run.stop("the runtime was closed", CLOSE_WAIT_S)
        for tm in self._task_managers.values():
            stop_task_manager(tm)
        self._task_managers.clear()
        self.writer.stop()
        if self._run_logs is not None:
            self._run_logs.close()
        if self._untrace is not None:  # after the last commit: ends what is still open
            self._untrace()
            self._untrace = None
        for lock in self._locks.values():
            lock.release()
        self._locks.clear()
        close_wals = getattr(self.table_wals, "close", None)
        if close_wals is not None:
            close_wals()
        self.leases.close()
        self.store.close()

    # --- ownership ------------------------------------------------------------------------

    def _lock_file(self, session_id: str) -> SessionLock:
        return lock_file(self.home, session_id)

    def refuse_if_read_only(self, what: str) -> None:
        """Raise ``ReadOnlyStore`` naming ``what`` and the store (the home, or the
        PostgreSQL URL without its password) when it was opened read-only."""
        if self.read_only:
            where = store_name(self.location)
            raise ReadOnlyStore(f"{where} is open read-only: {what} refused")

    def own(self, session_id: str) -> SessionLock:
        """Take the session's owner lock and its lease (``SessionBusy`` if another process
        holds either)."""
        self.refuse_if_read_only(f"taking the owner lock of {session_id}")
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._lock_file(session_id)
            try:
                acquired = lock.acquire()
            except OSError as e:
                raise StoreError(
                    f"cannot take the owner lock of {session_id}: {e.strerror or e}"
                ) from e
            if not acquired:
                raise SessionBusy(f"session {session_id} is in use by another process")
            self._lease(session_id, lock)
            self._locks[session_id] = lock
        return lock

    def _lease(self, session_id: str, lock: SessionLock) -> None:
        """Take the session's lease beside its lock; on failure drop the lock again."""
        leased = False
        try:
            leased = self.leases.acquire(session_id)
        finally:
            if not leased:
                lock.release()
        if not leased:
            raise SessionBusy(f"session {session_id} is leased by another clew process")

    def release(self, session_id: str) -> None:
        """Release the session's owner lock and lease if this engine holds them, and stop
        its task manager (a process serving run after run keeps no thread, file or
        connection per session it ever ran; the next run starts one again)."""
        tm = self._task_managers.pop(session_id, None)
        if tm is not None:
            stop_task_manager(tm)
        lock = self._locks.pop(session_id, None)
        if lock is not None:
            self.leases.release(session_id)
            lock.release()

    def claim_run(self, session_id: str) -> None:
        """Mark a run of the session as executing in this engine until :meth:`release_run`.

        The owner lock is per process, so a second thread would take it again and find
        the first thread's run open: without this mark it would call a busy session
        interrupted (and its ``release`` would drop the first thread's lock).

        Raises:
            SessionBusy: another thread of this process is running the session.
        """
        with self._live_lock:
            if session_id in self._live:
                raise SessionBusy(
                    f"session {session_id} is busy: another thread of this process is running it"
                )
            self._live.add(session_id)

    def release_run(self, session_id: str) -> None:
        """End the mark :meth:`claim_run` set."""
        with self._live_lock:
            self._live.discard(session_id)

    @contextmanager
    def live_run(self, session_id: str) -> Iterator[None]:
        """:meth:`claim_run` for the block's duration (``SessionBusy`` if already claimed)."""
        self.claim_run(session_id)
        try:
            yield
        finally:
            self.release_run(session_id)

    def holds(self, session_id: str) -> bool:
        """True when this engine holds the session's owner lock."""
        return session_id in self._locks

    def owned_in_this_home(self, session_id: str) -> bool:
        """True when this engine, or another process of this home, holds the session's lock.

        A session owned only by a lease is run from another home (or host): a request
        left in this home's ``control/`` would never reach its owner.
        """
        return self.holds(session_id) or self._lock_file(session_id).held_elsewhere()

    def is_owned(self, session_id: str) -> bool:
        """True when a live process (this one included) holds the session's owner lock."""
        return (
            self.holds(session_id)
            or self._lock_file(session_id).held_elsewhere()
            or self.leases.held_elsewhere(session_id)
        )

    def task_manager(self, session_id: str) -> TaskManagerProxy:
        """Return the session's task manager actor (one per session, started lazily),
        serving the Task WALs of the session's own project directory.

        Raises:
            ProjectDirGone: the session's project directory no longer exists.
        """
        tm = self._task_managers.get(session_id)
        if tm is None:
            self.refuse_if_read_only(f"starting the task manager of {session_id}")
            tm = start_task_manager(
                session_dir(self, session_id),
                session_id,
                clock=self.clock,
                wals=self.table_wals,
            )
            self._task_managers[session_id] = tm
        return tm

    def memo(self, session_id: str) -> SessionMemo:
        """Return what ``session_id``'s runs keep between runs (the last
        :data:`MEMO_SESSIONS` sessions run are kept)."""
        from actors.orchestration.session_memo import SessionMemo  # noqa: PLC0415 - a run's

        with self._live_lock:
            memo = self._memos.get(session_id)
            if memo is None:
                memo = self._memos[session_id] = SessionMemo()
            self._memos.move_to_end(session_id)
            while len(self._memos) > MEMO_SESSIONS:
                self._memos.popitem(last=False)
            return memo

    def env(
        self,
        session_id: str,
        models: dict[str, list[Model]],
        tools: ToolRegistry,
        settings: RunSettings,
        **kw: Any,
    ) -> SessionEnv:
        """Return the environment of a live (or resuming) run of ``session_id``."""
        from actors.orchestration.env import SessionEnv  # noqa: PLC0415 - only a run needs it

        return SessionEnv(
            session_id=session_id,
            store=self.store,
            writer=self.writer,
            clock=self.clock,
            models=models,
            tools=tools,
            project_dir=session_dir(self, session_id),
            settings=settings,
            before_tool=self._before_tool,
            artifact_threshold=self.store.artifact_threshold,
            hooks=kw.pop("hooks", self.hooks),
            task_wals=self.table_wals,
            group_commits=self.group_commits,
            memo=self.memo(session_id),
            **kw,
        )


def session_dir(engine: Engine, session_id: str) -> Path:
    """Return the session's project directory: where its Task WALs live.

    The engine's ``project_dir`` if it holds the session's Task WALs
    (``.clew/tasks/<session_id>/``: the project was copied or moved with them);
    else the directory the session was created in (``session_created.cwd``), so a
    resume or ``clew tasks`` from another working directory reads and writes the
    same WALs instead of starting new ones there. A relative recorded path (an older
    clew recorded ``--project`` as typed) cannot be located: the engine's
    ``project_dir`` is used.

    Raises:
        UnknownSession: no such session.
        ProjectDirGone: the recorded directory no longer exists (and the engine's
            holds no Task WAL of the session).
    """
    sid = validate_session_id(session_id)
    recorded = Path(engine.store.read_session(sid).cwd)
    own = engine.project_dir
    if recorded == own or not recorded.is_absolute() or _is_dir(wal_dir(own, sid), False):
        return own  # (created on the first Task WAL line if it does not exist yet)
    if engine.table_wals is not None and not _is_dir(recorded, True):
        return own  # the WALs are in the database: another host resumes here
    if not _is_dir(recorded, True):
        raise ProjectDirGone(
            f"session {sid} belongs to the project directory {recorded}, which no longer"
            " exists (its Task WALs live there): restore it, or work from a project"
            f" directory holding .clew/tasks/{sid}/"
        )
    return recorded


def _is_dir(path: Path, unreadable: bool) -> bool:
    """Return whether ``path`` is a directory; ``unreadable`` when it cannot be looked at
    (a private directory above it): the WALs then read as unavailable, with the reason,
    instead of a PermissionError out of every command that reads them."""
    try:
        return path.is_dir()
    except OSError:
        return unreadable


def task_wals(engine: Engine, session_id: str) -> TaskWals:
    """Where the session's Task WALs live: the store's table, or the files of its project
    directory (:func:`session_dir`)."""
    if engine.table_wals is not None:
        return engine.table_wals
    return FileWals(session_dir(engine, session_id))


def _open_store(
    home: Path,
    store: str | None,
    durability: Durability,
    *,
    read_only: bool,
    fault_hook: Callable[[str], None] | None = None,
) -> tuple[EventStore, TaskWals | None]:
    """The store of ``home`` (SQLite), or at the ``postgresql://`` URL ``store`` with the
    Task WAL table beside it. ``fault_hook``: the crash tests' seam inside SQLite's append
    transaction (:meth:`FaultPlan.store_hook`)."""
    if store is not None and is_postgres_url(store):
        return open_store(store, read_only=read_only), pg_task_wals(store)
    sqlite = SQLiteStore(
        home / "sessions.sqlite",
        artifacts_dir=home / "artifacts",
        durability=durability,
        read_only=read_only,
        fault_hook=fault_hook,
    )
    return sqlite, None


def pg_task_wals(url: str) -> TaskWals:
    """The Task WAL table of the PostgreSQL store at ``url`` (psycopg imported here only)."""
    from eventlog.postgres.taskwal import PgWals  # noqa: PLC0415 - the optional extra

    return PgWals(url)


def model_names(models: dict[str, list[Model]]) -> dict[str, list[str]]:
    """Return the model chain names by role, as a run records them."""
    return {role: [m.name for m in chain] for role, chain in models.items()}
