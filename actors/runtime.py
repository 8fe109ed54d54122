"""The ``Runtime`` facade: open a home, create sessions, run, replay, resume.

Environment variables are read here, once (``Runtime.from_env``), never deeper.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import structlog

from actors.agent import ReplayLog, RunSettings, SessionEnv
from actors.board import wal_name_for
from actors.brain import Brain, RunOutcome, RunRequest
from actors.locks import SessionLock
from actors.model import Model
from actors.recording import (
    ModelArg,
    model_chains,
    read_recording,
    recorded_models,
    recorded_tools,
    run_inputs,
    run_started_of,
)
from actors.replay import ReplayReport, build_report
from actors.task_manager import TaskManagerHandle
from actors.tools import Tool, ToolRegistry, spec_of
from eventlog.clock import Clock, SystemClock
from eventlog.errors import ClewError, ReplayDivergence
from eventlog.events import ActiveNodeSwitched, SessionCreated
from eventlog.ids import DerivedIds, IdSource, validate_session_id
from eventlog.records import AppendRequest, SessionRow, StoredEvent
from eventlog.sqlite_store import Durability, SQLiteStore
from eventlog.writer import CommitHook, Writer
from projections.references import expand_references
from projections.tree import NodeTree, check_switch_target

log = structlog.get_logger("clew.runtime")


class NothingToResume(ClewError):
    """The session has no interrupted run."""


class SessionBusy(ClewError):
    """Another live process (or runtime) owns the session right now."""


class FaultPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Crash-test seam: SIGKILL this process after the k-th commit or before the k-th tool."""

    kill_after_events: int | None = None
    kill_before_tool: int | None = None


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class ResumePlan(msgspec.Struct, frozen=True, kw_only=True):
    """What ``resume_ready`` found: the run to finish, the log read, the Task WAL replayed."""

    session_id: str
    run_id: str
    events: int
    runs: int
    interrupted_runs: list[str]
    #: The replay report of the run's Task WAL (``truncated_tail`` when a torn line was cut).
    task_wal: dict[str, Any]
    recording: dict[str, list[StoredEvent]]


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One line of ``Runtime.sessions()``."""

    session_id: str
    status: str
    created_at: str
    updated_at: str
    interrupted: bool
    runs: int
    events: int
    active_node_id: str | None


class Runtime:
    """An open clew home: the store, the writer, task managers, and the session API."""

    def __init__(
        self,
        home: Path | str,
        project_dir: Path | str | None = None,
        *,
        durability: Durability = "normal",
        clock: Clock | None = None,
        ids: IdSource | None = None,
        settings: RunSettings | None = None,
        fault: FaultPlan | None = None,
    ) -> None:
        """Open (creating if needed) the clew home ``home``.

        Args:
            project_dir: where Task WALs live (``<project>/.clew/tasks``); default: cwd.
            durability: ``normal`` survives a process crash, ``full`` a power loss.
            fault: crash-test seam (see :class:`FaultPlan`).
        """
        self.home = Path(home).expanduser()
        self.project_dir = Path(project_dir) if project_dir is not None else Path.cwd()
        self.home.mkdir(parents=True, exist_ok=True)
        self.store = SQLiteStore(
            self.home / "sessions.sqlite",
            artifacts_dir=self.home / "artifacts",
            durability=durability,
        )
        self.clock = clock or SystemClock()
        self.ids = ids or DerivedIds()
        self.settings = settings or RunSettings()
        self._fault = fault or FaultPlan()
        self._tools_started = 0
        self.writer = Writer(self.store, after_commit=self._commit_hook())
        self._task_managers: dict[str, TaskManagerHandle] = {}
        self._locks: dict[str, SessionLock] = {}

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        home: str | None = None,
        project_dir: str | None = None,
        **kwargs: Any,
    ) -> Runtime:
        """Open the home named by ``home`` / ``$CLEW_HOME`` / ``~/.clew``; read fault env vars."""
        env = os.environ if env is None else env
        chosen = home or env.get("CLEW_HOME") or str(Path("~/.clew").expanduser())
        def count(name: str) -> int | None:
            raw = env.get(name)
            if not raw:
                return None
            try:
                value = int(raw)
            except ValueError:
                raise ClewError(f"{name} must be a positive integer, not {raw!r}") from None
            if value < 1:
                raise ClewError(f"{name} must be a positive integer, not {raw!r}")
            return value

        fault = FaultPlan(
            kill_after_events=count("CLEW_FAULT_KILL_AFTER_EVENTS"),
            kill_before_tool=count("CLEW_FAULT_KILL_BEFORE_TOOL"),
        )
        return cls(chosen, project_dir, fault=fault, **kwargs)

    def _commit_hook(self) -> CommitHook | None:
        k = self._fault.kill_after_events
        if k is None:
            return None

        def hook(total: int, batch: list[StoredEvent]) -> None:
            if total >= k:
                _kill_self()

        return hook

    def _before_tool(self) -> Callable[[], None] | None:
        k = self._fault.kill_before_tool
        if k is None:
            return None

        def hook() -> None:
            self._tools_started += 1
            if self._tools_started >= k:
                _kill_self()

        return hook

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every actor, flush and close the writer, release session locks."""
        for tm in self._task_managers.values():
            tm.stop()
        self._task_managers.clear()
        self.writer.stop()
        for lock in self._locks.values():
            lock.release()
        self._locks.clear()
        self.store.close()

    # --- sessions ------------------------------------------------------------------------

    def new_session(
        self, *, cwd: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Session:
        """Create a session (``session_created``) and return it."""
        now = self.clock.now()
        for _ in range(20):
            sid = self.ids.new_session_id(now)
            if not self.store.session_exists(sid):
                break
        else:  # pragma: no cover - 20 collisions of a 16-bit suffix in one second
            raise ClewError("could not allocate a fresh session id")
        self.writer.append(
            AppendRequest(
                session_id=sid,
                event=SessionCreated(
                    session_id=sid,
                    cwd=cwd or str(self.project_dir),
                    root_agent_id=f"{sid}:brain",
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

    def lock(self, session_id: str) -> SessionLock:
        """Take the session's owner lock (``SessionBusy`` if another process holds it)."""
        lock = self._locks.get(session_id)
        if lock is None:
            lock = SessionLock(self.home / "locks" / f"{session_id}.lock")
            if not lock.acquire():
                raise SessionBusy(f"session {session_id} is in use by another process")
            self._locks[session_id] = lock
        return lock

    def unlock(self, session_id: str) -> None:
        """Release the session's owner lock if this runtime holds it."""
        lock = self._locks.pop(session_id, None)
        if lock is not None:
            lock.release()

    def is_owned(self, session_id: str) -> bool:
        """True when a live process (this one included) holds the session's owner lock."""
        if session_id in self._locks:
            return True
        return SessionLock(self.home / "locks" / f"{session_id}.lock").held_elsewhere()

    def interrupted_runs(self, session_id: str) -> list[str]:
        """Runs the store says are running/pending while no live process owns the session."""
        sid = validate_session_id(session_id)
        open_runs = [
            r.run_id for r in self.store.read_runs(sid) if r.status in ("running", "pending")
        ]
        if not open_runs or self.is_owned(sid):
            return []
        return open_runs

    def sessions(self) -> list[SessionInfo]:
        """Return every session with its run/event counts and interruption flag."""
        out = []
        for row in self.store.list_sessions():
            out.append(self._info(row))
        return out

    def _info(self, row: SessionRow) -> SessionInfo:
        return SessionInfo(
            session_id=row.session_id,
            status=row.status,
            created_at=row.created_at,
            updated_at=row.updated_at,
            interrupted=bool(self.interrupted_runs(row.session_id)),
            runs=len(self.store.read_runs(row.session_id)),
            events=self.store.count_events(row.session_id),
            active_node_id=row.active_node_id,
        )

    def switch_node(self, session_id: str, node_id: str) -> str | None:
        """Move the session's active node to ``node_id``; return the previous one.

        Any existing node may become active (seed rule); the next run's user message
        then starts a new branch there. Nothing is deleted.

        Raises:
            UnknownNode: no such node in the session.
            SessionBusy: a live process owns the session.
        """
        sid = validate_session_id(session_id)
        row = self.store.read_session(sid)
        self.lock(sid)
        try:
            tree = NodeTree.from_rows(self.store.read_nodes(sid), row.active_node_id)
            check_switch_target(tree, node_id)
            self.writer.append(
                AppendRequest(
                    session_id=sid,
                    event=ActiveNodeSwitched(from_node_id=row.active_node_id, to_node_id=node_id),
                    created_at=self.clock.now(),
                )
            )
        finally:
            self.unlock(sid)
        return row.active_node_id

    def task_manager(self, session_id: str) -> TaskManagerHandle:
        """Return the session's task manager actor (one per session, started lazily)."""
        tm = self._task_managers.get(session_id)
        if tm is None:
            tm = TaskManagerHandle.start(self.project_dir, session_id, clock=self.clock)
            self._task_managers[session_id] = tm
        return tm

    # --- running -------------------------------------------------------------------------

    def _env(
        self,
        sid: str,
        models: dict[str, list[Model]],
        tools: ToolRegistry,
        settings: RunSettings,
        **kw: Any,
    ) -> SessionEnv:
        return SessionEnv(
            session_id=sid,
            store=self.store,
            writer=self.writer,
            clock=self.clock,
            models=models,
            tools=tools,
            project_dir=self.project_dir,
            settings=settings,
            before_tool=self._before_tool(),
            artifact_threshold=self.store.artifact_threshold,
            **kw,
        )

    def _execute(
        self, env: SessionEnv, tasks: TaskManagerHandle, request: RunRequest
    ) -> RunOutcome:
        brain = Brain.start(env, tasks)
        try:
            outcome = brain.ask(request)
            assert isinstance(outcome, RunOutcome)
        finally:
            brain.stop()
        return outcome

    def replay(
        self,
        session_id: str,
        *,
        model: ModelArg | None = None,
        tools: Sequence[Tool] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ReplayReport:
        """Re-execute every recorded main run of the session against its recording.

        Nothing is written to the recorded session: model replies and tool results
        come from the recording, the Task WAL is rebuilt in a scratch directory
        that is thrown away. ``model``/``tools`` default to stand-ins with the
        recorded names and specs (pass today's tools to check they still match).
        """
        sid = validate_session_id(session_id)
        self.store.read_session(sid)
        by_run, mains = read_recording(self.store, sid)
        log_ = ReplayLog()
        scratch = Path(tempfile.mkdtemp(prefix="clew-replay-"))
        try:
            tasks = TaskManagerHandle.start(scratch, sid, clock=self.clock)
            try:
                for i, run_id in enumerate(mains):
                    started = run_started_of(by_run[run_id])
                    prompt, inputs = run_inputs(started)
                    models = model_chains(model) if model is not None else recorded_models(inputs)
                    registry = ToolRegistry(tools) if tools is not None else recorded_tools(inputs)
                    settings = msgspec.convert(inputs.get("settings", {}), RunSettings)
                    env = SessionEnv(
                        session_id=sid,
                        store=self.store,
                        writer=None,
                        clock=self.clock,
                        models=models,
                        tools=registry,
                        project_dir=scratch,
                        settings=settings,
                        recording=by_run,
                        live_allowed=False,
                        replay_log=log_,
                        artifact_threshold=self.store.artifact_threshold,
                    )
                    self._execute(
                        env,
                        tasks,
                        RunRequest(
                            run_id=run_id,
                            prompt=prompt,
                            parent_node_id=started.start_node_id,
                            inputs=inputs,
                        ),
                    )
                    if progress is not None:
                        progress(i + 1, len(mains))
            finally:
                tasks.stop()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return build_report(sid, by_run, log_)

    def resume_ready(self, session_id: str) -> ResumePlan:
        """Do everything a resume needs before re-executing: check, read, replay the WAL.

        Reads the session's log grouped by run, finds the interrupted main run, and
        replays that run's Task WAL (a torn tail is cut and reported in the plan).

        Raises:
            NothingToResume: no interrupted run.
            SessionBusy: a live process owns the session.
        """
        sid = validate_session_id(session_id)
        self.store.read_session(sid)
        if self.is_owned(sid) and sid not in self._locks:
            raise SessionBusy(f"session {sid} is in use by another process")
        interrupted = self.interrupted_runs(sid)
        brain = f"{sid}:brain"
        mains = [r.run_id for r in self.store.read_runs(sid) if r.agent_id == brain]
        pending = [r for r in mains if r in interrupted]
        if not pending:
            raise NothingToResume(f"session {sid} has no interrupted run")
        # Main runs are serial, so only the last one can be interrupted; resuming needs
        # its events and its workers' — not the whole session's log.
        run_id = pending[-1]
        by_run: dict[str, list[StoredEvent]] = {}
        for ev in self.store.read_runs_under(sid, run_id):
            if ev.run_id is not None:
                by_run.setdefault(ev.run_id, []).append(ev)
        wal = self.task_manager(sid).open(wal_name_for(run_id))
        return ResumePlan(
            session_id=sid,
            run_id=run_id,
            events=sum(len(v) for v in by_run.values()),
            runs=len(by_run),
            interrupted_runs=sorted(interrupted),
            task_wal=msgspec.to_builtins(wal),
            recording=by_run,
        )

    def resume(
        self,
        session_id: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        plan: ResumePlan | None = None,
    ) -> RunOutcome:
        """Finish the session's interrupted main run: re-execute it to the end of its log,
        then go on live (a recorded model reply is never requested again).

        Raises:
            NothingToResume: no interrupted run.
            SessionBusy: a live process owns the session.
            ReplayDivergence: today's code does not reproduce the recording.
        """
        plan = plan or self.resume_ready(session_id)
        sid, run_id, by_run = plan.session_id, plan.run_id, plan.recording
        started = run_started_of(by_run[run_id])
        prompt, inputs = run_inputs(started)
        chosen = settings or msgspec.convert(inputs.get("settings", {}), RunSettings)
        self.lock(sid)
        try:
            replay_log = ReplayLog()
            env = self._env(
                sid,
                model_chains(model),
                ToolRegistry(tools),
                chosen,
                recording=by_run,
                live_allowed=True,
                replay_log=replay_log,
            )
            outcome = self._execute(
                env,
                self.task_manager(sid),
                RunRequest(
                    run_id=run_id,
                    prompt=prompt,
                    parent_node_id=started.start_node_id,
                    inputs=inputs,
                ),
            )
            self.writer.flush()
        finally:
            self.unlock(sid)
        if replay_log.divergences:
            first = next(iter(replay_log.divergences.values()))
            raise ReplayDivergence(f"resume refused: {first}")
        return outcome


class Session:
    """A handle on one session of a :class:`Runtime`."""

    def __init__(self, runtime: Runtime, session_id: str) -> None:
        self.runtime = runtime
        self.id = session_id

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    def info(self) -> SessionInfo:
        """Return this session's summary line."""
        return self.runtime._info(self.runtime.store.read_session(self.id))

    def run(
        self,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
    ) -> RunOutcome:
        """Run one main run (route → workers → primary → review) and return its outcome."""
        rt = self.runtime
        if not prompt.strip():
            raise ClewError("the prompt is empty")
        settings = settings or rt.settings
        # @path / @@session markers are expanded here, once; the *expanded* text is the
        # run's recorded input, so a replay never reads a file or another session again.
        expanded = expand_references(prompt, rt.project_dir, rt.store.read_events)
        models = model_chains(model)
        registry = ToolRegistry(tools)
        rt.lock(self.id)
        try:
            row = rt.store.read_session(self.id)
            runs = rt.store.read_runs(self.id)
            brain = f"{self.id}:brain"
            n = sum(1 for r in runs if r.agent_id == brain) + 1
            if any(r.status in ("running", "pending") for r in runs):
                raise ClewError(
                    f"session {self.id} has an interrupted run;"
                    f" resume it first (clew resume {self.id})"
                )
            inputs: dict[str, Any] = {
                "create_agent": n == 1,
                "raw_prompt": prompt,
                "references": [msgspec.to_builtins(r) for r in expanded.references],
                "models": {role: [m.name for m in chain] for role, chain in models.items()},
                "tools": [
                    {**msgspec.to_builtins(spec_of(t)), "idempotent": t.idempotent}
                    for t in (registry.get(name) for name in registry.names())
                    if t is not None
                ],
                "settings": msgspec.to_builtins(settings),
            }
            env = rt._env(self.id, models, registry, settings)
            outcome = rt._execute(
                env,
                rt.task_manager(self.id),
                RunRequest(
                    run_id=f"{brain}:r{n}",
                    prompt=expanded.prompt,
                    parent_node_id=row.active_node_id,
                    inputs=inputs,
                ),
            )
            rt.writer.flush()
            return outcome
        finally:
            rt.unlock(self.id)
