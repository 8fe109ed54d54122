"""The Worker actor: one per worker invocation, owning exactly one ``AgentTaskContext``.

A worker is built from its ``HandoffPacket``, the original request and the prior
results the Brain chose to pass — nothing else is reachable from it. It has its
own agent row, its own run and its own branch of nodes (a new root: no parent
in the Brain's tree, so no Brain transcript can leak into its context) — or, when the
plan says ``continue: true`` (flow 2), a new branch on the context tree of an earlier
worker of its role, at that worker's last node. It replies with a ``WorkerResult`` put
into the Brain's :class:`ResultInbox`.
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec
import pykka

from actors.errors import RunCancelled, RunParked
from actors.models.calls import CancelScope
from actors.models.storable import safe_text
from actors.orchestration.compaction import guard_for
from actors.orchestration.env import SessionEnv
from actors.orchestration.inbox import Delivery, ResultInbox
from actors.orchestration.instructions import with_support
from actors.orchestration.loop import AgentSpec, Conversation, agent_loop
from actors.orchestration.plan import normalise_worker_reply, typed_worker_result
from actors.orchestration.prompts import WORKER_SYSTEM, role_system, worker_prompt
from actors.recording.recorder import RunRecorder
from actors.recording.stops import interruption, is_replay_stop
from eventlog.blocks import TextBlock
from eventlog.events import (
    AgentCreated,
    AgentStatusChanged,
    EndReason,
    RunEnded,
    RunStarted,
    Usage,
    WorkerFailed,
)
from eventlog.ids import agent_run_id
from eventlog.logs import get_logger
from eventlog.packets import HandoffPacket, TaskProgress, WorkerResult
from projections.context import build_context

log = get_logger("clew.worker")


class StartWorker(msgspec.Struct, frozen=True, kw_only=True, tag="start_worker"):
    """Brain → worker actor: start the run (the handoff came with the constructor)."""

    handoff_id: str


#: Every message a worker accepts.
WorkerMessage = StartWorker


def cancelled_run_end(
    run_id: str, e: RunCancelled, end_node_id: str | None, usage: Usage | None = None
) -> RunEnded:
    """Return the ``run_ended`` of a run stopped by a cancellation (``e`` says why);
    ``usage``: the run's calls (from flow 2), else none (flow 1 recorded none)."""
    reason: EndReason = {"model": "aborted_streaming", "tool": "aborted_tools"}.get(
        e.during, "cancelled"
    )  # type: ignore[assignment]
    return RunEnded(
        run_id=run_id,
        status="cancelled",
        end_reason=reason,
        end_node_id=end_node_id,
        usage=usage or Usage(),
        outcome={"status": "cancelled", "reason": e.reason, "source": e.source},
    )


def failed_result(handoff: HandoffPacket, error: str) -> WorkerResult:
    """Return a failed ``WorkerResult`` for ``handoff``."""
    return WorkerResult(
        handoff_id=handoff.id,
        task_id=handoff.task.id,
        parent_id=handoff.task.parent_id,
        status="failed",
        progress=TaskProgress(status="failed"),
        summary=f"worker failed: {safe_text(error)}",
        error=safe_text(error),
    )


