"""``Runtime``: an open clew home — open and close it, create and find its sessions, replay
and verify them, hooks, the run queue and the serving loop.

Environment variables are read here, once (``Runtime.from_env``), never deeper. What
acts on one session is :class:`~actors.runtime.session.Session`'s; ``Runtime`` keeps
each of those verbs as an alias taking the session id first (``rt.resume(sid, …)`` is
``Session.resume`` of that session: one line each, :class:`_PerSession`).
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from actors.errors import UsageError
from actors.observe.tracing import Tracing
from actors.recording.inputs import RunSettings
from actors.runtime import status
from actors.runtime.coord.protocol import DEFAULT_LEASE_TTL_S, Coordinator, QueuedRun, RunSpec
from actors.runtime.engine import Engine
from actors.runtime.faults import FaultPlan
from actors.runtime.session import Session
from actors.runtime.status import SessionInfo
from eventlog.clock import Clock
from eventlog.ids import IdSource, validate_session_id
from eventlog.locations import home_from_env, is_postgres_url
from eventlog.records import SessionRow
from eventlog.sqlite import Durability
from eventlog.store import EventStore
from eventlog.writer import Writer

if TYPE_CHECKING:
    # Imported where a run, a new session or the serving loop needs them: opening a home
    # to read it (``clew sessions``, ``clew show``) loads no orchestration and no provider
    # (tests/actors/cli/test_startup_imports.py).
    from actors.orchestration.hooks import Hooks
    from actors.runtime.serving import Recipes, ServeReport
    from actors.runtime.upkeep import VerifyReport
    from actors.runtime.waiting import WaitState

P = ParamSpec("P")
R = TypeVar("R")


class _PerSession(Generic[P, R]):
    """``Runtime.<verb>(session_id, …)``: the :class:`Session` method ``verb`` of that
    session — an alias with its docstring and signature (``session_id`` first, given by
    position).

    The session is not read first: the verb checks the id itself, so an alias raises
    what the verb raises (``InvalidSessionId``, ``UnknownSession``, ``DeletedSession`` …).
    """

    def __init__(self, verb: Callable[Concatenate[Session, P], R]) -> None:
        self._verb = verb
        self.__doc__ = verb.__doc__
        signature = inspect.signature(verb)
        session_id = inspect.Parameter(
            "session_id", inspect.Parameter.POSITIONAL_ONLY, annotation="str"
        )
        params = [session_id, *list(signature.parameters.values())[1:]]
        self._signature = signature.replace(parameters=params)

    @overload
    def __get__(self, runtime: None, owner: type[Runtime]) -> _PerSession[P, R]: ...

    @overload
    def __get__(
        self, runtime: Runtime, owner: type[Runtime]
    ) -> Callable[Concatenate[str, P], R]: ...

    def __get__(
        self, runtime: Runtime | None, owner: type[Runtime]
    ) -> _PerSession[P, R] | Callable[Concatenate[str, P], R]:
        if runtime is None:
            return self
        verb, engine = self._verb, runtime._engine  # noqa: SLF001 - Runtime's own alias

        @functools.wraps(verb)
        def alias(session_id: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return verb(Session(engine, session_id), *args, **kwargs)

        alias.__signature__ = self._signature  # type: ignore[attr-defined]
        return alias


class Runtime:
    """An open clew home: the store, the writer, task managers; its sessions, the queue."""

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

    @property
    def hooks(self) -> Hooks | None:
        """The application's hooks every new run and resume of this runtime calls."""
        hooks: Hooks | None = self._engine.hooks
        return hooks

    @hooks.setter
    def hooks(self, value: Hooks | None) -> None:
        self._engine.hooks = value

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

    # --- sessions -------------------------------------------------------------------------

    def new_session(
        self, *, cwd: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Session:
        """Create a session (``session_created``) and return it.

        Args:
            cwd: the session's project directory (default: this runtime's
                ``project_dir``); its Task WALs live there (see :meth:`Session.session_dir`).

        Raises:
            UsageError: ``metadata`` or ``cwd`` cannot be stored (nothing is written).
        """
        from actors.runtime.start import create_session  # noqa: PLC0415 - see the imports

        return Session(self._engine, create_session(self._engine, cwd, metadata))

    def session(self, session_id: str) -> Session:
        """Return an existing session (validated; ``UnknownSession`` if absent)."""
        sid = validate_session_id(session_id)
        self.store.read_session(sid)
        return Session(self._engine, sid)

    def sessions(self) -> list[SessionInfo]:
        """Return every session with its status, run/event counts and interruption flag."""
        return status.infos(self._engine, self.store.list_sessions())

    def infos(self, rows: Sequence[SessionRow]) -> list[SessionInfo]:
        """Return the summary lines of the sessions ``rows`` (a page of
        ``store.list_sessions_page``): a few statements a page, not a few per session."""
        return status.infos(self._engine, rows)

    def info(self, row: SessionRow) -> SessionInfo:
        """Return the summary line of the session whose row is ``row`` (its status derived
        by :func:`actors.runtime.status.session_status`)."""
        return status.info(self._engine, row)

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
        from actors.runtime import upkeep  # noqa: PLC0415 - see the imports

        return upkeep.verify(self._engine, session_id, progress=progress)

    def waiting(self, session_id: str | None = None) -> list[WaitState]:
        """Return what each waiting session waits for (one session, or every one)."""
        from actors.runtime.waiting import waiting_sessions  # noqa: PLC0415 - see the imports

        if session_id is None:
            return waiting_sessions(self._engine)
        state = Session(self._engine, session_id).waiting()
        return [state] if state is not None else []

    # --- a session's verbs, by its id: aliases of Session's -------------------------------

    run = _PerSession(Session.run)
    start = _PerSession(Session.start)
    resume_ready = _PerSession(Session.resume_ready)
    resume = _PerSession(Session.resume)
    retry = _PerSession(Session.retry)
    cancel = _PerSession(Session.cancel)
    pending = _PerSession(Session.pending)
    decide = _PerSession(Session.decide)
    answer = _PerSession(Session.answer)
    fork = _PerSession(Session.fork)
    rerun = _PerSession(Session.rerun)
    switch_node = _PerSession(Session.switch_node)
    archive = _PerSession(Session.archive)
    delete_session = _PerSession(Session.delete)
    replay = _PerSession(Session.replay)
    follow = _PerSession(Session.follow)
    main_runs = _PerSession(Session.main_runs)
    wal_names = _PerSession(Session.wal_names)
    interrupted_runs = _PerSession(Session.interrupted_runs)
    session_dir = _PerSession(Session.session_dir)
    task_wals = _PerSession(Session.task_wals)
    task_manager = _PerSession(Session.task_manager)
    lock = _PerSession(Session.lock)
    unlock = _PerSession(Session.unlock)
    is_owned = _PerSession(Session.is_owned)

    # --- the run queue and serving (docs/serve.md) ----------------------------------------

    def coordinator(self) -> Coordinator:
        """Return where this runtime's leases and run queue live (opened, or created in
        the home, on first use).

        Raises:
            ReadOnlyStore: the runtime was opened read-only.
        """
        self._engine.refuse_if_read_only("opening the run queue")
        coord = self._engine.leases.coordinator(create=True)
        assert coord is not None  # a writable runtime always has one once created
        return coord

    def submit(
        self,
        prompt: str,
        *,
        model: str,
        tools: str | None = None,
        team: str | None = None,
        session: str | None = None,
        recipes: Recipes | None = None,
    ) -> QueuedRun:
        """Enqueue a run durably for a serving process (``clew serve``); return its row.

        ``model``/``tools``/``team`` are recipe *names* the serving app registers
        (:class:`~actors.runtime.serving.Recipes`; ``demo`` and the model specs
        ``scripted:PATH``, ``openai:<model>``, ``anthropic:<model>`` are built in); they
        are recorded with the run, so whichever process resumes it builds the same. A
        name no recipe source knows is refused now (``recipes``: the app's, to check its
        names too; see :func:`~actors.runtime.serving.check_submitted`).
        ``session``: run in that session (after the runs queued before it); None: a
        new session.

        Raises:
            UsageError: an empty prompt, a recipe name no recipe source knows, a
                ``scripted:`` script that cannot be read.
            InvalidSessionId, UnknownSession: a bad or unknown ``session``.
        """
        from actors.runtime.start import check_prompt  # noqa: PLC0415 - see the imports

        check_prompt(prompt)
        if not model:
            raise UsageError("a queued run needs a model recipe name")
        if session is not None:
            session = validate_session_id(session)
            self.store.read_session(session)
        spec = RunSpec(prompt=prompt, session_id=session, model=model, tools=tools, team=team)
        from actors.runtime.serving import check_submitted  # noqa: PLC0415 - see the imports

        check_submitted(spec, self._engine.project_dir, recipes)
        return self.coordinator().submit(spec)

    def queue(self, limit: int = 100) -> list[QueuedRun]:
        """Return the newest ``limit`` queued runs (any status), oldest first."""
        return self.coordinator().list_runs(limit)

    def serve(
        self,
        *,
        recipes: Recipes | None = None,
        concurrency: int = 1,
        stop: threading.Event | None = None,
        poll_s: float = 0.2,
        idle_poll_s: float = 5.0,
        drain_s: float = 30.0,
        on_event: Callable[[str], None] | None = None,
        metrics_address: tuple[str, int] | None = None,
    ) -> ServeReport:
        """Take queued runs and recover dead peers' runs until ``stop`` is set.

        Runs up to ``concurrency`` runs at once, each in its session under a lease; on
        start and every third of the lease ttl it adopts the runs of processes whose
        leases expired and resumes them. Once ``stop`` is set it takes nothing more and
        waits up to ``drain_s`` for the runs in progress (the report lists any left).
        A coordinator that pushes wake-ups (PostgreSQL: ``LISTEN``) is polled only every
        ``idle_poll_s``, else every ``poll_s``. ``metrics_address`` ``(host, port)``:
        serve ``/metrics`` and ``/healthz`` there while serving (docs/serve.md).

        Raises:
            UsageError: ``concurrency`` < 1, or the metrics address cannot be bound.
        """
        from actors.runtime.serving import Recipes, Server  # noqa: PLC0415 - see the imports

        if concurrency < 1:
            raise UsageError("concurrency must be at least 1")
        server = Server(
            self._engine,
            recipes or Recipes(),
            concurrency=concurrency,
            poll_s=poll_s,
            idle_poll_s=idle_poll_s,
            drain_s=drain_s,
            on_event=on_event,
            metrics_address=metrics_address,
        )
        return server.serve(stop or threading.Event())
