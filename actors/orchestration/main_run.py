"""One main run of the Brain, step by step: start → route → gate → pool → primary → fixes.

A :class:`MainRun` lives on the Brain's thread for the duration of one run. Each step
is a method, in flow order; every effect goes through the run's recorder, so the same
steps re-execute a recorded run event for event. What a step writes depends on the
run's recorded flow (``RunInputs.flow``, docs/replay-and-recovery.md): a run recorded
by an older clew re-executes in its own flow.

The last step is the run's bounded fix loop (:class:`FixLoop`): checks and review after
the primary answers. After the primary's answer (and after each fix) the team's checks
run; a failure starts a fix iteration with trigger ``checks_failed``. Then, when the plan
asks for a review, a review worker reads the answer; ``changes_requested`` starts a fix
iteration with that trigger, after which the checks run again and a new review follows.
Both triggers share one bound, ``RunSettings.max_fix_iterations`` (seed 000's
``fix_iteration``). A run with no checks writes exactly the events it wrote before
checks existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from actors.errors import PlanError, RunCancelled, RunParked
from actors.models.tools import ToolRegistry
from actors.orchestration.approvals import PendingApproval
from actors.orchestration.checks import CHECK_PREFIX, Check, execute_check
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
from actors.orchestration.run_plan import RunPlan
from actors.orchestration.worker import cancelled_run_end
from actors.recording.inputs import RunInputs
from actors.recording.recorder import RunRecorder
from actors.tasks.manager import TaskManagerProxy
from eventlog.blocks import ContentBlock, Message, TextBlock, text_of
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
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Usage,
)
from eventlog.ids import review_task_id, worker_agent_id
from eventlog.packets import BrainTaskContext, TaskProgress, WorkerResult
from projections.context import build_context


class RunOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """How a main run ended."""

    session_id: str
    run_id: str
    #: completed | failed | cancelled | waiting | refused | needs_clarification | diverged
    #: | interrupted
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
    """Return an answer's text; a typed answer given as a JSON block reads as its JSON
    (from flow 2, and for ``RunOutcome.answer``, any answer given as JSON)."""
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
        attempt: int = 1,
    ) -> None:
        self.env = env
        env.context = inputs.context  # its workers' too: they share the run's env
        self.tasks = tasks
        self.rec = rec
        self.agent_id = agent_id
        self.run_id = run_id
        self.inputs = inputs
        self.parent_node_id = parent_node_id
        self.attempt = attempt
        self.flow = inputs.flow
        self.conv: Conversation | None = None
        self.pool = WorkerPool(env, rec, agent_id=agent_id, run_id=run_id, request=inputs.prompt)
        self.plan_state = RunPlan(env, tasks, rec)
        # Keyed by worker agent id: that is the task_id a WorkerResult carries.
        self.roles: dict[str, str] = {}
        self.goals: dict[str, str] = {}
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
        plan = self._route(conv)
        while plan.clarification.required:
            answered = self._ask_for_clarification(plan, conv)
            if isinstance(answered, RunOutcome):
                return answered
            # The same run goes on: the router plans again, told the question and answer.
            plan = self._route(conv, answered)
        results = self.pool.run_plan(plan, self.plan_state)
        if self.flow >= 2 and plan.workers:
            self.plan_state.board_node(conv)
        answer = self._guard_output(plan, self._primary(plan, conv, results))
        answer, turns, usage = FixLoop(self, plan, results).execute(answer)
        return self._end(plan, conv, answer, turns, usage, results)

    def answer_text(self, answer: LoopResult, plan: Plan) -> str:
        """Return the text of an answer as the review and the checks read it."""
        typed = self.flow >= 2 or self.env.team.role(plan.primary_role).output is not None
        return _answer_text(answer.content, typed)

    def cancelled(self, e: RunCancelled) -> RunOutcome:
        """End the run as cancelled (its ``run_cancelling`` is recorded): stop the workers,
        cancel the unfinished todos, note it on the conversation, record ``run_ended``."""
        # Replaying, the recording said so while nobody cancelled: the live workers of a
        # resume must stop too.
        self.rec.cancel.cancel(e.reason, e.source)
        self.pool.drain()
        for todo_id, status in dict(self.plan_state.todos.status).items():
            if status not in ("completed", "failed", "blocked", "cancelled"):
                self.plan_state.update(todo_id, "cancelled", e.reason)
                if self.plan_state.board is not None:
                    self.plan_state.move(todo_id, "cancelled")
        node = None
        if self.conv is not None:
            note = TextBlock(text=f"(the run was cancelled: {e.reason})")
            node = self.conv.append("assistant", [note], node_type="system_note")
        self.rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="idle"))
        usage = self.rec.usage if self.flow >= 2 else None
        self.rec.emit(cancelled_run_end(self.run_id, e, node, usage))
        return self._outcome("cancelled", error=e.reason, active_node_id=node)

    def parked(self, e: RunParked) -> RunOutcome:
        """Leave the run open, ``waiting`` (its ``run_waiting`` is recorded); stop the
        workers' actors (a parked worker's run waits too)."""
        self.pool.drain()
        return self._outcome(
            "needs_clarification" if e.question else "waiting",
            question=e.question or None,
            pending=[p for p in e.pending if isinstance(p, PendingApproval)],
            active_node_id=self.conv.tip if self.conv is not None else None,
        )

    def _outcome(self, status: str, **fields: Any) -> RunOutcome:
        return RunOutcome(
            session_id=self.env.session_id, run_id=self.run_id, status=status, **fields
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
                usage=self.rec.usage if self.flow >= 2 else Usage(),
                outcome={"status": "refused", "reason": reason},
            )
        )
        return self._outcome("refused", error=reason, active_node_id=node)

    def _guard_output(self, plan: Plan, answer: LoopResult) -> LoopResult:
        """The output guardrail may reject the primary's answer: it goes into the fix
        loop (at most ``max_fix_iterations`` times), told why."""
        assert self.conv is not None
        for iteration in range(1, self.env.settings.max_fix_iterations + 1):
            text = self.answer_text(answer, plan)
            reason = guardrail(self.rec, self.env.hooks, "output_guardrail", text)
            if reason is None:
                break
            self.rec.emit(FixIteration(iteration=iteration, trigger="output_guardrail"))
            why = f"Your answer was rejected: {reason}\nAnswer again, fixing that."
            self.conv.append("user", [TextBlock(text=why)], node_type="child_result")
            fixed = self.answer(plan, "fix")
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
        """Record the run's start and the user's message; return the Brain's conversation.

        A retry answers the failed run's user message again: it starts under that node
        and appends no second copy of it (``RunInputs.user_node_id``).
        """
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
                attempt=self.attempt,
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
        # Committed together, at once: from here the run is resumable (a crash before its
        # first model call still leaves a run to resume, and a queued run taken by
        # `clew serve` is never lost).
        rec.flush()
        path = (
            env.store.read_active_path(env.session_id, self.parent_node_id)
            if self.parent_node_id
            else []
        )
        # The session's memo builds only what the previous run added (same messages).
        artifacts: frozenset[str] | None = None
        if env.memo is not None:
            history, artifacts = env.memo.history(path)
        else:
            history = build_context(path)
        self.conv = conv = Conversation(
            rec,
            parent_id=self.parent_node_id,
            history=history,
            activate=True,
            context=guard_for(env),
        )
        if artifacts is not None and history:
            conv.artifact_scan = (conv.messages, len(history), history[-1], artifacts)
        if self.inputs.user_node_id is None:
            conv.append("user", [TextBlock(text=self.inputs.prompt)])
        observe(rec, env.hooks, "on_run_start", env.session_id, self.run_id, self.inputs.prompt)
        return conv

    def _route(self, conv: Conversation, followup: list[Message] | None = None) -> Plan:
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
            system=router_system(team, self.flow),
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
        if self.flow >= 2 and plan.review and plan.primary_role == team.review_role():
            # The primary is the review role already: no second look by the same role.
            plan = plan.model_copy(update={"review": False})
        todos = plan.todos(team.review_role(), self.flow)
        context = BrainTaskContext(
            id=self.run_id,
            goal=prompt,
            progress=TaskProgress(status="running", total_steps=len(todos)),
            child_context_ids=[worker_agent_id(self.run_id, w.id) for w in plan.workers],
        )
        name = self.plan_state.choose_name(plan, prompt) if self.flow >= 2 else ""
        self.plan_state.start(todos, context, name)
        self.roles = {worker_agent_id(self.run_id, w.id): w.role for w in plan.workers}
        self.goals = {worker_agent_id(self.run_id, w.id): w.goal for w in plan.workers}
        if self.flow >= 2:
            self.plan_state.board_node(conv)
        return plan

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
        for t in self.plan_state.todos.todos if self.flow >= 2 else plan.todos():
            self.plan_state.update(t.id, "blocked", "waiting for clarification")
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
        outcome: dict[str, object] = {"status": "needs_clarification"}
        if self.flow >= 2:
            outcome["question"] = c.question
        self.rec.emit(
            RunEnded(
                run_id=self.run_id,
                status="completed",
                end_reason="completed",
                end_node_id=node,
                turn_count=1,
                usage=self.rec.usage if self.flow >= 2 else Usage(),
                outcome=outcome,
            )
        )
        return self._outcome("needs_clarification", question=c.question, active_node_id=node)

    def answer(self, plan: Plan, phase: str) -> LoopResult:
        """Run the primary's agent loop on the Brain's conversation (answer or fix)."""
        team = self.env.team
        role = team.role(plan.primary_role)
        tools, builtins = role.tools, dict[str, Builtin]()
        if self.dispatch_limit:
            tools = ToolRegistry([*(t for t, _ in role.tools.with_specs()), DispatchTool(team)])
            builtins[DispatchTool.name] = self.dispatcher
        assert self.conv is not None
        return agent_loop(
            self.env,
            self.conv,
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

    def _primary(self, plan: Plan, conv: Conversation, results: list[WorkerResult]) -> LoopResult:
        """The primary answers from the request plus worker summaries, never transcripts.

        From flow 2 each worker's goal and progress come with its summary (seed 000); from
        flow 4 a plan of no workers repeats the request there.
        """
        self.plan_state.update("primary", "running")
        self.plan_state.move("primary", "running")
        goals = self.goals if self.flow >= 2 else None
        request = self.inputs.prompt if self.flow >= 4 else None
        summaries = summaries_block(results, self.roles, goals, request)
        conv.append("user", [TextBlock(text=summaries)], node_type="child_result")
        answer = self.answer(plan, "primary")
        self.plan_state.move("primary", "completed", _text(answer.content)[:200])
        self.plan_state.update("primary", "completed")
        return answer

    def _end(
        self,
        plan: Plan,
        conv: Conversation,
        answer: LoopResult,
        turns: int,
        usage: Usage,
        results: list[WorkerResult],
    ) -> RunOutcome:
        """Record the run's end (``run_ended`` is always its last event); return the outcome.

        From flow 2 ``run_ended`` carries the run's whole usage (the router's call
        included: the sum of its ``token_usage``), and its outcome the final answer
        (``summary``) and the workers' results (seed 000's ``run_end``).
        """
        spec = self.env.team.role(plan.primary_role).output
        text = _answer_text(answer.content, True)
        outcome: dict[str, object] = {"status": "completed"}
        if self.flow >= 2:
            usage = self.rec.usage
            outcome["summary"] = text
            outcome["workers"] = [
                {"task_id": r.task_id, "status": r.status, "summary": r.summary} for r in results
            ]
        self.rec.emit(AgentStatusChanged(agent_id=self.agent_id, status="idle"))
        self.rec.emit(
            RunEnded(
                run_id=self.run_id,
                status="completed",
                end_reason=answer.end_reason,
                end_node_id=conv.tip,
                turn_count=turns,
                usage=usage,
                outcome=outcome,
            )
        )
        output = None
        if spec is not None and answer.end_reason == "completed":
            output = spec.value(answer.content)  # validated by the loop already
        return RunOutcome(
            session_id=self.env.session_id,
            run_id=self.run_id,
            status="completed",
            answer=text,
            worker_results=results,
            active_node_id=conv.tip,
            output=output,
        )


def run_checks(
    env: SessionEnv, rec: RunRecorder, checks: Sequence[Check], answer: str, node_id: str | None
) -> list[str]:
    """Run every check on ``answer`` (the primary's reply, node ``node_id``) through the
    recorder; return one line per failed check (empty: all passed)."""
    failures = []
    for check in checks:
        call_id = rec.next_id("chk")
        started = ToolCallStarted(
            tool_call_id=call_id,
            tool_name=CHECK_PREFIX + check.name,
            arguments={"answer_node_id": node_id},
            idempotent=True,
        )

        def live(check: Check = check, call_id: str = call_id) -> ToolCallFinished | ToolFailed:
            return execute_check(check, answer, env.project_dir, call_id)

        outcome = rec.tool_call(started, live, "retry")
        if isinstance(outcome, ToolFailed):
            failures.append(f"{check.name}: {outcome.error_type}: {outcome.message}")
        elif outcome.is_error:
            failures.append(f"{check.name}: {text_of(outcome.content)}")
    return failures


class FixLoop:
    """Checks, review and fixes of one main run's answer (on the Brain's thread)."""

    def __init__(self, run: MainRun, plan: Plan, results: list[WorkerResult]) -> None:
        self.run = run
        self.plan = plan
        self.results = results
        self.iteration = 0
        self.reviews = 0

    def _fix(
        self, trigger: str, findings: str, answer: LoopResult, total: tuple[int, Usage]
    ) -> tuple[LoopResult, tuple[int, Usage]]:
        """Record a fix iteration, hand the findings to the primary; return its new answer."""
        run = self.run
        self.iteration += 1
        run.rec.emit(FixIteration(iteration=self.iteration, trigger=trigger))
        assert run.conv is not None
        run.conv.append("user", [TextBlock(text=findings)], node_type="child_result")
        answer = run.answer(self.plan, "fix")
        return answer, (total[0] + answer.turns, add_usage(total[1], answer.usage))

    def execute(self, answer: LoopResult) -> tuple[LoopResult, int, Usage]:
        """Run checks and review until both pass or the bound is reached; return the last
        answer with the turns and usage of every answer."""
        run = self.run
        bound = run.env.settings.max_fix_iterations
        total = (answer.turns, answer.usage)
        checks = run.env.team.checks
        review: WorkerResult | None = None
        while True:
            if checks:
                text = run.answer_text(answer, self.plan)
                failed = run_checks(run.env, run.rec, checks, text, answer.final_node_id)
                if failed and self.iteration < bound:
                    findings = "Checks failed:" + "".join(f"\n- {f}" for f in failed)
                    answer, total = self._fix("checks_failed", findings, answer, total)
                    continue
            if not self.plan.review:
                break
            review = self._review(answer)
            if review.verdict != "changes_requested" or self.iteration >= bound:
                break
            findings = (
                "Changes requested by review:\n"
                + review.summary
                + "".join(f"\n- {r}" for r in review.risks)
            )
            answer, total = self._fix("changes_requested", findings, answer, total)
        if review is not None:
            verdict = "completed" if review.status == "completed" else "failed"
            run.plan_state.move("review", verdict)
            run.plan_state.update("review", verdict)
        return answer, total[0], total[1]

    def _review(self, answer: LoopResult) -> WorkerResult:
        """Have a review worker read the answer; the first review moves its todo."""
        run = self.run
        if not self.reviews:
            run.plan_state.update("review", "running")
            run.plan_state.move("review", "running")
        primary_result = WorkerResult(
            handoff_id="primary",
            task_id="primary",
            parent_id=run.run_id,
            summary=run.answer_text(answer, self.plan),
        )
        review = run.pool.run_one(
            review_task_id(self.reviews),
            run.env.team.review_role(),
            "Review the primary answer against the request.",
            [*self.results, primary_result],
            purpose="review",
        )
        self.reviews += 1
        return review
