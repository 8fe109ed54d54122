"""The crash-test seam: the fault variables are read once, checked, and become two hooks.

The hooks' kill is replaced by a recorder here; the real SIGKILL is exercised by the
crash sweep (``test_crash_recovery.py``) in child processes.
"""

from __future__ import annotations

import pytest

import actors.runtime.faults
from actors.errors import UsageError
from actors.runtime.faults import FAULT_VARIABLES, FaultPlan
from eventlog.errors import Refused

AFTER, BEFORE, INSIDE = FAULT_VARIABLES


@pytest.fixture
def kills(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each kill instead of SIGKILLing the test process."""
    recorded: list[str] = []
    monkeypatch.setattr(actors.runtime.faults, "_kill_self", lambda: recorded.append("kill"))
    return recorded


def test_every_variable_is_parsed_as_a_count() -> None:
    expected = FaultPlan(kill_after_events=40, kill_before_tool=3, kill_inside_commit=7)

    assert expected == FaultPlan.from_env(
        {AFTER: "40", BEFORE: "3", INSIDE: "7", "CLEW_HOME": "/elsewhere"}
    )


@pytest.mark.parametrize("name", FAULT_VARIABLES)
@pytest.mark.parametrize("raw", ["0", "-1", "x"])
def test_a_count_that_is_not_a_positive_integer_is_a_usage_error_naming_it(
    name: str, raw: str
) -> None:
    with pytest.raises(UsageError) as caught:
        FaultPlan.from_env({name: raw})

    assert isinstance(caught.value, Refused)
    assert f"{name} must be a positive integer, not {raw!r}" == str(caught.value)


@pytest.mark.parametrize("env", [{}, {AFTER: "", BEFORE: "", INSIDE: ""}], ids=["unset", "empty"])
def test_without_fault_variables_there_is_no_plan_and_no_hook(env: dict[str, str]) -> None:
    plan = FaultPlan.from_env(env)

    assert FaultPlan() == plan
    assert (None, None, None) == (plan.commit_hook(), plan.before_tool_hook(), plan.store_hook())


def test_the_store_hook_kills_at_the_kth_event_row_and_ignores_other_steps(
    kills: list[str],
) -> None:
    hook = FaultPlan(kill_inside_commit=3).store_hook()
    assert hook is not None
    seen = []
    for step in ["before_materialise", "before_event_row"] * 3:
        hook(step)
        seen.append(len(kills))
    assert [0, 0, 0, 0, 0, 1] == seen


def test_the_commit_hook_kills_once_the_kth_event_is_committed(kills: list[str]) -> None:
    hook = FaultPlan.from_env({AFTER: "5"}).commit_hook()
    assert hook is not None
    assert FaultPlan.from_env({AFTER: "5"}).before_tool_hook() is None

    hook(4, [])
    assert [] == kills
    hook(6, [])  # a batch can commit past k: the kill comes right after it
    assert ["kill"] == kills


def test_the_before_tool_hook_kills_before_the_kth_tool_runs(kills: list[str]) -> None:
    hook = FaultPlan.from_env({BEFORE: "3"}).before_tool_hook()
    assert hook is not None
    assert FaultPlan.from_env({BEFORE: "3"}).commit_hook() is None

    hook()
    hook()
    assert [] == kills
    hook()
    assert ["kill"] == kills
