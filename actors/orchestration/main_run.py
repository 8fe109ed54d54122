"""One main run of the Brain, step by step: start → route → gate → pool → primary → review.

A :class:`MainRun` lives on the Brain's thread for the duration of one run. Each step
is a method, in flow order; every effect goes through the run's recorder, so the same
steps re-execute a recorded run event for event.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.errors import PlanError, RunCancelled, RunParked
from actors.models.tools import ToolRegistry
from actors.orchestration.approvals import PendingApproval
from actors.orchestration.compaction import guard_for
from actors.orchestration.dispatch import Dispatcher, DispatchTool
from actors.orchestration.env import SessionEnv
from actors.orchestration.hooks import guardrail, observe
from actors.orchestration.instructions import support_section
from actors.orchestration.loop import (
    AgentSpec,
    Builtin,
    Conversation,
    LoopResult,
    add_usage,
    agent_loop,
    call_model,
)
from actors.orchestration.plan import Plan, json_payload, parse_plan
from actors.orchestration.pool import WorkerPool
from actors.orchestration.prompts import primary_system, router_system, summaries_block
from actors.orchestration.worker import cancelled_run_end
from actors.replay.inputs import RunInputs
from actors.replay.recorder import RunRecorder
from actors.tasks.manager import TaskManagerProxy
from actors.tasks.run_board import RunTaskBoard
from eventlog.blocks import ContentBlock, Message, TextBlock
from eventlog.events import (
    AgentCreated,
    AgentStatusChanged,
    ClarificationAnswered,
    ClarificationRequested,
    FixIteration,
    PlanRejected,
    RunEnded,
    RunStarted,
    RunWaiting,
    TodoPlanned,
    Usage,
)
from eventlog.ids import review_task_id, wal_name_for, worker_agent_id
from eventlog.packets import BrainTaskContext, TaskProgress, WorkerResult
from projections.context import build_context


class RunOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """How a main run ended."""

    session_id: str
    run_id: str
    #: completed | failed | cancelled | waiting | needs_clarification | diverged | interrupted
    status: str
    answer: str = ""
    question: str | None = None
    worker_results: list[WorkerResult] = msgspec.field(default_factory=list)
    error: str | None = None
    active_node_id: str | None = None
    #: The primary's validated typed output (an instance of its role's ``output`` model);
    #: None when the primary role has none.
    output: Any = None
    #: The tool calls waiting for a person's decision (status ``waiting``).
    pending: list[PendingApproval] = msgspec.field(default_factory=list)


def _text(content: list[ContentBlock]) -> str:
    return "".join(b.text for b in content if isinstance(b, TextBlock)).strip()


def _answer_text(content: list[ContentBlock], typed: bool) -> str:
    """Return an answer's text; a typed answer given as a JSON block reads as its JSON."""
    text = _text(content)
    if text or not typed:
        return text
    try:
        return msgspec.json.encode(json_payload(content)).decode()
    except PlanError:
        return ""


