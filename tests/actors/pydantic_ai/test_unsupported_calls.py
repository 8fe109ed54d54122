"""What a durable Pydantic AI run cannot record yet is refused at the call, by name, with
nothing written: ``iter`` (its nodes would run in the caller's task, outside the seams)
and ``message_history`` (a resume could not give it back)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from actors.errors import UsageError
from actors.pydantic_ai import DurableAgent
from actors.runtime.runtime import Runtime


def _desk() -> DurableAgent:
    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("hi")])), name="d")
    return DurableAgent(agent)


def test_iter_is_refused_by_name(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        with pytest.raises(
            UsageError, match=r"DurableAgent\.iter is not supported yet.*run_stream"
        ):
            _desk().iter("hello", session=session)
        assert [] == rt.main_runs(session.id)


def test_message_history_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    history = [ModelRequest(parts=[UserPromptPart("earlier")])]
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        before = len(rt.store.read_events(session.id))
        with pytest.raises(UsageError, match="message_history is not recorded yet"):
            _desk().run_sync("hello", session=session, message_history=history)

        async def streamed() -> None:
            async with _desk().run_stream("hello", session=session, message_history=history):
                pass

        with pytest.raises(UsageError, match="message_history is not recorded yet"):
            asyncio.run(streamed())
        assert before == len(rt.store.read_events(session.id))
        assert "hi" == _desk().run_sync("hello", session=session).output
