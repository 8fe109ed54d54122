"""``iter`` of a durable agent: the nodes Pydantic AI's ``Agent.iter`` gives, each run in
the durable run's own task, so the run records exactly what ``run`` records — driven by
``async for`` or by ``next``, left early, failed, waiting for an approval — and a child
SIGKILLed while iterating resumes without paying a request twice."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from _cli_helpers import Where, invoke
from _framework_checks import (
    BOUNDARIES,
    calls,
    check_every_step_recorded,
    check_replay_identical,
    crashed_session,
    event_types,
    ledger,
    resume_and_check,
)
from _pyai_desk import DESK, PROMPT, Reply, desk
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_graph import End

from actors import Approve
from actors.errors import DurableRunFailed, UsageError
from actors.pydantic_ai import DurableAgent, DurableAgentRun, ToolCallFailed
from actors.runtime.runtime import Runtime
from actors.runtime.session import Session
from eventlog.events import ModelRequested


@pytest.fixture
def rt(tmp_path: Path) -> Any:
    runtime = Runtime(tmp_path / "home", tmp_path)
    yield runtime
    runtime.close()


def _names(nodes: list[Any]) -> list[str]:
    return [type(n).__name__ for n in nodes]


async def _iterated(agent: DurableAgent, session: Session) -> tuple[list[Any], DurableAgentRun]:
    async with agent.iter(PROMPT, session=session) as run:
        nodes = [node async for node in run]
    return nodes, run


def _unwrapped_nodes(agent: Agent[Any, Any], prompt: str) -> list[str]:
    async def go() -> list[str]:
        async with agent.iter(prompt) as run:
            return _names([node async for node in run])

    return asyncio.run(go())


#: The desk's nodes: its prompt, three requests and their replies' tool calls, the end.
DESK_NODES = ["UserPromptNode", *["ModelRequestNode", "CallToolsNode"] * 3, "End"]


def _requests(rt: Runtime, sid: str) -> list[tuple[str, Any]]:
    return [
        (e.event.request_hash, e.event.messages)
        for e in rt.store.iter_events(sid)
        if isinstance(e.event, ModelRequested)
    ]


# --- driving the run --------------------------------------------------------------------


def test_iterating_yields_agent_iters_nodes_and_the_typed_result(
    rt: Runtime, tmp_path: Path
) -> None:
    session = rt.new_session()
    nodes, run = asyncio.run(_iterated(desk(tmp_path), session))
    assert DESK_NODES == _names(nodes)
    assert isinstance(nodes[-1], End)
    assert run.result is not None
    assert Reply(answer="Refunded 42.50 for A-17.", refunded=42.5) == run.result.output
    assert 3 == run.usage.requests  # read from Pydantic AI's AgentRun
    assert run.result.all_messages() == run.all_messages() == run.ctx.state.message_history
    check_every_step_recorded(rt, session.id, tmp_path)


def test_an_iterated_run_records_what_run_records_and_replays_identically(
    rt: Runtime, tmp_path: Path
) -> None:
    ran, iterated = tmp_path / "ran", tmp_path / "iterated"
    ran.mkdir()
    iterated.mkdir()
    by_run = rt.new_session()
    desk(ran).run_sync(PROMPT, session=by_run)
    by_iter = rt.new_session()
    asyncio.run(_iterated(desk(iterated), by_iter))
    assert event_types(rt, by_run.id) == event_types(rt, by_iter.id)
    assert _requests(rt, by_run.id) == _requests(rt, by_iter.id)
    check_replay_identical(rt, by_iter.id, desk(iterated), iterated)
    rt.close()
    checked = invoke(Where(tmp_path / "home", tmp_path), "verify", by_iter.id)
    assert 0 == checked.code, checked.out + checked.err


def test_next_drives_the_run_node_by_node(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()

    async def by_hand() -> tuple[list[Any], Any]:
        async with desk(tmp_path).iter(PROMPT, session=session) as run:
            node = run.next_node
            nodes = [node]
            while not isinstance(node, End):
                node = await run.next(node)
                nodes.append(node)
        assert run.result is not None
        return nodes, run.result.output

    nodes, output = asyncio.run(by_hand())
    assert DESK_NODES == _names(nodes)
    assert DESK.answer == output
    check_every_step_recorded(rt, session.id, tmp_path)
    check_replay_identical(rt, session.id, desk(tmp_path), tmp_path)


def test_leaving_the_block_early_lets_the_run_go_on_to_its_end(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()

    async def leave_early() -> DurableAgentRun:
        async with desk(tmp_path).iter(PROMPT, session=session) as run:
            async for node in run:
                if type(node).__name__ == "CallToolsNode":
                    break  # after the first reply, before its tool runs
        return run

    run = asyncio.run(leave_early())
    assert run.result is not None
    assert DESK.answer == run.result.output
    check_every_step_recorded(rt, session.id, tmp_path)  # the whole run: as run records it
    check_replay_identical(rt, session.id, desk(tmp_path), tmp_path)


def test_a_run_left_is_not_stepped_again(rt: Runtime, tmp_path: Path) -> None:
    session = rt.new_session()

    async def step_after_the_block() -> None:
        async with desk(tmp_path).iter(PROMPT, session=session) as run:
            pass
        await anext(run)

    with pytest.raises(UsageError, match="has ended: step it inside its block"):
        asyncio.run(step_after_the_block())
    check_every_step_recorded(rt, session.id, tmp_path)


# --- a failure, an approval --------------------------------------------------------------


def _till(*, approval: bool = False, error: Exception | None = None) -> DurableAgent:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("charge", {"amount": 5}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("charged")])

    agent = Agent(FunctionModel(model), name="till")

    @agent.tool_plain(requires_approval=approval)
    def charge(amount: int) -> str:
        if error is not None:
            raise error
        return f"charged {amount}"

    return DurableAgent(agent)


async def _drain(agent: DurableAgent, session: Session) -> None:
    async with agent.iter("charge 5", session=session) as run:
        async for _ in run:
            pass


def test_the_nodes_are_those_the_unwrapped_agents_iter_yields(rt: Runtime) -> None:
    agent = _till()
    expected = _unwrapped_nodes(agent.wrapped, "charge 5")
    nodes: list[str] = []

    async def record() -> None:
        async with agent.iter("charge 5", session=rt.new_session()) as run:
            nodes.extend(_names([node async for node in run]))

    asyncio.run(record())
    assert ["UserPromptNode", *["ModelRequestNode", "CallToolsNode"] * 2, "End"] == expected
    assert expected == nodes


def test_a_tool_that_raises_fails_the_iterated_run_as_it_fails_run(rt: Runtime) -> None:
    agent = _till(error=ValueError("no such card"))
    session = rt.new_session()
    with pytest.raises(ToolCallFailed, match="no such card"):
        asyncio.run(_drain(agent, session))
    assert "failed" == rt.store.read_runs(session.id)[-1].status
    assert rt.replay(session.id, agent=agent).identical
    assert rt.verify(session.id).ok


def test_an_approval_leaves_the_iterated_run_waiting_and_a_resume_ends_it(rt: Runtime) -> None:
    agent = _till(approval=True)
    session = rt.new_session()
    with pytest.raises(DurableRunFailed) as raised:
        asyncio.run(_drain(agent, session))
    assert "waiting" == raised.value.outcome.status
    assert ["c1"] == [p.tool_call_id for p in rt.pending(session.id)]
    session.decide("c1", Approve())
    outcome = session.resume(agent=agent)
    assert ("completed", "charged") == (outcome.status, outcome.output)
    assert rt.replay(session.id, agent=agent).identical


# --- a kill while iterating --------------------------------------------------------------


@pytest.mark.parametrize(
    "point",
    [
        {"DESK_KILL_IN_REFUND": "1"},
        {"CLEW_FAULT_KILL_BEFORE_TOOL": "2"},
        *({"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)} for k in BOUNDARIES[1::2]),
    ],
    ids=lambda point: "-".join(f"{k}={v}" for k, v in point.items()),
)
def test_a_child_killed_while_iterating_resumes_without_paying_a_request_twice(
    tmp_path: Path, point: dict[str, str]
) -> None:
    home, sid = crashed_session(tmp_path, DESK, {"DESK_ITER": "1", **point})
    assert calls(tmp_path) <= 3
    resume_and_check(tmp_path, DESK, home, sid)  # no request re-paid, the refund once
    assert 1 == len(ledger(tmp_path))
