"""The worker pool of one main run: handoffs out, results in, dependencies respected.

At most ``max_workers`` workers run at once; a worker starts when every task it
depends on completed, and a failed (or blocked) upstream blocks its dependents.
Results are taken in arrival order live and in the *recorded* order when
re-executing, and each is recorded as ``worker_result_received`` — so every decision
here reproduces in a replay.

Context reuse (flow 2, seed 004): a planned worker with ``continue: true`` continues the
context tree of the last worker of the same role whose result the Brain took before
dispatching it (in the recorded order, so a replay picks the same one): its task
instruction is appended under that worker's final node, and its agent records the node
as ``fork_from_node_id``. With no such worker it starts a new root, as any worker does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pykka

from actors.errors import Divergence, EndOfRecording, RunInterrupted
from actors.orchestration.env import SessionEnv
from actors.orchestration.inbox import Delivery, ResultInbox
from actors.orchestration.instructions import handoff_refs
from actors.orchestration.plan import Plan, PlannedWorker
from actors.orchestration.prompts import EXPECTED_RESULT, ISOLATION_CONSTRAINTS, expected_result
from actors.orchestration.run_plan import RunPlan
from actors.orchestration.worker import StartWorker, Worker, failed_result
from actors.recording.recorder import RunRecorder
from eventlog.events import HandoffSent, RunWaiting, WorkerResultReceived
from eventlog.ids import handoff_id, task_of, worker_agent_id
from eventlog.packets import AgentTaskContext, HandoffPacket, TaskProgress, WorkerResult

#: Todo statuses that stop a task's dependents.
_STOPPING = ("failed", "blocked")


class WorkerPool:
    """Dispatches the workers of one main run and collects their results."""

    def __init__(
        self,
        env: SessionEnv,
        rec: RunRecorder,
        *,
        agent_id: str,
        run_id: str,
        request: str,
    ) -> None:
        self.env = env
        self.rec = rec
        self.agent_id = agent_id
        self.run_id = run_id
        self.request = request
        self.inbox = ResultInbox()
        self.running: dict[str, pykka.ActorRef[Worker]] = {}
        #: Running workers parked for a person (their actors are done): what each waits for.
        self.parked: dict[str, list[Any]] = {}
        #: Workers whose result was taken, in that order: (role, final node id).
        self.finished: list[tuple[str, str | None]] = []
        self._role_of: dict[str, str] = {}

    # --- one worker ----------------------------------------------------------------------

    def handoff(
        self,
        task_id: str,
        role: str,
        goal: str,
        purpose: str = "worker",
        prior: Sequence[WorkerResult] = (),
    ) -> HandoffPacket:
        """Return the handoff packet of task ``task_id`` (``prior``: the results it is given).

        The reply shape is the role's typed output, if it has one; a review always
        replies in the review shape (its verdict drives the fix loop).
        """
        expected = (
            EXPECTED_RESULT if purpose == "review" else expected_result(self.env.team.role(role))
        )
        return HandoffPacket(
            id=handoff_id(self.run_id, task_id),
            task=AgentTaskContext(
                id=worker_agent_id(self.run_id, task_id),
                parent_id=self.run_id,
                agent_role=role,
                goal=goal,
                progress=TaskProgress(status="pending"),
                context_refs=handoff_refs(self.env.context, prior),
            ),
            constraints=list(ISOLATION_CONSTRAINTS),
            expected_result=expected,
        )

    def dispatch(
        self,
        task_id: str,
        role: str,
        goal: str,
        prior: list[WorkerResult],
        purpose: str = "worker",
        continue_from: str | None = None,
    ) -> None:
        """Record the handoff of ``task_id`` and start its worker (none once cancelled),
        continuing the context tree at node ``continue_from`` when given."""
        self.rec.checkpoint()
        handoff = self.handoff(task_id, role, goal, purpose, prior)
        self.rec.emit(HandoffSent(packet=handoff))
        self.rec.flush()  # the handoff is durable before another actor works on it
        ref = Worker.start(
            self.env,
            handoff,
            self.request,
            prior,
            self.inbox,
            brain_agent_id=self.agent_id,
            brain_run_id=self.run_id,
            purpose=purpose,
            cancel=self.rec.cancel,
            continue_from=continue_from,
        )
        self.running[handoff.task.id] = ref
        self._role_of[handoff.task.id] = role
        ref.tell(StartWorker(handoff_id=handoff.id))

    def receive(self) -> WorkerResult:
        """Take the next worker result — in recorded order while re-executing — and record it.

        Raises:
            RunCancelled: the run was cancelled while waiting (live), or the recording
                says it stopped here.
        """
        self.rec.checkpoint()
        self._park_if_stuck()
        expected = self.rec.peek()
        recorded = (
            expected.event.result
            if expected is not None and isinstance(expected.event, WorkerResultReceived)
            else None
        )
        wanted = recorded.task_id if recorded is not None else None
        if wanted is not None and wanted not in self.running:
            wanted = None
        self.rec.flush()  # nothing of the run waits in the buffer while the Brain waits
        # Re-executing towards a recorded result: it comes (its worker replays it), so a
        # cancel that took effect meanwhile stops this run only once it is past its prefix.
        d: Delivery | None
        if wanted is not None and self.rec.replaying:
            d = self.inbox.take(wanted)
        else:
            d = self.inbox.take(wanted, cancel=self.rec.cancel)
        if d is None:  # cancelled while waiting: the workers stop by themselves
            self.rec.stop_here()
        if d.waiting is not None:
            # Parked: it keeps its slot (so no dispatch depends on when it parked) and
            # the pool parks only when no running worker can progress.
            self.parked[d.result.task_id] = d.waiting
            return self.receive()
        self._stop(d.result.task_id)
        self.finished.append((self._role_of.get(d.result.task_id, ""), d.tip))
        if d.interrupted is not None:
            raise RunInterrupted(d.interrupted)
        result = d.result
        if d.replay_stopped:
            result = self._after_replay_stop(result, recorded)
        self.rec.emit(WorkerResultReceived(result=result))
        return result

    def _park_if_stuck(self) -> None:
        """Park the main run when every running worker is parked (nothing can progress).

        Re-executing, a recorded ``run_waiting`` here is where the run parked: past it,
        the resumed run records ``run_resumed`` and goes on (the workers it waited for
        now have their decisions).

        Raises:
            RunParked: the run parks (live), or a replay of a waiting session ends here.
        """
        rec = self.rec
        nxt = rec.peek()
        if nxt is not None and isinstance(nxt.event, RunWaiting):
            rec.wait_point(nxt.event, [])
            rec.go_on(rec.replaying or self.env.live_allowed, [])
            return
        if rec.replaying or not self.running or set(self.running) - set(self.parked):
            return
        pending = [p for task_id in sorted(self.parked) for p in self.parked[task_id]]
        ids = [p.tool_call_id for p in pending if hasattr(p, "tool_call_id")]
        rec.wait_point(RunWaiting(run_id=self.run_id, reason="approval", pending=ids), pending)

    def _after_replay_stop(
        self, result: WorkerResult, recorded: WorkerResult | None
    ) -> WorkerResult:
        """The worker's own re-execution stopped (its divergence is reported for its run).

        Replaying, go on with the recorded result so the Brain's run and the other
        workers are still checked; a recording that ends here ends the Brain too.
        Resuming, stop: nothing of a diverging recording may be continued.
        """
        if self.env.live_allowed:
            raise EndOfRecording(f"resume stopped: worker {result.task_id} did not reproduce")
        if recorded is not None:
            return recorded
        expected = self.rec.peek()
        if expected is None:
            raise EndOfRecording(f"run {self.run_id}: recording ends with a worker out")
        raise Divergence(
            self.run_id, expected.run_seq, expected.event_type, "worker_result_received", []
        )

    def run_one(
        self, task_id: str, role: str, goal: str, prior: list[WorkerResult], purpose: str
    ) -> WorkerResult:
        """Dispatch one worker and wait for its result."""
        self.dispatch(task_id, role, goal, prior, purpose)
        return self.receive()

    def _stop(self, agent_id: str) -> None:
        ref = self.running.pop(agent_id, None)
        if ref is not None:
            # Blocking: the worker has delivered, so this only waits for it to leave
            # on_receive; after a run no worker actor outlives it.
            ref.stop(block=True, timeout=30)

    def drain(self) -> None:
        """Wait for running workers (so their runs finish and are recorded), then stop them."""
        for task_id in list(self.parked):
            self._stop(task_id)  # delivered already: its run waits, its actor is done
        self.parked.clear()
        while self.running:
            d = self.inbox.take()
            self._stop(d.result.task_id)

    # --- the plan's workers --------------------------------------------------------------

    def continuation(self, w: PlannedWorker) -> str | None:
        """Return the node a worker continues (flow 2, ``continue: true``), else None."""
        if not w.continues or self.env.flow < 2:
            return None
        for role, tip in reversed(self.finished):
            if role == w.role and tip is not None:
                return tip
        return None

    def run_plan(self, plan: Plan, board: RunPlan) -> list[WorkerResult]:
        """Run the plan's workers, at most ``max_workers`` at once; return results in plan order."""
        state = _PlanState(plan, max(1, self.env.settings.max_workers))
        todo = board.update
        state.dispatch_ready(self, board, todo)
        while self.running:
            result = self.receive()
            task_id = task_of(result.task_id)
            state.results[task_id] = result
            ok = result.status == "completed"
            board.move(task_id, "completed" if ok else "failed", result.summary[:200])
            todo(task_id, "completed" if ok else "failed")
            state.block_dependents(todo)
            state.dispatch_ready(self, board, todo)
        return state.ordered(self)


