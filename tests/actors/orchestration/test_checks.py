"""A team's checks: a failed one starts a fix with trigger ``checks_failed`` (seed 000).

Issue 22, item 7. Each check's run is recorded like a tool call, so a replay takes its
outcome and never runs it.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import pytest
from _runtime_helpers import route, rule, run_session, scripted

from actors.errors import TeamError, UsageError
from actors.orchestration.checks import Check
from actors.orchestration.team import Role, Team
from actors.recording.inputs import RunInputs, RunSettings
from actors.runtime.config import RunConfig, team_for_resume
from actors.runtime.runtime import Runtime
from eventlog.blocks import text_of
from eventlog.events import (
    FixIteration,
    NodeAppended,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
)

PROMPT = "Write the release note."

#: The primary's first answer is a draft; its fix says "fixed" (turn 1 is the router's plan).
LEAD = rule("lead", {"text": "unused"}, {"text": "a draft"}, {"text": "fixed: the note"})


def says_fixed(answer: str) -> bool | str:
    return "fixed" in answer or "the answer does not say it is fixed"


TEAM = Team(roles=[Role("lead")], primary="lead", checks=[Check("says-fixed", call=says_fixed)])


def test_a_failed_check_starts_a_fix_and_the_fixed_answer_passes(rt: Runtime) -> None:
    s = run_session(rt, PROMPT, scripted(route(), LEAD), team=TEAM)

    assert "fixed: the note" == s.outcome.answer
    assert [FixIteration(iteration=1, trigger="checks_failed")] == s.of(FixIteration)
    started = s.of(ToolCallStarted, s.brain_run)
    assert [f"{s.brain_run}:chk1", f"{s.brain_run}:chk2"] == [c.tool_call_id for c in started]
    assert {"check:says-fixed"} == {c.tool_name for c in started}
    assert [True, False] == [f.is_error for f in s.of(ToolCallFinished, s.brain_run)]
    # The primary got the failure as findings before its fix.
    findings = [n.node for n in s.of(NodeAppended) if n.node.node_type == "child_result"][-1]
    assert "Checks failed:\n- says-fixed: the answer does not say it is fixed" == text_of(
        findings.content
    )


def test_checks_are_recorded_with_the_team_and_a_replay_never_runs_them(rt: Runtime) -> None:
    calls: list[str] = []

    def counted(answer: str) -> bool | str:
        calls.append(answer)
        return says_fixed(answer)

    team = Team(roles=[Role("lead")], primary="lead", checks=[Check("says-fixed", call=counted)])
    s = run_session(rt, PROMPT, scripted(route(), LEAD), team=team)  # replays twice, too

    assert ["a draft", "fixed: the note"] == calls
    [started] = s.of(RunStarted, s.brain_run)
    team_record = RunInputs.from_metadata(started.metadata).team
    assert team_record is not None
    assert [("says-fixed", None)] == [(c.name, c.command) for c in team_record.checks]


def test_a_command_check_reads_the_answer_on_stdin_in_the_project_directory(
    rt: Runtime,
) -> None:
    check = Check("grep-fixed", command="grep -q fixed && test -d .clew")
    team = Team(roles=[Role("lead")], primary="lead", checks=[check])

    s = run_session(rt, PROMPT, scripted(route(), LEAD), team=team)

    assert [True, False] == [f.is_error for f in s.of(ToolCallFinished, s.brain_run)]
    assert "exit status 1" in s.of(ToolCallFinished, s.brain_run)[0].content[0].text  # type: ignore[union-attr]


def test_the_fix_bound_stops_a_check_that_never_passes(rt: Runtime) -> None:
    never = Team(roles=[Role("lead")], primary="lead", checks=[Check("no", call=lambda a: False)])

    s = run_session(
        rt, PROMPT, scripted(route(), LEAD), team=never, settings=RunSettings(max_fix_iterations=1)
    )

    assert ["checks_failed"] == [f.trigger for f in s.of(FixIteration)]
    assert "completed" == s.outcome.status  # out of fixes: the last answer stands


def test_a_check_that_raises_fails_with_the_reason(rt: Runtime) -> None:
    def broken(answer: str) -> bool:
        raise RuntimeError("no network")

    team = Team(roles=[Role("lead")], primary="lead", checks=[Check("net", call=broken)])
    s = run_session(
        rt, PROMPT, scripted(route(), LEAD), team=team, settings=RunSettings(max_fix_iterations=0)
    )

    [finished] = s.of(ToolCallFinished, s.brain_run)
    assert (True, "RuntimeError: no network") == (finished.is_error, finished.content[0].text)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda: Check("a b", command="true"), "check name 'a b'"),
        (lambda: Check("x"), "exactly one of command and call"),
        (lambda: Check("x", command="true", call=says_fixed), "exactly one of command and call"),
    ],
)
def test_a_bad_check_is_refused_in_one_sentence(check: object, message: str) -> None:
    with pytest.raises(TeamError, match=message):
        check()  # type: ignore[operator]


def test_two_checks_of_one_name_are_refused(rt: Runtime) -> None:
    team = Team(checks=[Check("x", command="true"), Check("x", command="false")])
    session = rt.new_session()

    with pytest.raises(TeamError, match="two checks are named 'x'"):
        session.run(PROMPT, model=scripted(route()), team=team)
    assert [] == rt.store.read_runs(session.id)


def test_a_run_with_callable_checks_resumes_only_with_its_team(rt: Runtime) -> None:
    s = run_session(rt, PROMPT, scripted(route(), LEAD), team=TEAM)
    [started] = s.of(RunStarted, s.brain_run)
    inputs = RunInputs.from_metadata(started.metadata)

    with pytest.raises(UsageError, match="checks that are Python callables \\(says-fixed\\)"):
        team_for_resume(inputs, RunConfig(model=scripted(route())), {})