class MainRun:
    """The state of one main run while it executes (lives on the Brain's thread)."""

    def __init__(
        self,
        env: SessionEnv,
        tasks: TaskManagerProxy,
        rec: RunRecorder,
        agent_id: str,
        run_id: str,
        inputs: RunInputs,
        parent_node_id: str | None,
    ) -> None:
        self.env = env
        env.context = inputs.context  # its workers' too: they share the run's env
        self.tasks = tasks
        self.rec = rec
        self.agent_id = agent_id
        self.run_id = run_id
        self.inputs = inputs
        self.parent_node_id = parent_node_id
        self.conv: Conversation | None = None
        self.board: RunTaskBoard | None = None
        self.pool = WorkerPool(env, rec, agent_id=agent_id, run_id=run_id, request=inputs.prompt)
        # Keyed by worker agent id: that is the task_id a WorkerResult carries.
        self.roles: dict[str, str] = {}
        team = env.team
        limit = env.settings.max_dispatches
        # Agents as tools: only a team with a catalogue has roles to dispatch.
        self.dispatch_limit = limit if team.catalogued and team.dispatchable() else 0
        self.dispatcher = Dispatcher(self.pool, team, self.dispatch_limit)

    def execute(self) -> RunOutcome:
        """Run the flow; return how it ended."""
        conv = self._start()
        refused = guardrail(self.rec, self.env.hooks, "input_guardrail", self.inputs.prompt)
        if refused is not None:
            return self._refused(conv, refused)
        plan, board = self._route(conv)
        while plan.clarification.required:
            answered = self._ask_for_clarification(plan, conv)
            if isinstance(answered, RunOutcome):
                return answered
            # The same run goes on: the router plans again, told the question and answer.
            plan, board = self._route(conv, answered)
        results = self.pool.run_plan(plan, board)
        answer = self._guard_output(plan, conv, self._primary(plan, board, conv, results))
        turns, usage = answer.turns, answer.usage
        if plan.review:
            answer, turns, usage = self._review(plan, board, conv, results, answer)
        return self._end(plan, conv, answer, turns, usage, results)

    def _typed(self, plan: Plan) -> bool:
        """True when the primary's role has typed output."""
        return self.env.team.role(plan.primary_role).output is not None

    def _todo(self, todo_id: str, status: str, note: str = "") -> None:
        self.pool.todo(todo_id, status, note)

    def cancelled(self, e: RunCancelled) -> RunOutcome:
        """End the run as cancelled (its ``run_cancelling`` is recorded): stop the workers,
        cancel the unfinished todos, note it on the conversation, record ``run_ended``."""
        # Replaying, the recording said so while nobody cancelled: the live workers of a
        # resume must stop too.
        self.rec.cancel.cancel(e.reason, e.source)
        self.pool.drain()
        for todo_id, status in self.pool.todo_status.items():
            if status not in ("completed", "failed", "blocked", "cancelled"):
                self._todo(todo_id, "cancelled", e.reason)
                if self.board is not None:
                    self.board.move(todo_id, "cancelled")
        node = None
        if self.conv is not None:
            note = TextBlock(text=f"(the run was cancelled: {e.reason})")
            node = self.conv.append("assistant", [note], node_type="system_note")
        self.rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="idle"))
        self.rec.emit(cancelled_run_end(self.run_id, e, node))
        return RunOutcome(
            session_id=self.env.session_id,
            run_id=self.run_id,
            status="cancelled",
            error=e.reason,
            active_node_id=node,
        )

    def parked(self, e: RunParked) -> RunOutcome:
        """Leave the run open, ``waiting`` (its ``run_waiting`` is recorded); stop the
        workers' actors (a parked worker's run waits too)."""
        self.pool.drain()
        return RunOutcome(
            session_id=self.env.session_id,
            run_id=self.run_id,
            status="needs_clarification" if e.question else "waiting",
            question=e.question or None,
            pending=[p for p in e.pending if isinstance(p, PendingApproval)],
            active_node_id=self.conv.tip if self.conv is not None else None,
        )

    def _refused(self, conv: Conversation, reason: str) -> RunOutcome:
        """The input guardrail refused the prompt: end the run ``refused`` (recorded)."""
        note = TextBlock(text=f"(the request was refused: {reason})")
        node = conv.append("assistant", [note], node_type="system_note")
        self.rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="idle"))
        self.rec.emit(
            RunEnded(
                run_id=self.run_id,
                status="refused",
                end_reason="failed",
                end_node_id=node,
                outcome={"status": "refused", "reason": reason},
            )
        )
        return RunOutcome(
            session_id=self.env.session_id,
            run_id=self.run_id,
            status="refused",
            error=reason,
            active_node_id=node,
        )

    def _guard_output(self, plan: Plan, conv: Conversation, answer: LoopResult) -> LoopResult:
        """The output guardrail may reject the primary's answer: it goes into the fix
        loop (at most ``max_fix_iterations`` times), told why."""
        for iteration in range(1, self.env.settings.max_fix_iterations + 1):
            text = _answer_text(answer.content, self._typed(plan))
            reason = guardrail(self.rec, self.env.hooks, "output_guardrail", text)
            if reason is None:
                break
            self.rec.emit(FixIteration(iteration=iteration, trigger="output_guardrail"))
            why = f"Your answer was rejected: {reason}\nAnswer again, fixing that."
            conv.append("user", [TextBlock(text=why)], node_type="child_result")
            fixed = self._answer(plan, conv, "fix")
            answer = LoopResult(
                fixed.content,
                answer.turns + fixed.turns,
                add_usage(answer.usage, fixed.usage),
                fixed.end_reason,
                fixed.final_node_id,
            )
        return answer

    # --- the steps, in flow order --------------------------------------------------------

    def _start(self) -> Conversation:
        """Record the run's start and the user's message; return the Brain's conversation."""
        rec, env = self.rec, self.env
        # run_started comes first: once it is committed the run is resumable, so a crash
        # can never leave a half-created Brain agent without its run.
        rec.emit(
            RunStarted(
                run_id=self.run_id,
                agent_id=self.agent_id,
                phase="orchestrate",
                start_node_id=self.parent_node_id,
                rng_seed=rec.rng.getrandbits(63),
                metadata=self.inputs.to_metadata(),
            )
        )
        if self.inputs.create_agent:
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
            build_context(env.store.read_active_path(env.session_id, self.parent_node_id))
            if self.parent_node_id
            else []
        )
        self.conv = conv = Conversation(
            rec,
            parent_id=self.parent_node_id,
            history=history,
            activate=True,
            context=guard_for(env),
        )
        conv.append("user", [TextBlock(text=self.inputs.prompt)])
        observe(rec, env.hooks, "on_run_start", env.session_id, self.run_id, self.inputs.prompt)
        return conv

    def _route(
        self, conv: Conversation, followup: list[Message] | None = None
    ) -> tuple[Plan, RunTaskBoard]:
        """Ask the router for a plan (a bad one falls back to "primary only"); record it.

        ``followup``: the clarifying question and its answer, after the request."""
        prompt = self.inputs.prompt
        team = self.env.team
        content, _, _ = call_model(
            self.env,
            self.rec,
            role="router",
            phase="route",
            messages=[Message(role="user", content=[TextBlock(text=prompt)]), *(followup or [])],
            system=router_system(team),
            settings=team.router_role().settings,
        )
        conv.append("assistant", content, node_type="plan_instruction")
        try:
            plan = team.fit(parse_plan(content))
        except PlanError as e:
            self.rec.emit(
                PlanRejected(error=str(e), fallback="answer directly: primary only, no workers")
            )
            plan = team.fallback_plan()
        todos = plan.todos(team.review_role())
        context = BrainTaskContext(
            id=self.run_id,
            goal=prompt,
            progress=TaskProgress(status="running", total_steps=len(todos)),
            child_context_ids=[worker_agent_id(self.run_id, w.id) for w in plan.workers],
        )
        self.rec.emit(TodoPlanned(todos=todos, context=context))
        self.pool.todo_status = {t.id: "pending" for t in todos}
        self.board = board = RunTaskBoard(self.tasks, wal_name_for(self.run_id))
        board.plan(todos)
        self.roles = {worker_agent_id(self.run_id, w.id): w.role for w in plan.workers}
        return plan, board

    def _ask_for_clarification(self, plan: Plan, conv: Conversation) -> RunOutcome | list[Message]:
        """The clarification gate: wait for an answer before any worker starts.

        Returns the question and the answer (as router messages) once answered. A run
        recorded before clarifications were waits ended here: re-executed, it ends the
        same way (its ``agent_status_changed`` follows the question's note).

        Raises:
            RunParked: the run waits for the answer.
        """
        c = plan.clarification
        self.rec.emit(
            ClarificationRequested(
                reason=c.reason,
                question=c.question,
                missing_fields=c.missing_fields,
                options=c.options,
            )
        )
        for t in plan.todos():
            self._todo(t.id, "blocked", "waiting for clarification")
        node = conv.append("assistant", [TextBlock(text=c.question)], node_type="system_note")
        nxt = self.rec.peek()
        if nxt is None or not isinstance(nxt.event, AgentStatusChanged):
            waiting = RunWaiting(run_id=self.run_id, reason="clarification", question=c.question)
            self.rec.wait_point(waiting, [])
            answered = self.rec.take_recorded(ClarificationAnswered, lambda _: True)
            self.rec.go_on(answered is not None, [], c.question)
            assert answered is not None
            conv.append("user", [TextBlock(text=answered.answer)])
            return [
                Message(role="assistant", content=[TextBlock(text=c.question)]),
                Message(role="user", content=[TextBlock(text=answered.answer)]),
            ]
        self.rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="idle"))
        self.rec.emit(
            RunEnded(
                run_id=self.run_id,
                status="completed",
                end_reason="completed",
                end_node_id=node,
                turn_count=1,
                outcome={"status": "needs_clarification"},
            )
        )
        return RunOutcome(
            session_id=self.env.session_id,
            run_id=self.run_id,
            status="needs_clarification",
            question=c.question,
            active_node_id=node,
        )

    def _answer(self, plan: Plan, conv: Conversation, phase: str) -> LoopResult:
        team = self.env.team
        role = team.role(plan.primary_role)
        tools, builtins = role.tools, dict[str, Builtin]()
        if self.dispatch_limit:
            tools = ToolRegistry([*(t for t, _ in role.tools.with_specs()), DispatchTool(team)])
            builtins[DispatchTool.name] = self.dispatcher
        return agent_loop(
            self.env,
            conv,
            AgentSpec(
                role=plan.primary_role,
                phase=phase,
                system=primary_system(
                    team, role, self.dispatch_limit, support_section(self.env.context)
                ),
                tools=tools,
                task_id="primary",
                max_turns=self.env.settings.max_turns,
                settings=role.settings,
                output=role.output,
                builtins=builtins,
            ),
        )

    def _primary(
        self,
        plan: Plan,
        board: RunTaskBoard,
        conv: Conversation,
        results: list[WorkerResult],
    ) -> LoopResult:
        """The primary answers from the request plus worker summaries, never transcripts."""
        self._todo("primary", "running")
        board.move("primary", "running")
        summaries = summaries_block(results, self.roles)
        conv.append("user", [TextBlock(text=summaries)], node_type="child_result")
        answer = self._answer(plan, conv, "primary")
        board.move("primary", "completed", _text(answer.content)[:200])
        self._todo("primary", "completed")
        return answer

    def _review(
        self,
        plan: Plan,
        board: RunTaskBoard,
        conv: Conversation,
        results: list[WorkerResult],
        answer: LoopResult,
    ) -> tuple[LoopResult, int, Usage]:
        """A review worker checks the answer; changes requested start a bounded fix loop."""
        turns, usage = answer.turns, answer.usage
        iteration = 0
        self._todo("review", "running")
        board.move("review", "running")
        while True:
            primary_result = WorkerResult(
                handoff_id="primary",
                task_id="primary",
                parent_id=self.run_id,
                summary=_answer_text(answer.content, self._typed(plan)),
            )
            review = self.pool.run_one(
                review_task_id(iteration),
                self.env.team.review_role(),
                "Review the primary answer against the request.",
                [*results, primary_result],
                purpose="review",
            )
            if (
                review.verdict != "changes_requested"
                or iteration >= self.env.settings.max_fix_iterations
            ):
                break
            iteration += 1
            self.rec.emit(FixIteration(iteration=iteration, trigger="changes_requested"))
            findings = (
                "Changes requested by review:\n"
                + review.summary
                + "".join(f"\n- {r}" for r in review.risks)
            )
            conv.append("user", [TextBlock(text=findings)], node_type="child_result")
            answer = self._answer(plan, conv, "fix")
            turns, usage = turns + answer.turns, add_usage(usage, answer.usage)
        verdict = "completed" if review.status == "completed" else "failed"
        board.move("review", verdict)
        self._todo("review", verdict)
        return answer, turns, usage

    def _end(
        self,
        plan: Plan,
        conv: Conversation,
        answer: LoopResult,
        turns: int,
        usage: Usage,
        results: list[WorkerResult],
    ) -> RunOutcome:
        """Record the run's end (``run_ended`` is always its last event); return the outcome."""
        self.rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="idle"))
        self.rec.emit(
            RunEnded(
                run_id=self.run_id,
                status="completed",
                end_reason=answer.end_reason,
                end_node_id=conv.tip,
                turn_count=turns,
                usage=usage,
                outcome={"status": "completed"},
            )
        )
        output = None
        spec = self.env.team.role(plan.primary_role).output
        if spec is not None and answer.end_reason == "completed":
            output = spec.value(answer.content)  # validated by the loop already
        return RunOutcome(
            session_id=self.env.session_id,
            run_id=self.run_id,
            status="completed",
            answer=_answer_text(answer.content, spec is not None),
            worker_results=results,
            active_node_id=conv.tip,
            output=output,
        )