Todo = Callable[..., None]


class _PlanState:
    """Which of a plan's tasks were dispatched, finished or blocked.

    Derived from this run's own results, never from the Task WAL: the WAL may be ahead
    of the log after a crash, and decisions must reproduce.
    """

    def __init__(self, plan: Plan, limit: int) -> None:
        self.plan = plan
        self.limit = limit
        self.dispatched: set[str] = set()
        self.blocked: set[str] = set()
        self.results: dict[str, WorkerResult] = {}

    def status(self, task_id: str) -> str:
        if task_id in self.results:
            return "completed" if self.results[task_id].status == "completed" else "failed"
        if task_id in self.blocked:
            return "blocked"
        return "running" if task_id in self.dispatched else "pending"

    def dispatch_ready(self, pool: WorkerPool, board: RunPlan, todo: Todo) -> None:
        for w in self.plan.workers:
            if len(pool.running) >= self.limit:
                return
            if w.id in self.dispatched or w.id in self.blocked:
                continue
            if all(self.status(d) == "completed" for d in w.deps):
                self.dispatched.add(w.id)
                todo(w.id, "running")
                board.move(w.id, "running")
                prior = [self.results[d] for d in w.deps]
                pool.dispatch(w.id, w.role, w.goal, prior, continue_from=pool.continuation(w))

    def block_dependents(self, todo: Todo) -> None:
        changed = True
        while changed:
            changed = False
            for w in self.plan.workers:
                if w.id in self.blocked or w.id in self.dispatched:
                    continue
                if any(self.status(d) in _STOPPING for d in w.deps):
                    self.blocked.add(w.id)
                    todo(w.id, "blocked", "an upstream task failed")
                    changed = True

    def ordered(self, pool: WorkerPool) -> list[WorkerResult]:
        """Return the results in plan order; a blocked task gets a blocked result."""
        out = []
        for w in self.plan.workers:
            if w.id in self.results:
                out.append(self.results[w.id])
            elif w.id in self.blocked:
                handoff = pool.handoff(w.id, w.role, w.goal)
                failed = failed_result(handoff, "blocked by a failed upstream")
                out.append(
                    msgspec.structs.replace(
                        failed, status="blocked", progress=TaskProgress(status="blocked")
                    )
                )
        return out
