"""The primary's built-in ``dispatch`` tool: a worker of a role, run to completion mid-run.

Every run goes through ``run_session``: it replays identically (the dispatched workers
re-execute against their recordings) and verifies.
"""

from __future__ import annotations

from typing import Any

import pytest
from _runtime_helpers import route, rule, run_session, scripted

from actors.orchestration.team import Role, Team
from actors.recording.inputs import RunInputs, RunSettings
from actors.runtime.runtime import Runtime
from eventlog.blocks import JsonBlock
from eventlog.events import (
    AgentCreated,
    HandoffSent,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    WorkerResultReceived,
)

PROMPT = "Plan the launch."

TEAM = Team(
    roles=[
        Role("lead", description="writes the plan"),
        Role("researcher", description="finds facts"),
        Role("critic", description="finds flaws"),
    ],
    primary="lead",
)


def dispatching(*calls: dict[str, Any]) -> Any:
    """A model whose lead dispatches ``calls`` (one per turn), then answers."""
    replies = [{"text": "(turn 0 is never asked)"}]
    replies += [{"tool_calls": [{"name": "dispatch", "arguments": c}]} for c in calls]
    replies.append({"text": "The plan, with the facts."})
    return scripted(
        route(primary_role="lead"),
        rule("lead", *replies),
        rule("researcher", {"json": {"summary": "Launch day is a Tuesday."}}),
    )


def test_dispatch_runs_a_worker_of_the_role_and_returns_its_result(rt: Runtime) -> None:
    model = dispatching({"role": "researcher", "goal": "Find the launch day"})

    s = run_session(rt, PROMPT, model, team=TEAM)

    brain = s.brain_run
    steps = ["tool_call_started", "handoff_sent", "worker_result_received", "tool_call_finished"]
    assert steps == [t for t in s.types(brain) if t in steps]
    (handoff,) = s.of(HandoffSent)
    assert (s.ctx("dispatch-1"), "researcher", "Find the launch day") == (
        handoff.packet.task.id,
        handoff.packet.task.agent_role,
        handoff.packet.task.goal,
    )
    created = [a for a in s.of(AgentCreated) if a.agent_id == s.ctx("dispatch-1")]
    assert ["dispatch"] == [a.purpose for a in created]
    (started,) = [r for r in s.of(RunStarted) if r.run_id == s.worker_run("dispatch-1")]
    assert "dispatch" == started.phase
    (received,) = s.of(WorkerResultReceived)
    (finished,) = s.of(ToolCallFinished, brain)
    (block,) = finished.content
    assert isinstance(block, JsonBlock)
    assert "Launch day is a Tuesday." == block.data["summary"] == received.result.summary
    assert not finished.is_error
    assert "The plan, with the facts." == s.outcome.answer


def test_the_dispatch_tool_offers_the_other_roles_of_the_team(rt: Runtime) -> None:
    model = dispatching()

    s = run_session(rt, PROMPT, model, team=TEAM)

    lead = next(r for r in s.requests() if r.role == "lead")
    assert ["dispatch"] == [t.name for t in lead.tools]
    assert "`dispatch` tool (at most 4 times)" in lead.system


@pytest.mark.parametrize(
    ("call", "error_type"),
    [
        ({"role": "lead", "goal": "Do it yourself"}, "UnknownRole"),  # the primary's own
        ({"role": "ghost", "goal": "Haunt"}, "UnknownRole"),
        ({"role": "researcher"}, "ValidationError"),
    ],
    ids=["own-role", "unknown-role", "no-goal"],
)
def test_a_bad_dispatch_is_a_tool_failure_and_no_worker_starts(
    rt: Runtime, call: dict[str, Any], error_type: str
) -> None:
    s = run_session(rt, PROMPT, dispatching(call), team=TEAM)

    (failed,) = s.of(ToolFailed)
    assert error_type == failed.error_type
    assert [] == s.of(HandoffSent)
    assert "completed" == s.outcome.status


def test_dispatches_past_the_bound_fail_and_the_bound_is_recorded(rt: Runtime) -> None:
    go = {"role": "researcher", "goal": "Find the launch day"}
    settings = RunSettings(max_dispatches=1)

    s = run_session(rt, PROMPT, dispatching(go, go), team=TEAM, settings=settings)

    assert [s.ctx("dispatch-1")] == [h.packet.task.id for h in s.of(HandoffSent)]
    (failed,) = s.of(ToolFailed)
    assert ("DispatchLimit", "at most 1 dispatches per run") == (
        failed.error_type,
        failed.message,
    )
    (run_started,) = [r for r in s.of(RunStarted) if r.run_id == s.brain_run]
    assert 1 == RunInputs.from_metadata(run_started.metadata).settings.max_dispatches


@pytest.mark.parametrize(
    ("team", "settings"),
    [(None, None), (TEAM, RunSettings(max_dispatches=0))],
    ids=["default-team", "bound-zero"],
)
def test_without_a_catalogue_or_with_a_zero_bound_there_is_no_dispatch_tool(
    rt: Runtime, team: Team | None, settings: RunSettings | None
) -> None:
    model = scripted(route(primary_role="lead"), rule("lead", {"text": "Alone."}))

    s = run_session(rt, PROMPT, model, team=team, settings=settings)

    lead = next(r for r in s.requests() if r.role == "lead")
    assert ([], False) == (lead.tools, "dispatch" in lead.system)
    assert [] == s.of(ToolCallStarted)