class Worker(pykka.ThreadingActor):
    """Runs one handoff and delivers one ``WorkerResult``."""

    #: Never keeps the interpreter alive (a crash at exit is one resume recovers from).
    use_daemon_thread = True

    def __init__(
        self,
        env: SessionEnv,
        handoff: HandoffPacket,
        request: str,
        prior: list[WorkerResult],
        inbox: ResultInbox,
        *,
        brain_agent_id: str,
        brain_run_id: str,
        purpose: str = "worker",
        cancel: CancelScope | None = None,
        continue_from: str | None = None,
    ) -> None:
        super().__init__()
        #: This worker's cancellation: its main run's, plus its own timeout.
        self._cancel = CancelScope(cancel, kind="worker")
        self._env = env
        self._handoff = handoff
        self._request = request
        self._prior = prior
        self._inbox = inbox
        self._brain_agent_id = brain_agent_id
        self._brain_run_id = brain_run_id
        self._purpose = purpose
        self._continue_from = continue_from
        self._delivered = False
        #: Set once ``run_started`` is recorded: from then on a failure ends the run.
        self._started = False

    def on_receive(self, message: WorkerMessage) -> None:
        match message:
            case StartWorker():
                self._deliver(self._run())

    def on_failure(self, *args: Any) -> None:
        # Never die silently: the Brain is waiting for this worker's result.
        self._deliver(Delivery(result=failed_result(self._handoff, "worker actor crashed")))

    def _deliver(self, delivery: Delivery) -> None:
        if not self._delivered:
            self._delivered = True
            self._inbox.put(delivery)

    def _failed(
        self, rec: RunRecorder, run_id: str, e: Exception, end_node_id: str | None
    ) -> Delivery:
        """Record the run's failure (``worker_failed``, ``run_ended(failed)``); return it.

        An environment failure is never recorded: the delivery says the run was
        interrupted (so is one met while recording the failure).
        """
        stop = interruption(e)
        if stop is not None:
            return self._interrupted(run_id, stop)
        try:
            return self._record_failure(rec, run_id, e, end_node_id)
        except Exception as again:
            stop = interruption(again)
            if stop is None:
                raise
            return self._interrupted(run_id, stop)

    def _interrupted(self, run_id: str, stop: Exception) -> Delivery:
        self._log(run_id).warning("worker_interrupted", error=str(stop))
        return Delivery(result=failed_result(self._handoff, str(stop)), interrupted=str(stop))

    def _record_failure(
        self, rec: RunRecorder, run_id: str, e: Exception, end_node_id: str | None
    ) -> Delivery:
        task = self._handoff.task
        error_type, message = safe_text(type(e).__name__), safe_text(str(e))
        result = failed_result(self._handoff, f"{error_type}: {message}")
        rec.emit(WorkerFailed(task_id=task.id, error_type=error_type, message=message))
        rec.emit(
            AgentStatusChanged(
                agent_id=task.id, status="failed", result=msgspec.to_builtins(result)
            )
        )
        rec.emit(
            RunEnded(
                run_id=run_id,
                status="failed",
                end_reason="failed",
                end_node_id=end_node_id,
                usage=rec.usage if self._env.flow >= 2 else Usage(),
                error={"type": error_type, "message": message},
            )
        )
        return Delivery(result=result, tip=end_node_id)

    def _run(self) -> Delivery:
        agent_id = self._handoff.task.id
        run_id = agent_run_id(agent_id, 1)  # a worker agent runs once
        rec = self._env.recorder(agent_id, run_id, cancel=self._cancel)
        conv: Conversation | None = None
        timer = self._timer()
        try:
            # What the run emitted is committed on the way out, by an exception too.
            with rec.commits.committing():
                self._start(rec, run_id)
                conv = self._conversation(rec)
                return self._work(rec, run_id, conv)
        except RunCancelled as e:
            return self._cancelled(rec, run_id, e, conv.tip if conv is not None else None)
        except RunParked as e:
            # The run stays open (waiting): a resume re-executes it to its wait.
            self._log(run_id).info("worker_waiting", reason=e.reason)
            return Delivery(result=failed_result(self._handoff, "waiting"), waiting=e.pending)
        except Exception as e:
            if is_replay_stop(e):
                if self._env.replay_log is not None:
                    self._env.replay_log.stopped(run_id, e)
                return Delivery(result=failed_result(self._handoff, str(e)), replay_stopped=True)
            stop = interruption(e)
            if stop is not None:
                # The environment failed (the store, a Task WAL): not an outcome, nothing
                # recorded; the Brain stops the run as interrupted.
                return self._interrupted(run_id, stop)
            if not self._started:
                raise  # nothing of the run is recorded: on_failure reports
            # A bug in the worker's own code, outside the agent loop: still a failed result
            # with its run ended — never a run left "running" that looks interrupted.
            self._log(run_id).error("worker_crashed", error=str(e))
            return self._failed(rec, run_id, e, conv.tip if conv is not None else None)
        finally:
            if timer is not None:
                timer.cancel()
            if self._env.replay_log is not None:
                self._env.replay_log.count(run_id, rec.compared)

    def _timer(self) -> threading.Timer | None:
        """Start the worker's timeout, if the run has one (``worker_timeout_s``)."""
        limit = self._env.settings.worker_timeout_s
        if limit is None:
            return None
        reason = f"the worker did not finish within {limit:g} s (worker_timeout_s)"
        timer = threading.Timer(limit, self._cancel.cancel, (reason, "timeout"))
        timer.daemon = True
        timer.start()
        return timer

    def _cancelled(
        self, rec: RunRecorder, run_id: str, e: RunCancelled, end_node_id: str | None
    ) -> Delivery:
        """End the worker's run as cancelled (its ``run_cancelling`` is recorded)."""
        task = self._handoff.task
        result = msgspec.structs.replace(
            failed_result(self._handoff, f"cancelled: {e.reason}"),
            status="cancelled",
            progress=TaskProgress(status="cancelled"),
            summary=safe_text(f"worker cancelled: {e.reason}"),
        )
        try:
            rec.emit(AgentStatusChanged(agent_id=task.id, status="cancelled"))
            usage = rec.usage if self._env.flow >= 2 else None
            rec.emit(cancelled_run_end(run_id, e, end_node_id, usage))
        except Exception as again:
            stop = interruption(again)
            if stop is None:
                raise
            return self._interrupted(run_id, stop)
        self._log(run_id).info("worker_cancelled", reason=e.reason, source=e.source)
        return Delivery(result=result)

    def _log(self, run_id: str) -> Any:
        agent_id = self._handoff.task.id
        return log.bind(session_id=self._env.session_id, agent_id=agent_id, run_id=run_id)

    def _start(self, rec: RunRecorder, run_id: str) -> None:
        """Record the worker's agent and the start of its run."""
        task = self._handoff.task
        rec.emit(
            AgentCreated(
                agent_id=task.id,
                agent_type="sub",
                parent_agent_id=self._brain_agent_id,
                created_by_run_id=self._brain_run_id,
                role=task.agent_role,
                purpose=self._purpose,
                fork_from_node_id=self._continue_from,
            )
        )
        rec.emit(
            RunStarted(
                run_id=run_id,
                agent_id=task.id,
                phase=self._purpose,
                rng_seed=rec.rng.getrandbits(63),
                metadata={"task_id": task.id, "handoff_id": self._handoff.id},
            )
        )
        self._started = True
        rec.emit(AgentStatusChanged(agent_id=task.id, status="running"))

    def _conversation(self, rec: RunRecorder) -> Conversation:
        """Return the worker's own branch, opened with its task prompt: a new root, or a
        new branch at the node it continues (its path is the worker's history)."""
        task = self._handoff.task
        env, parent = self._env, self._continue_from
        history = (
            build_context(env.store.read_active_path(env.session_id, parent)) if parent else []
        )
        conv = Conversation(
            rec, parent_id=parent, history=history, activate=False, context=guard_for(env)
        )
        prompt = worker_prompt(self._request, self._handoff, self._prior)
        conv.append(
            "user",
            [TextBlock(text=with_support(env.context, prompt))],
            node_type="task_instruction",
            metadata={"task_id": task.id},
        )
        return conv

    def _work(self, rec: RunRecorder, run_id: str, conv: Conversation) -> Delivery:
        """Run the agent loop; record the result (or the failure) and the run's end."""
        task = self._handoff.task
        env = self._env
        role = env.team.role(task.agent_role)
        # A review replies in the review shape, whatever its role's output: its verdict
        # drives the fix loop.
        output = role.output if self._purpose != "review" else None
        try:
            loop = agent_loop(
                env,
                conv,
                AgentSpec(
                    role=task.agent_role,
                    phase=self._purpose,
                    system=role_system(WORKER_SYSTEM, env.team, role),
                    tools=role.tools,
                    task_id=task.id,
                    max_turns=env.settings.max_turns,
                    settings=role.settings,
                    output=output,
                ),
            )
            result = (
                normalise_worker_reply(self._handoff, loop.content)
                if output is None
                else typed_worker_result(self._handoff, loop.content)
            )
        except Exception as e:
            if isinstance(e, RunCancelled | RunParked) or is_replay_stop(e) or interruption(e):
                raise
            self._log(run_id).warning("worker_failed", error=str(e))
            return self._failed(rec, run_id, e, conv.tip)
        rec.emit(
            AgentStatusChanged(
                agent_id=task.id,
                status="completed" if result.status == "completed" else "failed",
                result=msgspec.to_builtins(result),
            )
        )
        rec.emit(
            RunEnded(
                run_id=run_id,
                status="completed",
                end_reason=loop.end_reason,
                end_node_id=loop.final_node_id,
                turn_count=loop.turns,
                usage=rec.usage if env.flow >= 2 else loop.usage,
            )
        )
        return Delivery(result=result, tip=loop.final_node_id)
