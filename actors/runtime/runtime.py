"""The ``Runtime`` facade: open a home, create sessions, run, replay, resume, verify.

Environment variables are read here, once (``Runtime.from_env``), never deeper. The
operations live in their own modules (``runs``, ``replayer``, ``resume``, ``verify``)
as functions over the home's :class:`~actors.runtime.engine.Engine`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from actors.errors import Unencodable, UsageError
from actors.models.chains import ModelArg
from actors.models.storable import check_storable
from actors.models.tools import Tool
from actors.observe.tracing import Tracing
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Team
from actors.recording.inputs import RunSettings
from actors.replay.report import ReplayReport
from actors.runtime import cancelling, deleting, replayer, retry, runs, switching
from actors.runtime import follow as following
from actors.runtime import resume as resuming
from actors.runtime import verify as verifying
from actors.runtime.archive import archive_session
from actors.runtime.cancelling import CancelReport
from actors.runtime.coord.protocol import DEFAULT_LEASE_TTL_S, Coordinator
from actors.runtime.engine import Engine
from actors.runtime.faults import FaultPlan
from actors.runtime.handle import RunHandle
from actors.runtime.history import RuntimeHistory
from actors.runtime.hitl import RuntimeWaits
from actors.runtime.locks import SessionLock
from actors.runtime.resume import ResumePlan
from actors.runtime.serve_api import RuntimeServe
from actors.runtime.session import Session
from actors.runtime.status import SessionInfo, session_info
from actors.runtime.verify import VerifyReport
from actors.tasks.manager import TaskManagerProxy
from eventlog.clock import Clock
from eventlog.events import SessionCreated
from eventlog.ids import IdSource, brain_agent_id, validate_session_id
from eventlog.locations import is_postgres_url
from eventlog.records import AppendRequest, SessionRow, StoredEvent
from eventlog.sqlite import Durability
from eventlog.store import EventStore, SessionDeletion
from eventlog.wals import TaskWals
from eventlog.writer import Writer

#: Fresh session ids to try before giving up: 20 collisions of a 16-bit suffix in one
#: second do not happen by chance.
_SESSION_ID_TRIES = 20


def home_from_env(env: Mapping[str, str], home: str | os.PathLike[str] | None = None) -> Path:
    """Return ``home`` if given, else ``$CLEW_HOME``, else ``~/.clew``."""
    return Path(home or env.get("CLEW_HOME") or "~/.clew").expanduser()


class Runtime(RuntimeWaits, RuntimeServe, RuntimeHistory):
    """An open clew home: the store, the writer, task managers, and the session API."""

    def __init__(  # long: one docstring entry per argument, then one attribute each
        self,
        home: Path | str | None = None,
        project_dir: Path | str | None = None,
        *,
        durability: Durability = "normal",
        clock: Clock | None = None,
        ids: IdSource | None = None,
        settings: RunSettings | None = None,
        fault: FaultPlan | None = None,
        environ: Mapping[str, str] | None = None,
        read_only: bool = False,
        tracing: Tracing = None,
        store: str | None = None,
        coordination: Coordinator | str | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL_S,
    ) -> None:
        """Open (creating if needed) the clew home ``home``, or the store at ``store``.

        Args:
            project_dir: where Task WALs live (``<project>/.clew/tasks``); default: cwd.
            durability: ``normal`` survives a process crash, ``full`` a power loss.
            fault: crash-test seam (see :class:`FaultPlan`).
            environ: where a role's model spec (``openai:…``) finds its provider keys;
                default: the process environment.
            read_only: open an existing home for reading only (it works on a read-only
                mount): no writer is started, nothing is created or migrated, and every
                write — a session, a run, a resume, a switch, a lock — raises
                ``ReadOnlyStore``. Reading, ``replay`` and ``verify`` work.
            tracing: OpenTelemetry spans of every run (docs/runtime.md): None when the
                app has set a tracer provider; True, False, or a ``TracerProvider``.
            store: a ``postgresql://`` URL (docs/postgres.md): the events, artifacts and
                Task WALs live in that database; ``home`` (default ``$CLEW_HOME``, else
                ``~/.clew``) then keeps only this host's owner locks and control files.
                A path here is a home, as if given as ``home``.
            coordination: where session leases and the run queue live (docs/serve.md):
                a ``postgresql://`` URL, a coordinator, or None — the home's
                ``coord.sqlite`` once ``submit`` or ``serve`` created it.
            lease_ttl: seconds a session lease lives without renewal.

        Raises:
            StoreError: the home cannot be opened (read-only: there is no store in it,
                or its schema cannot be read without migrating it).
            UsageError: ``tracing`` is asked for without OpenTelemetry installed.
        """
        if store is not None and not is_postgres_url(store):
            home, store = home or store, None
        self._engine = engine = Engine(
            home_from_env(os.environ, home),
            Path(project_dir) if project_dir is not None else Path.cwd(),
            durability=durability,
            clock=clock,
            ids=ids,
            settings=settings,
            fault=fault,
            environ=environ,
            read_only=read_only,
            tracing=tracing,
            store=store,
            coordination=coordination,
            lease_ttl=lease_ttl,
        )
        #: The clew home directory.
        self.home: Path = engine.home
        #: Where the Task WALs live (``<project>/.clew/tasks``).
        self.project_dir: Path = engine.project_dir
        #: The event store: read it freely; write through :attr:`writer` only.
        self.store: EventStore = engine.store
        #: The single writer of the store.
        self.writer: Writer = engine.writer
        #: The clock every recorded timestamp comes from.
        self.clock: Clock = engine.clock
        #: The source of fresh session ids.
        self.ids: IdSource = engine.ids
        #: The default settings of a run.
        self.settings: RunSettings = engine.settings

    @property
    def tracing(self) -> bool:
        """True when every run's spans go to OpenTelemetry (``Runtime(tracing=…)``)."""
        return self._engine.tracing

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        home: str | None = None,
        project_dir: str | None = None,
        **kwargs: Any,
    ) -> Runtime:
        """Open the home named by ``home`` / ``$CLEW_HOME`` / ``~/.clew`` (the store
        ``$CLEW_STORE`` when set); read fault env vars.

        Raises:
            UsageError: a fault variable is not a positive whole number.
        """
        env = os.environ if env is None else env
        fault = FaultPlan.from_env(env)
        kwargs.setdefault("environ", env)
        if env.get("CLEW_STORE"):
            kwargs.setdefault("store", env["CLEW_STORE"])
        return cls(home_from_env(env, home), project_dir, fault=fault, **kwargs)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every actor, flush and close the writer, release session locks."""
        self._engine.close()

    # --- sessions ------------------------------------------------------------------------

    def new_session(
        self, *, cwd: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Session:
        """Create a session (``session_created``) and return it.

        Args:
            cwd: the session's project directory (default: this runtime's
                ``project_dir``); its Task WALs live there (see :meth:`session_dir`).

        Raises:
            UsageError: ``metadata`` or ``cwd`` cannot be stored (nothing is written).
        """
        cwd = str(Path(cwd).absolute()) if cwd else str(self.project_dir)
        try:
            check_storable({"cwd": cwd, "metadata": metadata or {}}, "the session's metadata")
        except Unencodable as e:
            raise UsageError(str(e)) from None
        self._engine.refuse_if_read_only("creating a session")
        now = self.clock.now()
        for _ in range(_SESSION_ID_TRIES):
            sid = self.ids.new_session_id(now)
            if not self.store.session_exists(sid):
                break
        else:  # pragma: no cover - see _SESSION_ID_TRIES
            raise UsageError("could not allocate a fresh session id")
        self.writer.append(
            AppendRequest(
                session_id=sid,
                event=SessionCreated(
                    session_id=sid,
                    cwd=cwd,
                    root_agent_id=brain_agent_id(sid),
                    metadata=metadata or {},
                ),
                created_at=now,
            )
        )
        return Session(self, sid)

    def session(self, session_id: str) -> Session:
        """Return an existing session (validated; ``UnknownSession`` if absent)."""
        sid = validate_session_id(session_id)
        self.store.read_session(sid)
        return Session(self, sid)

    def sessions(self) -> list[SessionInfo]:
        """Return every session with its status, run/event counts and interruption flag."""
        return [self.info(row) for row in self.store.list_sessions()]

    def info(self, row: SessionRow) -> SessionInfo:
        """Return the summary line of the session whose row is ``row`` (its status derived
        by :func:`actors.runtime.status.session_status`)."""
        sid = row.session_id
        return session_info(
            row,
            self.store.read_runs(sid),
            owned=self.is_owned(sid),
            events=self.store.count_events(sid),
        )

    def lock(self, session_id: str) -> SessionLock:
        """Take the session's owner lock (``SessionBusy`` if another process holds it)."""
        return self._engine.lock(session_id)

    def unlock(self, session_id: str) -> None:
        """Release the session's owner lock if this runtime holds it."""
        self._engine.unlock(session_id)

    def is_owned(self, session_id: str) -> bool:
        """True when a live process (this one included) holds the session's owner lock."""
        return self._engine.is_owned(session_id)

    def main_runs(self, session_id: str) -> list[str]:
        """Return the session's main (Brain) runs in start order."""
        return self._engine.main_runs(session_id)

    def wal_names(self, session_id: str) -> list[str]:
        """Return the Task WAL name of each main run, in run order (``<name>.wal.jsonl``
        under ``session_dir(id)/.clew/tasks/<id>/``)."""
        return self._engine.wal_names(session_id)

    def interrupted_runs(self, session_id: str) -> list[str]:
        """Runs the store says are running/pending while no live process owns the session."""
        return self._engine.interrupted_runs(session_id)

    def switch_node(self, session_id: str, node_id: str) -> str | None:
        """Move the session's active node to ``node_id``; return the previous one.

        The next run's user message starts a new branch there (seed 004: a new branch
        starts only at a user message), so the node must be one of the session's own
        conversation where a user message may follow. Nothing is deleted.

        Raises:
            UnknownNode: no such node in the session.
            BranchRefused: a worker's node, or an assistant turn waiting for tool results.
            ArchivedSession: the session is archived.
            SessionBusy: a live process owns the session.
        """
        return switching.switch_node(self._engine, session_id, node_id)

    def archive(self, session_id: str, reason: str = "") -> bool:
        """Archive the session (``session_archived``); see :meth:`Session.archive`."""
        return archive_session(self._engine, session_id, reason)

    def delete_session(self, session_id: str, force: bool = False) -> SessionDeletion:
        """Delete the session for good (:mod:`actors.runtime.deleting`, docs/runtime.md).

        Raises:
            DeleteRefused: it runs, waits or has forks, and not ``force``.
            DeletedSession, UnknownSession: deleted already, or no such session.
        """
        return deleting.delete_session(self._engine, session_id, force=force)

    def session_dir(self, session_id: str) -> Path:
        """Return the session's project directory (where its Task WALs live).

        The directory the session was created in, whatever this runtime's
        ``project_dir``: ``run``, ``resume``, ``verify`` and ``clew tasks`` all use it.

        Raises:
            UnknownSession: no such session.
            ProjectDirGone: that directory no longer exists.
        """
        return self._engine.session_dir(session_id)

    def task_wals(self, session_id: str) -> TaskWals:
        """Where the session's Task WALs live: the PostgreSQL store's ``task_wal`` table,
        or the files under :meth:`session_dir` (``ProjectDirGone`` if it is gone)."""
        return self._engine.task_wals(session_id)

    def task_manager(self, session_id: str) -> TaskManagerProxy:
        """Return the session's task manager actor (one per session, started lazily)."""
        return self._engine.task_manager(session_id)

    def follow(
        self,
        session_id: str,
        since_seq: int = 0,
        *,
        poll_s: float = 0.2,
        stop: following.Stop | None = None,
        until_idle: bool = False,
    ) -> Iterator[StoredEvent]:
        """Yield the session's committed events with ``seq > since_seq`` as they land,
        whichever process writes them (this one, or another on the same home).

        Each poll is one indexed range read; while nothing is new it sleeps ``poll_s``.
        It ends once ``stop`` (a ``threading.Event``, or a function) says so, or with
        ``until_idle`` once the session has no run in progress — after yielding what was
        committed by then. Without either it follows until the caller stops iterating.

        Raises:
            InvalidSessionId, UnknownSession: at the call, not at the first event.
            UsageError: ``since_seq`` < 0 or ``poll_s`` <= 0.
        """
        return following.follow(
            self._engine, session_id, since_seq, poll_s=poll_s, stop=stop, until_idle=until_idle
        )

    # --- replay, resume, verify ------------------------------------------------------------

    def replay(
        self,
        session_id: str,
        *,
        model: ModelArg | None = None,
        tools: Sequence[Tool] | None = None,
        progress: Callable[[int, int], None] | None = None,
        team: Team | None = None,
        live_tools: bool = False,
    ) -> ReplayReport:
        """Re-execute every recorded main run of the session against its recording.

        Nothing is written to the recorded session: model replies and tool results
        come from the recording, the Task WAL is rebuilt in a scratch directory
        that is thrown away. ``model``/``tools``/``team`` default to stand-ins with the
        recorded ones (pass today's to check they still match). ``live_tools``: run the
        idempotent ``tools`` again and compare their outputs (docs/replay-and-recovery.md).
        """
        return replayer.replay_session(
            self._engine, session_id, model=model, tools=tools, team=team, progress=progress,
            live_tools=live_tools,
        )  # fmt: skip

    def resume_ready(self, session_id: str) -> ResumePlan:
        """Do everything a resume needs before re-executing: check, read, replay the WAL.

        Raises:
            NothingToResume: no interrupted run.
            SessionBusy: a live process owns the session.
            ReadOnlyStore: the runtime was opened read-only.
        """
        self._engine.refuse_if_read_only("resuming a session")
        return resuming.resume_ready(self._engine, session_id)

    def resume(
        self,
        session_id: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        plan: ResumePlan | None = None,
        team: Team | None = None,
        from_divergence: bool = False,
    ) -> RunOutcome:
        """Finish the session's interrupted main run: re-execute it to the end of its log,
        then go on live (a recorded model reply is never requested again).

        ``team``: the run's team (without it the recorded team is rebuilt over ``tools``;
        a team with typed output must be given). ``from_divergence``: when today's code
        diverges from the recording, keep the recorded prefix up to that point, record
        ``resumed_past_divergence`` there and go on live (else the resume is refused).

        Raises:
            NothingToResume: no interrupted run.
            SessionBusy: a live process owns the session.
            ReplayDivergence: today's code does not reproduce the recording.
        """
        plan = plan or self.resume_ready(session_id)
        return resuming.resume(
            self._engine, plan, model=model, tools=tools, settings=settings, team=team,
            from_divergence=from_divergence,
        )  # fmt: skip

    def verify(
        self,
        session_id: str | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> VerifyReport:
        """Verify one session, or every session of the home when ``session_id`` is None.

        Rebuilds each session's projections from its events and compares them with the
        stored rows, and replays every Task WAL of the session (read-only).

        Raises:
            InvalidSessionId, UnknownSession: ``session_id`` is given and bad or unknown.
        """
        return verifying.verify(self._engine, session_id, progress=progress)

    def retry(
        self,
        session_id: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Retry the session's failed last run; see :meth:`Session.retry`."""
        return retry.retry_session(
            self._engine, session_id, model=model, tools=tools, settings=settings, team=team
        )

    def run(
        self,
        session_id: str,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Run one main run of ``session_id``; see :meth:`Session.run`."""
        prepared = self._prepare(session_id, prompt, model, tools, settings, team)
        return RunHandle(prepared, watch=False).result()

    def start(
        self,
        session_id: str,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
        watch: bool = True,
    ) -> RunHandle:
        """Start one main run of ``session_id`` and return at once; see :meth:`Session.start`.
        ``watch=False``: no ``stream()`` (what ``run`` and ``arun`` use)."""
        prepared = self._prepare(session_id, prompt, model, tools, settings, team)
        return RunHandle(prepared, watch=watch)

    def _prepare(
        self,
        session_id: str,
        prompt: str,
        model: ModelArg,
        tools: Sequence[Tool],
        settings: RunSettings | None,
        team: Team | None,
    ) -> runs.PreparedRun:
        self._engine.refuse_if_read_only("running a session")
        return runs.prepare_run(
            self._engine, session_id, prompt, model=model, tools=tools, settings=settings, team=team
        )

    # --- fork and rerun (docs/replay-and-recovery.md#fork-rerun-and-diff) -----------------

    def cancel(self, session_id: str, reason: str = "cancelled") -> CancelReport:
        """Cancel the session's run in progress — in this process, in the process that
        owns the session (it notices within a second), or left interrupted by a crash
        (then recorded as cancelled at once, without asking any model).

        Raises:
            InvalidSessionId, UnknownSession: bad or unknown session.
            NothingToCancel: no run of the session is in progress or interrupted.
            ReadOnlyStore: the runtime was opened read-only.
        """
        return cancelling.cancel_session(self._engine, session_id, reason)
