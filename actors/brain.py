"""The Brain actor: one per session; owns the orchestration context of each main run.

Flow of one run (seed 000): route → clarification gate → one handoff per worker
→ worker pool (bounded, dependencies via the TaskManager, failed upstream blocks
its dependents) → primary (request + worker summaries) → optional review → a
bounded fix loop. Runs of a session are serial: the actor handles one
``RunRequest`` at a time.

Concurrency meets here and only here. Live, worker results are taken in arrival
order and each is recorded (``worker_result_received``). Re-executing, they are
taken in the *recorded* order, so every decision the Brain makes reproduces.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pykka
import structlog

from actors.agent import (
    Conversation,
    LoopResult,
    SessionEnv,
    add_usage,
    agent_loop,
    call_model,
    is_replay_stop,
)
from actors.board import Board, wal_name_for
from actors.plan import (
    EXPECTED_RESULT,
    FALLBACK_PLAN,
    ISOLATION_CONSTRAINTS,
    ROUTER_SYSTEM,
    Plan,
    PlanError,
    parse_plan,
    summaries_block,
)
from actors.recorder import Divergence, EndOfRecording, RunRecorder
from actors.task_manager import TaskManagerHandle
from actors.worker import Delivery, ResultInbox, StartWorker, Worker, failed_result
from eventlog.blocks import ContentBlock, Message, TextBlock
from eventlog.events import (
    AgentCreated,
    AgentStatusChanged,
    ClarificationRequested,
    FixIteration,
    HandoffSent,
    PlanRejected,
    RunEnded,
    RunStarted,
    TodoPlanned,
    TodoUpdated,
    WorkerResultReceived,
)
from eventlog.packets import (
    AgentTaskContext,
    BrainTaskContext,
    HandoffPacket,
    TaskProgress,
    WorkerResult,
)
from projections.context import build_context

log = structlog.get_logger("clew.brain")

PRIMARY_SYSTEM = (
    "You are the primary agent. Answer the user's request using the worker results you"
    " are given (summaries, not transcripts)."
)


class RunRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Runtime → Brain: start main run ``run_id``. Its fields are the run's inputs."""

    run_id: str
    prompt: str
    parent_node_id: str | None = None
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)


class RunOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """How a main run ended."""

    session_id: str
    run_id: str
    status: str  # completed | failed | needs_clarification | diverged | interrupted
    answer: str = ""
    question: str | None = None
    worker_results: list[WorkerResult] = msgspec.field(default_factory=list)
    error: str | None = None
    active_node_id: str | None = None


def _text(content: list[ContentBlock]) -> str:
    return "".join(b.text for b in content if isinstance(b, TextBlock)).strip()


class Brain(pykka.ThreadingActor):
    """The orchestrator of a session's main runs."""

    def __init__(self, env: SessionEnv, tasks: TaskManagerHandle) -> None:
        super().__init__()
        self._env = env
        self._tasks = tasks
        self.agent_id = f"{env.session_id}:brain"

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, RunRequest):
            return self._run(message)
        raise TypeError(f"brain: unexpected message {type(message).__name__}")

    # --- one main run --------------------------------------------------------------------

    def _run(self, req: RunRequest) -> RunOutcome:
        env = self._env
        rec = env.recorder(self.agent_id, req.run_id)
        blog = log.bind(session_id=env.session_id, agent_id=self.agent_id, run_id=req.run_id)
        run = _MainRun(env, self._tasks, rec, self.agent_id, req)
        try:
            return run.execute()
        except Exception as e:
            if is_replay_stop(e):
                if env.replay_log is not None:
                    env.replay_log.stopped(req.run_id, e)
                run.drain_workers()
                status = "diverged" if isinstance(e, Divergence) else "interrupted"
                return RunOutcome(
                    session_id=env.session_id, run_id=req.run_id, status=status, error=str(e)
                )
            blog.error("brain_run_failed", error=str(e))
            run.drain_workers()
            error = {"type": type(e).__name__, "message": str(e)}
            rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="failed"))
            rec.emit(
                RunEnded(
                    run_id=req.run_id,
                    status="failed",
                    end_reason="failed",
                    end_node_id=run.conv.tip if run.conv else None,
                    error=error,
                )
            )
            return RunOutcome(
                session_id=env.session_id,
                run_id=req.run_id,
                status="failed",
                error=f"{type(e).__name__}: {e}",
                active_node_id=run.conv.tip if run.conv else None,
            )
        finally:
            if env.replay_log is not None:
                env.replay_log.count(req.run_id, rec.compared)


