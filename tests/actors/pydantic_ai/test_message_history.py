"""A durable run given a ``message_history``: the model is asked exactly what the unwrapped
agent asks with that history (by ``run``, ``run_stream`` and ``iter``), the history is part
of the run's recorded inputs (inputs version 7; a run given none records version 6 as
before), and a replay and a resume (``session.resume``, ``clew resume --agent`` in a
process of its own) hand the framework the same history again."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from _cli_helpers import Where, run_process
from _processes import ROOT
from pydantic_ai import (
    Agent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from actors import Approve
from actors.errors import DurableRunFailed
from actors.pydantic_ai import DurableAgent
from actors.runtime.runtime import Runtime
from actors.runtime.session import Session
from eventlog.events import ModelRequested, RunStarted

#: What a new run of Pydantic AI fills afresh: never the same twice.
_VOLATILE = {"timestamp", "run_id", "conversation_id"}


def _steady(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _steady(v) for k, v in data.items() if k not in _VOLATILE}
    if isinstance(data, list):
        return [_steady(v) for v in data]
    return data


def _asked(seen: list[list[ModelMessage]]) -> list[Any]:
    """The requests a model was asked, as JSON without what each run fills afresh."""
    return [_steady(ModelMessagesTypeAdapter.dump_python(m, mode="json")) for m in seen]


def _agent(seen: list[list[ModelMessage]], *, approval: bool = False) -> Agent[None, str]:
    """An agent that notes each prompt with a tool, then says how much it has seen."""

    def prompted(messages: list[ModelMessage]) -> bool:
        seen.append(list(messages))
        return any(isinstance(p, UserPromptPart) for p in messages[-1].parts)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if prompted(messages):
            call = ToolCallPart("note", {"text": "x"}, tool_call_id=f"call-{len(messages)}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart(f"seen {len(messages)} messages")])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if prompted(messages):
            call = DeltaToolCall("note", '{"text": "x"}', tool_call_id=f"call-{len(messages)}")
            yield {0: call}
        else:
            yield f"seen {len(messages)} messages"

    agent = Agent(FunctionModel(model, stream_function=stream), name="notes")

    @agent.tool_plain(requires_approval=approval)
    def note(text: str) -> str:
        return f"noted {text}"

    return agent


def _history() -> list[ModelMessage]:
    """An earlier conversation: a prompt, a tool call and its result, an answer."""
    return asyncio.run(_agent([]).run("first")).all_messages()


@pytest.fixture
def rt(tmp_path: Path) -> Any:
    runtime = Runtime(tmp_path / "home", tmp_path)
    yield runtime
    runtime.close()


def _started(rt: Runtime, sid: str) -> RunStarted:
    (started,) = [e.event for e in rt.store.iter_events(sid) if isinstance(e.event, RunStarted)]
    return started


# --- what the model is asked ------------------------------------------------------------


def test_the_model_is_asked_what_the_unwrapped_agent_asks_with_the_history(rt: Runtime) -> None:
    history = _history()
    unwrapped: list[list[ModelMessage]] = []
    expected = asyncio.run(_agent(unwrapped).run("again", message_history=history))
    durable: list[list[ModelMessage]] = []
    session = rt.new_session()

    result = DurableAgent(_agent(durable)).run_sync(
        "again", session=session, message_history=history
    )

    assert 2 == len(durable)
    assert _asked(unwrapped) == _asked(durable)
    assert history == result.all_messages()[: len(history)]  # handed over as given
    assert expected.output == result.output == "seen 7 messages"
    first = next(
        e.event for e in rt.store.iter_events(session.id) if isinstance(e.event, ModelRequested)
    )
    assert 1 == first.call_index
    assert 5 == len(first.messages)  # the history's four, then the prompt


@pytest.mark.parametrize("how", ["run_stream", "iter"])
def test_streamed_and_iterated_runs_ask_the_same_with_the_history(rt: Runtime, how: str) -> None:
    history = _history()
    session = rt.new_session()

    async def go(agent: Any, **where: Session) -> None:
        if how == "run_stream":
            async with agent.run_stream("again", message_history=history, **where) as s:
                await s.get_output()
        else:
            async with agent.iter("again", message_history=history, **where) as run:
                async for _ in run:
                    pass

    unwrapped: list[list[ModelMessage]] = []
    asyncio.run(go(_agent(unwrapped)))
    durable: list[list[ModelMessage]] = []
    asyncio.run(go(DurableAgent(_agent(durable)), session=session))
    assert 2 == len(durable)
    assert _asked(unwrapped) == _asked(durable)
    assert rt.replay(session.id, agent=DurableAgent(_agent([]))).identical


# --- the recording ----------------------------------------------------------------------


def test_the_history_is_recorded_in_the_runs_inputs_version_7(rt: Runtime) -> None:
    history = _history()
    given = rt.new_session()
    DurableAgent(_agent([])).run_sync("again", session=given, message_history=history)
    plain = rt.new_session()
    DurableAgent(_agent([])).run_sync("again", session=plain)

    with_history = _started(rt, given.id).metadata
    assert 7 == with_history["inputs_version"]
    assert ModelMessagesTypeAdapter.dump_python(history, mode="json") == with_history["history"]
    without = _started(rt, plain.id).metadata
    assert 6 == without["inputs_version"]  # what a run given no history recorded before
    assert "history" not in without
    assert rt.verify(given.id).ok


def test_an_empty_history_is_no_history(rt: Runtime) -> None:
    session = rt.new_session()
    DurableAgent(_agent([])).run_sync("again", session=session, message_history=[])
    assert "history" not in _started(rt, session.id).metadata


def test_a_replay_hands_the_history_back_and_is_identical(rt: Runtime) -> None:
    session = rt.new_session()
    history = _history()
    DurableAgent(_agent([])).run_sync("again", session=session, message_history=history)
    replayed: list[list[ModelMessage]] = []

    report = rt.replay(session.id, agent=DurableAgent(_agent(replayed)))

    assert report.identical, report.summary()
    assert [] == replayed  # nothing asked: each request matched the recording's


#: A short earlier conversation: with it, the run's answer is "seen 5 messages".
_ADA = [
    ModelRequest(parts=[UserPromptPart("my name is Ada")]),
    ModelResponse(parts=[TextPart("Hello Ada.")]),
]


def cli_notes() -> DurableAgent:
    """The agent whose note needs approval, for ``clew resume --agent``."""
    return DurableAgent(_agent([], approval=True))


def _waiting(session: Session) -> None:
    """Run the agent with the history :data:`_ADA` to its approval; decide it."""
    with pytest.raises(DurableRunFailed) as raised:
        cli_notes().run_sync("note it", session=session, message_history=_ADA)
    assert "waiting" == raised.value.outcome.status
    session.decide("call-3", Approve())


def test_a_resume_hands_the_history_back(rt: Runtime) -> None:
    history = _ADA
    session: Session = rt.new_session()
    _waiting(session)
    resumed: list[list[ModelMessage]] = []

    outcome = session.resume(agent=DurableAgent(_agent(resumed, approval=True)))

    assert ("completed", "seen 5 messages") == (outcome.status, outcome.output)
    (asked,) = resumed  # the first request came from the recording; the second is live
    assert _asked([history]) == _asked([asked[:2]])
    assert rt.replay(session.id, agent=DurableAgent(_agent([], approval=True))).identical


def test_clew_resume_with_the_agent_hands_the_history_back(tmp_path: Path) -> None:
    where = Where(tmp_path / "home", tmp_path)
    with Runtime(where.home, tmp_path) as rt:
        session = rt.new_session()
        _waiting(session)
    here = str(Path(__file__).resolve().parent)
    path = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "helpers"), here])
    resumed = run_process(where, "resume", session.id, "--agent",
                          "test_message_history:cli_notes", PYTHONPATH=path)  # fmt: skip
    assert 0 == resumed.code, resumed.out + resumed.err
    with Runtime(where.home, tmp_path) as rt:
        run = rt.store.read_runs(session.id)[-1]
        assert "completed" == run.status
        ended = rt.store.read_events(session.id)[-1].event
        assert "seen 5 messages" == ended.outcome["output"]  # the history's two among them
        assert rt.verify(session.id).ok
