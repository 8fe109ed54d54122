"""An Agents SDK agent as a durable clew run: recorded, replayed, streamed (what both
frameworks do alike, divergences and approvals among it: tests/actors/test_framework_runs.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("agents")

from _cli_helpers import Where, invoke
from _framework_checks import (
    calls,
    check_every_step_recorded,
    check_replay_identical,
    event_types,
)
from _oai_desk import PROMPT, Reply, _streamed, desk

from actors.openai_agents import DurableRunner
from actors.runtime.runtime import Runtime

DONE = Reply(answer="Refunded 42.50 for A-17.", refunded=42.5)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = Runtime(tmp_path / "home", tmp_path)
    yield runtime
    runtime.close()


def test_a_run_returns_the_sdks_typed_result_and_records_every_step(
    rt: Runtime, tmp_path: Path
) -> None:
    session = rt.new_session()
    result = desk(tmp_path).run_sync(PROMPT, session=session)
    assert DONE == result.final_output
    assert "desk" == result.last_agent.name
    check_every_step_recorded(rt, session.id, tmp_path)


def test_a_replay_is_identical_and_asks_nothing(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()
    desk(tmp_path).run_sync(PROMPT, session=session)
    check_replay_identical(rt, session.id, desk(tmp_path), tmp_path)


def test_a_streamed_run_is_recorded_like_a_run_and_replays_identically(
    rt: Runtime, tmp_path: Path
) -> None:
    session = rt.new_session()
    assert DONE == asyncio.run(_streamed(desk(tmp_path), session))
    types = event_types(rt, session.id)
    assert 3 == types.count("model_responded")
    assert 2 == types.count("tool_call_finished")
    report = rt.replay(session.id, agent=desk(tmp_path))
    assert report.identical, report.summary()
    assert 3 == calls(tmp_path)


def test_the_run_shows_in_timeline_show_and_usage_with_the_agent_as_role(
    rt: Runtime, tmp_path: Path
) -> None:
    session = rt.new_session()
    desk(tmp_path).run_sync(PROMPT, session=session)
    rt.close()
    where = Where(tmp_path / "home", tmp_path)
    timeline = invoke(where, "timeline", session.id)
    assert 0 == timeline.code, timeline.err
    assert "issue_refund" in timeline.out
    shown = invoke(where, "show", session.id)
    assert 0 == shown.code, shown.err
    assert "Refunded 42.50" in shown.out
    usage = invoke(where, "usage", session.id)
    assert 0 == usage.code, usage.err
    assert "desk" in usage.out
    checked = invoke(where, "verify", session.id)
    assert 0 == checked.code, checked.out + checked.err


def test_a_streamed_reply_reaches_the_caller_before_the_model_has_finished_it(
    rt: Runtime,
) -> None:
    from agents import Agent, RunConfig  # noqa: PLC0415
    from agents.models.interface import Model  # noqa: PLC0415
    from agents.testing import assistant_message  # noqa: PLC0415
    from openai.types.responses import (  # noqa: PLC0415
        Response,
        ResponseCompletedEvent,
        ResponseTextDeltaEvent,
    )

    seen = asyncio.Event()

    class Slow(Model):
        """Streams one delta, then finishes only once the caller has seen it."""

        async def get_response(self, *a: object, **k: object) -> object:
            raise NotImplementedError

        async def stream_response(self, *a: object, **k: object):  # type: ignore[no-untyped-def]
            yield ResponseTextDeltaEvent(type="response.output_text.delta", delta="Hel",
                                         item_id="m", output_index=0, content_index=0,
                                         sequence_number=0, logprobs=[])  # fmt: skip
            await asyncio.wait_for(seen.wait(), 30)
            done = Response.model_construct(id="r", created_at=0.0, model="slow",
                                            object="response", parallel_tool_calls=False,
                                            tool_choice="auto", tools=[], usage=None,
                                            output=[assistant_message("Hello")])  # fmt: skip
            yield ResponseCompletedEvent(type="response.completed", sequence_number=1,
                                         response=done)  # fmt: skip

    runner = DurableRunner(Agent(name="slow", model=Slow()),
                           run_config=RunConfig(tracing_disabled=True))  # fmt: skip
    session = rt.new_session()

    async def consume() -> str:
        async with runner.run_streamed("hi", session=session) as streamed:
            async for event in streamed.stream_events():
                if (
                    getattr(getattr(event, "data", None), "type", "")
                    == "response.output_text.delta"
                ):
                    seen.set()
        return str(streamed.final_output)

    assert "Hello" == asyncio.run(consume())
    assert rt.replay(session.id, agent=runner).identical
