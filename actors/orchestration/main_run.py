"""One main run of the Brain, step by step: start → route → gate → pool → primary → fixes.

A :class:`MainRun` lives on the Brain's thread for the duration of one run. Each step
is a method, in flow order; every effect goes through the run's recorder, so the same
steps re-execute a recorded run event for event. What a step writes depends on the
run's recorded flow (``RunInputs.flow``, docs/replay-and-recovery.md): a run recorded
by an older clew re-executes in its own flow.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.errors import PlanError
from actors.models.tools import ToolRegistry
from actors.orchestration.dispatch import Dispatcher, DispatchTool
from actors.orchestration.env import SessionEnv
from actors.orchestration.fixes import FixLoop
from actors.orchestration.loop import (
    AgentSpec,
    Builtin,
    Conversation,
    LoopResult,
    agent_loop,
    call_model,
)
from actors.orchestration.plan import Plan, json_payload, parse_plan
from actors.orchestration.pool import WorkerPool
from actors.orchestration.prompts import primary_system, router_system, summaries_block
from actors.orchestration.run_plan import RunPlan
from actors.replay.inputs import RunInputs
from actors.replay.recorder import RunRecorder
from actors.tasks.manager import TaskManagerProxy
from eventlog.blocks import ContentBlock, Message, TextBlock
from eventlog.events import (
    AgentCreated,
    AgentStatusChanged,
    ClarificationRequested,
    PlanRejected,
    RunEnded,
    RunStarted,
    Usage,
)
from eventlog.ids import worker_agent_id
from eventlog.packets import BrainTaskContext, TaskProgress, WorkerResult
from projections.context import build_context


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
    #: The primary's validated typed output (an instance of its role's ``output`` model);
    #: None when the primary role has none.
    output: Any = None


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
        plan = self._route(conv)
        if plan.clarification.required:
            return self._ask_for_clarification(plan, conv)
        results = self.pool.run_plan(plan, self.plan_state)
        if self.flow >= 2 and plan.workers:
            self.plan_state.board_node(conv)
        answer = self._primary(plan, conv, results)
        answer, turns, usage = FixLoop(self, plan, results).execute(answer)
        return self._end(plan, conv, answer, turns, usage, results)

    def answer_text(self, answer: LoopResult, plan: Plan) -> str:
        """Return the text of an answer as the review and the checks read it."""
        typed = self.flow >= 2 or self.env.team.role(plan.primary_role).output is not None
        return _answer_text(answer.content, typed)

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
        history = (
            build_context(env.store.read_active_path(env.session_id, self.parent_node_id))
            if self.parent_node_id
            else []
        )
        self.conv = conv = Conversation(
            rec, parent_id=self.parent_node_id, history=history, activate=True
        )
        if self.inputs.user_node_id is None:
            conv.append("user", [TextBlock(text=self.inputs.prompt)])
        return conv

    def _route(self, conv: Conversation) -> Plan:
        """Ask the router for a plan (a bad one falls back to "primary only"); record it."""
        prompt = self.inputs.prompt
        team = self.env.team
        content, _, _ = call_model(
            self.env,
            self.rec,
            role="router",
            phase="route",
            messages=[Message(role="user", content=[TextBlock(text=prompt)])],
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

    def _ask_for_clarification(self, plan: Plan, conv: Conversation) -> RunOutcome:
        """The clarification gate: stop before any worker starts, with the question."""
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
        return RunOutcome(
            session_id=self.env.session_id,
            run_id=self.run_id,
            status="needs_clarification",
            question=c.question,
            active_node_id=node,
        )

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
                system=primary_system(team, role, self.dispatch_limit),
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

        From flow 2 each worker's goal and progress come with its summary (seed 000).
        """
        self.plan_state.update("primary", "running")
        self.plan_state.move("primary", "running")
        goals = self.goals if self.flow >= 2 else None
        summaries = summaries_block(results, self.roles, goals)
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
