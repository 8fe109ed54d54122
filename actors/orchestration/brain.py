"""The Brain actor: one per session; owns the orchestration context of each main run.

Flow of one run (seed 000): route → clarification gate → one handoff per worker
→ worker pool (bounded, dependencies via the TaskManager, failed upstream blocks
its dependents) → primary (request + worker summaries) → optional review → a
bounded fix loop (``main_run.MainRun``). Runs of a session are serial: the actor
handles one :class:`RunRequest` at a time.

Concurrency meets here and only here. Live, worker results are taken in arrival
order and each is recorded (``worker_result_received``). Re-executing, they are
taken in the *recorded* order, so every decision the Brain makes reproduces.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

import msgspec
import pykka

from actors.errors import Divergence, RunCancelled, RunInterrupted, RunParked, UsageError
from actors.models.storable import safe_text
from actors.orchestration.env import SessionEnv
from actors.orchestration.main_run import MainRun, RunOutcome
from actors.recording.inputs import RunInputs
from actors.recording.stops import interruption, is_replay_stop
from actors.tasks.manager import TaskManagerProxy
from eventlog.events import AgentStatusChanged, RunEnded, Usage
from eventlog.ids import brain_agent_id
from eventlog.logs import get_logger

log = get_logger("clew.brain")


class RunRequest(msgspec.Struct, frozen=True, kw_only=True, tag="run_request"):
    """Runtime → Brain: start (or re-execute) main run ``run_id`` from ``inputs``."""

    run_id: str
    inputs: RunInputs
    parent_node_id: str | None = None
    #: The attempt ``run_started`` records: > 1 for a retry of a failed run.
    attempt: int = 1


#: Every message a Brain accepts.
BrainMessage = RunRequest


class Brain(pykka.ThreadingActor):
    """The orchestrator of a session's main runs."""

    #: Never keeps the interpreter alive (a crash at exit is one resume recovers from).
    use_daemon_thread = True

    def __init__(self, env: SessionEnv, tasks: TaskManagerProxy) -> None:
        super().__init__()
        self._env = env
        self._tasks = tasks
        self.agent_id = brain_agent_id(env.session_id)

    def on_receive(self, message: BrainMessage) -> RunOutcome:
        match message:
            case RunRequest():
                return self._run(message)
        raise TypeError(f"brain: unexpected message {type(message).__name__}")

    def _run(self, req: RunRequest) -> RunOutcome:
        env = self._env
        rec = env.recorder(self.agent_id, req.run_id)
        run = MainRun(
            env,
            self._tasks,
            rec,
            self.agent_id,
            req.run_id,
            req.inputs,
            req.parent_node_id,
            req.attempt,
        )
        timer = _run_timer(env)
        try:
            outcome = self._execute(run)
            _run_ended(env, outcome)
            return outcome
        finally:
            if timer is not None:
                timer.cancel()
            if env.replay_log is not None:
                env.replay_log.count(req.run_id, rec.compared)

    def _execute(self, run: MainRun) -> RunOutcome:
        env = self._env
        try:
            try:
                # What the run emitted is committed on the way out, by an exception too.
                with run.rec.commits.committing():
                    return run.execute()
            except RunCancelled as cancelled:
                return run.cancelled(cancelled)
            except RunParked as parked:
                return run.parked(parked)
        except Exception as e:
            if is_replay_stop(e):
                if env.replay_log is not None:
                    env.replay_log.stopped(run.run_id, e)
                run.pool.drain()
                status = "diverged" if isinstance(e, Divergence) else "interrupted"
                return RunOutcome(
                    session_id=env.session_id, run_id=run.run_id, status=status, error=str(e)
                )
            stop = interruption(e)
            if stop is None:
                try:
                    return self._failed(run, e)
                except Exception as again:  # the environment failed while recording it
                    stop = interruption(again)
                    if stop is None:
                        raise
            return self._interrupted(run, stop)

    def _interrupted(self, run: MainRun, stop: RunInterrupted) -> RunOutcome:
        """Stop the run as interrupted: nothing more is recorded (the environment failed)."""
        sid = self._env.session_id
        log.bind(session_id=sid, agent_id=self.agent_id, run_id=run.run_id).warning(
            "brain_run_interrupted", error=str(stop)
        )
        run.pool.drain()
        return RunOutcome(
            session_id=sid,
            run_id=run.run_id,
            status="interrupted",
            error=str(stop),
            active_node_id=run.conv.tip if run.conv else None,
        )

    def _failed(self, run: MainRun, e: Exception) -> RunOutcome:
        """Record the run's failure (its agent failed, ``run_ended(failed)``); return it."""
        log.bind(session_id=self._env.session_id, agent_id=self.agent_id, run_id=run.run_id).error(
            "brain_run_failed", error=str(e)
        )
        run.pool.drain()
        tip = run.conv.tip if run.conv else None
        run.rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="failed"))
        run.rec.emit(
            RunEnded(
                run_id=run.run_id,
                status="failed",
                end_reason="failed",
                end_node_id=tip,
                # From flow 2 a run's usage is every model call it made, failed or not.
                usage=run.rec.usage if run.flow >= 2 else Usage(),
                error={"type": safe_text(type(e).__name__), "message": safe_text(str(e))},
            )
        )
        return RunOutcome(
            session_id=self._env.session_id,
            run_id=run.run_id,
            status="failed",
            error=safe_text(f"{type(e).__name__}: {e}"),
            active_node_id=tip,
        )


