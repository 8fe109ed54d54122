"""A Pydantic AI agent as a durable clew run: recorded and replayed (what both frameworks
do alike, divergences and approvals among it: tests/actors/test_framework_runs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from _cli_helpers import Where, invoke
from _framework_checks import (
    check_every_step_recorded,
    check_replay_identical,
)
from _pyai_desk import PROMPT, Reply, desk

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


def test_a_replay_of_the_run_is_identical_and_asks_nothing(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    agent = desk(tmp_path)
    agent.run_sync(PROMPT, session=session)
    check_replay_identical(rt, session.id, agent, tmp_path)


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
