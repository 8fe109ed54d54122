"""A Pydantic AI agent as a durable clew run: recorded, replayed, diverging when changed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from _cli_helpers import Where, invoke
from _pyai_desk import PROMPT, Reply, calls, desk, ledger

from actors.errors import UsageError
from actors.runtime.runtime import Runtime


@pytest.fixture
def rt(tmp_path: Path) -> Runtime:
    runtime = Runtime(tmp_path / "home", tmp_path)
    yield runtime
    runtime.close()


def _types(rt: Runtime, sid: str) -> list[str]:
    return [e.event_type for e in rt.store.iter_events(sid)]


def test_a_run_returns_the_agents_typed_result_and_records_every_step(
    rt: Runtime, tmp_path: Path
) -> None:
    session = rt.new_session()
    result = desk(tmp_path).run_sync(PROMPT, session=session)
    assert Reply(answer="Refunded 42.50 for A-17.", refunded=42.5) == result.output
    assert 3 == calls(tmp_path)
    assert 1 == len(ledger(tmp_path))
    types = _types(rt, session.id)
    assert 3 == types.count("model_requested") == types.count("model_responded")
    assert 3 == types.count("token_usage")
    assert 2 == types.count("tool_call_started") == types.count("tool_call_finished")
    assert "run_ended" == types[-1]
    ended = rt.store.read_runs(session.id)[-1]
    assert "completed" == ended.status


def test_the_idempotency_key_is_unique_per_run_and_call(rt: Runtime, tmp_path: Path) -> None:
    agent = desk(tmp_path)
    agent.run_sync(PROMPT, session=rt.new_session())
    agent.run_sync(PROMPT, session=rt.new_session())
    keys = [line["key"] for line in ledger(tmp_path)]
    assert 2 == len(set(keys))


def test_a_replay_of_the_run_is_identical_and_asks_nothing(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    agent = desk(tmp_path)
    agent.run_sync(PROMPT, session=session)
    report = rt.replay(session.id, agent=agent)
    assert report.identical, report.summary()
    assert 3 == calls(tmp_path)
    assert 1 == len(ledger(tmp_path))


def test_a_changed_prompt_of_the_agent_is_a_divergence(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    desk(tmp_path).run_sync(PROMPT, session=session)
    report = rt.replay(session.id, agent=desk(tmp_path, instructions="You are a rude desk."))
    assert not report.identical
    assert "model_requested" in report.summary()
    assert "rude" in report.summary()


def test_a_changed_tool_is_a_divergence(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    desk(tmp_path).run_sync(PROMPT, session=session)
    report = rt.replay(session.id, agent=desk(tmp_path, lookup_doc="Find an order."))
    assert not report.identical
    assert "model_requested" in report.summary()


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
    session = rt.new_session()
    desk(tmp_path).run_sync(PROMPT, session=session)
    with pytest.raises(UsageError, match="pass that agent"):
        rt.replay(session.id)


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
    session = rt.new_session()
    agent = desk(tmp_path)

    async def app() -> bool:
        await agent.run(PROMPT, session=session)
        return rt.replay(session.id, agent=agent).identical

    assert asyncio.run(app())
