"""What a durable Pydantic AI run cannot record is refused at the call, by name, with
nothing written: a ``message_history`` that is not Pydantic AI messages or holds a value
JSON cannot hold (a resume could not give it back)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, ModelRequest, ModelResponse, TextPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from actors.errors import UsageError
from actors.pydantic_ai import DurableAgent
from actors.runtime.runtime import Runtime


def _desk() -> DurableAgent:
    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("hi")])), name="d")
    return DurableAgent(agent)


class _Opaque:
    """A value JSON cannot hold."""


@pytest.mark.parametrize(
    "history",
    [
        [ModelRequest(parts=[ToolReturnPart("lookup", _Opaque(), tool_call_id="c1")])],
        ["earlier"],
        42,
    ],
    ids=["unserialisable-content", "not-messages", "not-a-list"],
)
def test_a_history_that_cannot_be_recorded_is_refused_before_anything_is_written(
    tmp_path: Path, history: object
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        before = len(rt.store.read_events(session.id))
        with pytest.raises(UsageError, match="message_history cannot be recorded"):
            _desk().run_sync("hello", session=session, message_history=history)

        async def streamed() -> None:
            async with _desk().run_stream("hello", session=session, message_history=history):
                pass

        async def iterated() -> None:
            async with _desk().iter("hello", session=session, message_history=history):
                pass

        for call in (streamed, iterated):
            with pytest.raises(UsageError, match="message_history cannot be recorded"):
                asyncio.run(call())
        assert before == len(rt.store.read_events(session.id))
        assert [] == rt.main_runs(session.id)
        assert "hi" == _desk().run_sync("hello", session=session).output