class _MainRun:
    """The state of one main run while it executes (lives on the Brain's thread)."""

    def __init__(
        self,
        env: SessionEnv,
        tasks: TaskManagerHandle,
        rec: RunRecorder,
        agent_id: str,
        req: RunRequest,
    ) -> None:
        self.env = env
        self.tasks = tasks
        self.rec = rec
        self.agent_id = agent_id
        self.req = req
        self.conv: Conversation | None = None
        self.inbox = ResultInbox()
        self.running: dict[str, pykka.ActorRef[Worker]] = {}
        self.results: dict[str, WorkerResult] = {}
        self.roles: dict[str, str] = {}

    # -- helpers --

    def todo(self, todo_id: str, status: str, note: str = "") -> None:
        self.rec.emit(TodoUpdated(todo_id=todo_id, status=status, note=note))  # type: ignore[arg-type]

    def drain_workers(self) -> None:
        """Wait for running workers (so their runs finish and are recorded), then stop them."""
        while self.running:
            d = self.inbox.take()
            self._stop_worker(d.result.task_id)

    def _stop_worker(self, task_id: str) -> None:
        ref = self.running.pop(task_id, None)
        if ref is not None:
            # Blocking: the worker has delivered, so this only waits for it to leave
            # on_receive; after a run no worker actor outlives it.
            ref.stop(block=True, timeout=30)

    def context_id(self, task_id: str) -> str:
        return f"{self.req.run_id}/{task_id}"

    # -- the flow --

    def execute(self) -> RunOutcome:
        env, rec, req = self.env, self.rec, self.req
        # run_started comes first: once it is committed the run is resumable, so a
        # crash can never leave a half-created Brain agent without its run.
        rec.emit(
            RunStarted(
                run_id=req.run_id,
                agent_id=self.agent_id,
                phase="orchestrate",
                start_node_id=req.parent_node_id,
                rng_seed=rec.rng.getrandbits(63),
                metadata={"prompt": req.prompt, **req.inputs},
            )
        )
        if req.inputs.get("create_agent"):
            rec.emit(
                AgentCreated(
                    agent_id=self.agent_id,
                    agent_type="orchestrator",
                    role="brain",
                    purpose="orchestrate",
                )
            )
        rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="running"))
        history = (
            build_context(env.store.read_active_path(env.session_id, req.parent_node_id))
            if req.parent_node_id
            else []
        )
        self.conv = conv = Conversation(
            rec, parent_id=req.parent_node_id, history=history, activate=True
        )
        conv.append("user", [TextBlock(text=req.prompt)])

        # route
        route_content, _, _ = call_model(
            env,
            rec,
            role="router",
            phase="route",
            messages=[Message(role="user", content=[TextBlock(text=req.prompt)])],
            system=ROUTER_SYSTEM,
        )
        conv.append("assistant", route_content, node_type="plan_instruction")
        try:
            plan = parse_plan(route_content)
        except PlanError as e:
            rec.emit(
                PlanRejected(error=str(e), fallback="answer directly: primary only, no workers")
            )
            plan = FALLBACK_PLAN
        todos = plan.todos()
        context = BrainTaskContext(
            id=req.run_id,
            goal=req.prompt,
            progress=TaskProgress(status="running", total_steps=len(todos)),
            child_context_ids=[self.context_id(w.id) for w in plan.workers],
        )
        rec.emit(TodoPlanned(todos=todos, context=context))
        board = Board(self.tasks, wal_name_for(req.run_id))
        board.plan(plan)
        # Keyed by context id: that is the task_id a WorkerResult carries.
        self.roles = {self.context_id(w.id): w.role for w in plan.workers}

        # clarification gate: stop before any worker starts
        if plan.clarification.required:
            c = plan.clarification
            rec.emit(
                ClarificationRequested(
                    reason=c.reason,
                    question=c.question,
                    missing_fields=c.missing_fields,
                    options=c.options,
                )
            )
            for t in todos:
                self.todo(t.id, "blocked", "waiting for clarification")
            node = conv.append("assistant", [TextBlock(text=c.question)], node_type="system_note")
            rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="idle"))
            rec.emit(
                RunEnded(
                    run_id=req.run_id,
                    status="completed",
                    end_reason="completed",
                    end_node_id=node,
                    turn_count=1,
                    outcome={"status": "needs_clarification"},
                )
            )
            return RunOutcome(
                session_id=env.session_id,
                run_id=req.run_id,
                status="needs_clarification",
                question=c.question,
                active_node_id=node,
            )

        ordered = self._pool(plan, board)

        # primary: the request plus worker summaries, never transcripts
        self.todo("primary", "running")
        board.move("primary", "running")
        conv.append(
            "user", [TextBlock(text=summaries_block(ordered, self.roles))], node_type="child_result"
        )

        def primary(phase: str) -> LoopResult:
            return agent_loop(
                env,
                conv,
                role=plan.primary_role,
                phase=phase,
                system=PRIMARY_SYSTEM,
                tools=env.tools,
                task_id="primary",
                max_turns=env.settings.max_turns,
            )

        answer = primary("primary")
        board.move("primary", "completed", _text(answer.content)[:200])
        self.todo("primary", "completed")
        turns, usage = answer.turns, answer.usage

        # optional review, then a bounded fix loop
        if plan.review:
            iteration = 0
            self.todo("review", "running")
            board.move("review", "running")
            while True:
                review_id = "review" if iteration == 0 else f"review-{iteration + 1}"
                primary_result = WorkerResult(
                    handoff_id="primary",
                    task_id="primary",
                    parent_id=req.run_id,
                    summary=_text(answer.content),
                )
                review = self._run_one(
                    review_id,
                    "reviewer",
                    "Review the primary answer against the request.",
                    [*ordered, primary_result],
                    purpose="review",
                )
                if (
                    review.verdict != "changes_requested"
                    or iteration >= env.settings.max_fix_iterations
                ):
                    break
                iteration += 1
                rec.emit(FixIteration(iteration=iteration, trigger="changes_requested"))
                findings = (
                    "Changes requested by review:\n"
                    + review.summary
                    + "".join(f"\n- {r}" for r in review.risks)
                )
                conv.append("user", [TextBlock(text=findings)], node_type="child_result")
                answer = primary("fix")
                turns, usage = turns + answer.turns, add_usage(usage, answer.usage)
            board.move("review", "completed" if review.status == "completed" else "failed")
            self.todo("review", "completed" if review.status == "completed" else "failed")

        text = _text(answer.content)
        rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="idle"))
        rec.emit(
            RunEnded(
                run_id=req.run_id,
                status="completed",
                end_reason=answer.end_reason,
                end_node_id=conv.tip,
                turn_count=turns,
                usage=usage,
                outcome={"status": "completed"},
            )
        )
        return RunOutcome(
            session_id=env.session_id,
            run_id=req.run_id,
            status="completed",
            answer=text,
            worker_results=ordered,
            active_node_id=conv.tip,
        )

    # -- workers --

    def _handoff(self, task_id: str, role: str, goal: str) -> HandoffPacket:
        return HandoffPacket(
            id=f"{self.req.run_id}/handoff/{task_id}",
            task=AgentTaskContext(
                id=self.context_id(task_id),
                parent_id=self.req.run_id,
                agent_role=role,
                goal=goal,
                progress=TaskProgress(status="pending"),
            ),
            constraints=list(ISOLATION_CONSTRAINTS),
            expected_result=EXPECTED_RESULT,
        )

    def _dispatch(
        self, task_id: str, role: str, goal: str, prior: list[WorkerResult], purpose: str = "worker"
    ) -> None:
        handoff = self._handoff(task_id, role, goal)
        self.rec.emit(HandoffSent(packet=handoff))
        ref = Worker.start(
            self.env,
            handoff,
            self.req.prompt,
            prior,
            self.inbox,
            brain_agent_id=self.agent_id,
            brain_run_id=self.req.run_id,
            purpose=purpose,
        )
        self.running[handoff.task.id] = ref
        ref.tell(StartWorker(handoff_id=handoff.id))

    def _receive(self) -> WorkerResult:
        """Take the next worker result — in recorded order while re-executing — and record it."""
        expected = self.rec.peek()
        wanted = (
            expected.event.result.task_id
            if expected is not None and isinstance(expected.event, WorkerResultReceived)
            else None
        )
        if wanted is not None and wanted not in self.running:
            wanted = None
        d: Delivery = self.inbox.take(wanted)
        self._stop_worker(d.result.task_id)
        result = d.result
        if d.replay_stopped:
            # The worker's own re-execution stopped (its divergence is reported for its
            # run). Replaying, go on with the recorded result so the Brain's run and the
            # other workers are still checked; a recording that ends here ends the Brain
            # too. Resuming, stop: nothing of a diverging recording may be continued.
            recorded = expected is not None and isinstance(expected.event, WorkerResultReceived)
            if self.env.live_allowed:
                raise EndOfRecording(f"resume stopped: worker {result.task_id} did not reproduce")
            if recorded:
                assert expected is not None and isinstance(expected.event, WorkerResultReceived)
                result = expected.event.result
            elif expected is None:
                raise EndOfRecording(f"run {self.req.run_id}: recording ends with a worker out")
            else:
                raise Divergence(
                    self.req.run_id,
                    expected.run_seq,
                    expected.event_type,
                    "worker_result_received",
                    [],
                )
        self.rec.emit(WorkerResultReceived(result=result))
        return result

    def _run_one(
        self, task_id: str, role: str, goal: str, prior: list[WorkerResult], purpose: str
    ) -> WorkerResult:
        self._dispatch(task_id, role, goal, prior, purpose)
        return self._receive()

    def _pool(self, plan: Plan, board: Board) -> list[WorkerResult]:
        """Run the plan's workers, at most ``max_workers`` at once; return results in plan order."""
        env = self.env
        dispatched: set[str] = set()
        blocked_seen: set[str] = set()
        limit = max(1, env.settings.max_workers)

        def state(task_id: str) -> str:
            """Derived from this run's own results, never from the WAL: the WAL may be
            ahead of the log after a crash, and decisions must reproduce."""
            if task_id in self.results:
                return "completed" if self.results[task_id].status == "completed" else "failed"
            if task_id in blocked_seen:
                return "blocked"
            return "running" if task_id in dispatched else "pending"

        def dispatch_ready() -> None:
            for w in plan.workers:
                if len(self.running) >= limit:
                    return
                if w.id in dispatched or w.id in blocked_seen:
                    continue
                if all(state(d) == "completed" for d in w.deps):
                    dispatched.add(w.id)
                    self.todo(w.id, "running")
                    board.move(w.id, "running")
                    self._dispatch(w.id, w.role, w.goal, [self.results[d] for d in w.deps])

        def block_dependents() -> None:
            changed = True
            while changed:
                changed = False
                for w in plan.workers:
                    if w.id in blocked_seen or w.id in dispatched:
                        continue
                    if any(state(d) in ("failed", "blocked") for d in w.deps):
                        blocked_seen.add(w.id)
                        self.todo(w.id, "blocked", "an upstream task failed")
                        changed = True

        dispatch_ready()
        while self.running:
            result = self._receive()
            task_id = result.task_id.rsplit("/", 1)[1]
            self.results[task_id] = result
            ok = result.status == "completed"
            board.move(task_id, "completed" if ok else "failed", result.summary[:200])
            self.todo(task_id, "completed" if ok else "failed")
            block_dependents()
            dispatch_ready()
        ordered = []
        for w in plan.workers:
            if w.id in self.results:
                ordered.append(self.results[w.id])
            elif w.id in blocked_seen:
                ordered.append(
                    msgspec.structs.replace(
                        failed_result(
                            self._handoff(w.id, w.role, w.goal), "blocked by a failed upstream"
                        ),
                        status="blocked",
                        progress=TaskProgress(status="blocked"),
                    )
                )
        return ordered
