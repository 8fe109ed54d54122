"""``run_stream`` of a durable agent: the stream and its result as Pydantic AI gives them,
the run recorded like ``run`` records it, its replay identical."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from actors.pydantic_ai import DurableAgent
from actors.runtime.runtime import Runtime


def _agent(model: TestModel) -> DurableAgent:
    agent = Agent(model, name="weather")

    @agent.tool_plain
    def forecast(city: str) -> str:
        """Tell the weather of a city."""
        return f"sunny in {city}"

    return DurableAgent(agent)


async def _streamed(agent: DurableAgent, rt: Runtime) -> tuple[str, list[str], str]:
    session = rt.new_session()
    async with agent.run_stream("What is the weather?", session=session) as streamed:
        pieces = [p async for p in streamed.stream_text(delta=True)]
    return session.id, pieces, await streamed.get_output()


def test_a_streamed_run_yields_the_text_and_replays_identically(tmp_path: Path) -> None:
    model = TestModel()
    agent = _agent(model)
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid, pieces, output = asyncio.run(_streamed(agent, rt))
        assert output == "".join(pieces)
        assert "sunny" in output
        types = [e.event_type for e in rt.store.iter_events(sid)]
        assert 2 == types.count("model_responded")
        assert 1 == types.count("tool_call_finished")
        assert "completed" == rt.store.read_runs(sid)[-1].status
        report = rt.replay(sid, agent=_agent(TestModel()))
        assert report.identical, report.summary()
