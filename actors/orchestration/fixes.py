"""The bounded fix loop of a main run: checks and review after the primary answers.

After the primary's answer (and after each fix) the team's checks run; a failure starts
a fix iteration with trigger ``checks_failed``. Then, when the plan asks for a review, a
review worker reads the answer; ``changes_requested`` starts a fix iteration with that
trigger, after which the checks run again and a new review follows. Both triggers share
one bound, ``RunSettings.max_fix_iterations`` (seed 000's ``fix_iteration``). A run
with no checks writes exactly the events it wrote before checks existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from actors.orchestration.checks import CHECK_PREFIX, Check, execute_check
from actors.orchestration.env import SessionEnv
from actors.orchestration.loop import LoopResult, add_usage
from actors.orchestration.plan import Plan
from actors.replay.recorder import RunRecorder
from eventlog.blocks import TextBlock, text_of
from eventlog.events import (
    FixIteration,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Usage,
)
from eventlog.ids import review_task_id
from eventlog.packets import WorkerResult

if TYPE_CHECKING:
    from actors.orchestration.main_run import MainRun


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
