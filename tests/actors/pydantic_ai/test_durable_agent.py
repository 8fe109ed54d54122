"""A Pydantic AI agent as a durable clew run: recorded, replayed, diverging when changed."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from _cli_helpers import Where, invoke
from _framework_checks import (
    check_changed_instructions_diverge,
    check_changed_tool_diverges,
    check_every_step_recorded,
    check_idempotency_key_unique,
    check_replay_from_async_code,
    check_replay_identical,
    check_replay_without_agent_refused,
)
from _pyai_desk import DESK, PROMPT, Reply, desk

from actors.runtime.runtime import Runtime


@pytest.fixture
def rt(tmp_path: Path) -> Runtime:
    runtime = Runtime(tmp_path / "home", tmp_path)
    yield runtime
    runtime.close()


def test_a_run_returns_the_agents_typed_result_and_records_every_step(
    rt: Runtime, tmp_path: Path
) -> None:
    session = rt.new_session()
    result = desk(tmp_path).run_sync(PROMPT, session=session)
    assert Reply(answer="Refunded 42.50 for A-17.", refunded=42.5) == result.output
    check_every_step_recorded(rt, session.id, tmp_path)


def test_the_idempotency_key_is_unique_per_run_and_call(rt: Runtime, tmp_path: Path) -> None:
    check_idempotency_key_unique(rt, DESK, tmp_path)


def test_a_replay_of_the_run_is_identical_and_asks_nothing(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    agent = desk(tmp_path)
    agent.run_sync(PROMPT, session=session)
    check_replay_identical(rt, session.id, agent, tmp_path)


def test_a_changed_prompt_of_the_agent_is_a_divergence(rt: Runtime, tmp_path: Path) -> None:
    check_changed_instructions_diverge(rt, DESK, tmp_path)


def test_a_changed_tool_is_a_divergence(rt: Runtime, tmp_path: Path) -> None:
    check_changed_tool_diverges(rt, DESK, tmp_path)


def test_the_run_shows_in_clew_timeline_and_verifies(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    desk(tmp_path).run_sync(PROMPT, session=session)
    rt.close()
    where = Where(tmp_path / "home", tmp_path)
    shown = invoke(where, "timeline", session.id)
    assert 0 == shown.code, shown.err
    assert "issue_refund" in shown.out
    assert "model" in shown.out
    checked = invoke(where, "verify", session.id)
    assert 0 == checked.code, checked.out + checked.err


def test_a_replay_or_resume_without_the_agent_says_to_pass_it(rt: Runtime, tmp_path: Path) -> None:
    check_replay_without_agent_refused(rt, DESK, tmp_path)


def test_the_run_shows_in_clew_show_and_usage(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    desk(tmp_path).run_sync(PROMPT, session=session)
    rt.close()
    where = Where(tmp_path / "home", tmp_path)
    shown = invoke(where, "show", session.id)
    assert 0 == shown.code, shown.err
    assert "Refunded 42.50" in shown.out
    usage = invoke(where, "usage", session.id)
    assert 0 == usage.code, usage.err
    assert "desk" in usage.out  # the agent's name is the role of its calls


def test_a_replay_called_from_async_code_runs(rt: Runtime, tmp_path: Path) -> None:
    check_replay_from_async_code(rt, DESK, tmp_path)
