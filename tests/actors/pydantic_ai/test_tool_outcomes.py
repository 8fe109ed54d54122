"""What a tool's failure does in a durable run: ``ModelRetry`` tells the model and the run
goes on; any other exception fails the run, recorded, and replays the same."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, ModelMessage, ModelResponse, ModelRetry, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from actors.pydantic_ai import DurableAgent, ToolCallFailed
from actors.runtime.runtime import Runtime


def _agent(error: Exception) -> DurableAgent:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("charge", {"amount": 5}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("gave up")])

    agent = Agent(FunctionModel(model), name="till")

    @agent.tool_plain
    def charge(amount: int) -> str:
        raise error

    return DurableAgent(agent)


def test_a_model_retry_is_told_to_the_model_and_the_run_goes_on(tmp_path: Path) -> None:
    agent = _agent(ModelRetry("card declined"))
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        assert "gave up" == agent.run_sync("charge 5", session=session).output
        failed = [
            e.event for e in rt.store.iter_events(session.id) if e.event_type == "tool_failed"
        ]
        assert [("ModelRetry", "card declined")] == [(f.error_type, f.message) for f in failed]
        assert rt.replay(session.id, agent=agent).identical


def test_a_tool_that_raises_fails_the_run_recorded_and_replayed(tmp_path: Path) -> None:
    agent = _agent(ValueError("no such card"))
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        with pytest.raises(ToolCallFailed, match="no such card"):
            agent.run_sync("charge 5", session=session)
        run = rt.store.read_runs(session.id)[-1]
        assert "failed" == run.status
        assert rt.replay(session.id, agent=agent).identical
        assert rt.verify(session.id).ok