def _run_ended(env: SessionEnv, outcome: RunOutcome) -> None:
    """Tell the application's ``on_run_end`` hook (live only; it changes nothing, so an
    exception is logged, never recorded: ``run_ended`` is the run's last event)."""
    if env.hooks is None or not env.live_allowed or outcome.status in ("diverged", "interrupted"):
        return
    try:
        env.hooks.on_run_end(env.session_id, outcome.run_id, outcome.status)
    except Exception as e:
        log.warning("hook_failed", hook="on_run_end", error=safe_text(str(e)))


def _run_timer(env: SessionEnv) -> threading.Timer | None:
    """Start the main run's timeout, if it has one (``run_timeout_s``)."""
    limit = env.settings.run_timeout_s
    if limit is None:
        return None
    reason = f"the run did not finish within {limit:g} s (run_timeout_s)"
    timer = threading.Timer(limit, env.cancel.cancel, (reason, "timeout"))
    timer.daemon = True
    timer.start()
    return timer


#: What re-executes (or runs) one main run: :func:`execute` for the Brain's runs.
Executor = Callable[[SessionEnv, TaskManagerProxy, RunRequest], RunOutcome]


class RunKind(Protocol):
    """A kind of main run whose loop is not the Brain's: a framework's agent
    (``actors.pydantic_ai.DurableAgent``). Its runs record ``run_started`` with
    :attr:`phase`; a resume or a replay hands them to :meth:`execute`."""

    @property
    def phase(self) -> str:
        """The ``run_started`` phase of this kind's runs."""
        ...

    def execute(self, env: SessionEnv, tasks: TaskManagerProxy, request: RunRequest) -> RunOutcome:
        """Re-execute the recorded main run ``request`` in ``env``; return how it ended."""
        ...


#: The ``run_started`` phase of the Brain's main runs.
BRAIN_PHASE = "orchestrate"


def executor_for(kind: RunKind | None, phase: str) -> Executor:
    """Return what re-executes a main run whose ``run_started`` records ``phase``.

    Raises:
        UsageError: the run was made by a framework's agent that was not given.
    """
    if kind is not None and phase == kind.phase:
        return kind.execute
    if phase not in (BRAIN_PHASE, ""):
        raise UsageError(
            f"this run was made by a {phase!r} agent: pass that agent (agent=…) to resume"
            " or replay it"
        )
    return execute


def execute(env: SessionEnv, tasks: TaskManagerProxy, request: RunRequest) -> RunOutcome:
    """Run one main run on a fresh Brain actor, then stop the actor; return the outcome."""
    brain = Brain.start(env, tasks)
    try:
        outcome = brain.ask(request)
        assert isinstance(outcome, RunOutcome)
    finally:
        brain.stop()
    return outcome
