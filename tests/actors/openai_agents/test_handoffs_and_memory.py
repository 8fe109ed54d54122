"""Handoffs between Agents SDK agents as recorded calls and role changes; the SDK's
``Session`` memory kept in clew's store (:class:`ClewSession`) and read back on replay;
a tool's failure recorded and replayed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage

from actors.openai_agents import ClewSession, DurableRunner, ToolCallFailed
from actors.runtime.runtime import Runtime

NO_TRACES = RunConfig(tracing_disabled=True)


class _Script(Model):
    """A fake model answering with ``reply(input items)``; it counts its calls."""

    def __init__(self, reply: Callable[[list[Any]], list[Any]]) -> None:
        self.reply = reply
        self.asked = 0

    async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any) -> Any:
        self.asked += 1
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        usage = Usage(requests=1, input_tokens=5, output_tokens=1, total_tokens=6)
        return ModelResponse(output=self.reply(items), usage=usage, response_id=None)

    async def stream_response(self, *a: Any, **k: Any) -> Any:
        raise NotImplementedError
        yield


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = Runtime(tmp_path / "home", tmp_path)
    yield runtime
    runtime.close()


def _triage() -> tuple[DurableRunner, _Script, _Script]:
    billing_model = _Script(lambda items: [assistant_message("Billing here: refunded.")])
    billing = Agent(name="billing", instructions="You handle billing.", model=billing_model)
    triage_model = _Script(lambda items: [function_call("transfer_to_billing", {}, call_id="h-1")])
    triage = Agent(name="triage", instructions="Route the customer.", model=triage_model,
                   handoffs=[billing])  # fmt: skip
    return DurableRunner(triage, run_config=NO_TRACES), triage_model, billing_model


def test_a_handoff_is_a_recorded_call_and_the_next_calls_carry_the_new_role(rt: Runtime) -> None:
    runner, triage_model, billing_model = _triage()
    session = rt.new_session()
    result = runner.run_sync("I was charged twice.", session=session)
    assert "Billing here: refunded." == result.final_output
    assert "billing" == result.last_agent.name
    assert 1 == triage_model.asked == billing_model.asked
    events = [e.event for e in rt.store.iter_events(session.id)]
    roles = [e.role for e in events if type(e).__name__ == "TokenUsage"]
    assert ["triage", "billing"] == roles
    started = [e for e in events if type(e).__name__ == "ToolCallStarted"]
    assert ["transfer_to_billing"] == [e.tool_name for e in started]
    again, triage_again, billing_again = _triage()
    report = rt.replay(session.id, agent=again)
    assert report.identical, report.summary()
    assert 0 == triage_again.asked == billing_again.asked


def test_clew_session_keeps_the_sdks_items_and_pops_and_clears_them(rt: Runtime) -> None:
    memory = ClewSession(rt.new_session())

    async def use() -> list[list[Any]]:
        seen = [await memory.get_items()]
        await memory.add_items([{"role": "user", "content": "hi"}])
        await memory.add_items([{"role": "assistant", "content": "hello"}])
        seen.append(await memory.get_items())
        seen.append(await memory.get_items(limit=1))
        popped = await memory.pop_item()
        seen.append([popped, *await memory.get_items()])
        await memory.clear_session()
        seen.append(await memory.get_items())
        return seen

    hi, hello = {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}
    assert [[], [hi, hello], [hello], [hello, hi], []] == asyncio.run(use())
    assert rt.verify(memory.session_id).ok


def test_a_second_run_reads_the_first_from_memory_and_replays_from_the_recording(
    rt: Runtime,
) -> None:
    def reply(items: list[Any]) -> list[Any]:
        said = [i.get("content") for i in items if i.get("role") == "user"]
        return [assistant_message(f"you said: {' / '.join(map(str, said))}")]

    memory = ClewSession(rt.new_session())
    agent = Agent(name="echo", model=_Script(reply))
    runner = DurableRunner(agent, run_config=NO_TRACES, memory=memory)
    session = rt.new_session()
    assert (
        "you said: my name is Ada"
        == runner.run_sync("my name is Ada", session=session).final_output
    )
    second = runner.run_sync("what is my name?", session=session).final_output
    assert "you said: my name is Ada / what is my name?" == second
    assert 4 == len(asyncio.run(memory.get_items()))
    # The replay reads the history each run read (recorded), not today's memory.
    report = rt.replay(session.id, agent=DurableRunner(agent, run_config=NO_TRACES, memory=memory))
    assert report.identical, report.summary()
    assert 4 == len(asyncio.run(memory.get_items()))


def test_a_tool_that_raises_without_an_error_function_fails_the_run_recorded(
    rt: Runtime,
) -> None:
    def charge(amount: int) -> str:
        """Charge a card."""
        raise ValueError("no such card")

    def reply(items: list[Any]) -> list[Any]:
        if not any(i.get("type") == "function_call_output" for i in items):
            return [function_call("charge", {"amount": 5}, call_id="c1")]
        return [assistant_message("gave up")]

    tool = function_tool(charge, failure_error_function=None)
    runner = DurableRunner(Agent(name="till", model=_Script(reply), tools=[tool]),
                           run_config=NO_TRACES)  # fmt: skip
    session = rt.new_session()
    with pytest.raises(ToolCallFailed, match="no such card"):
        runner.run_sync("charge 5", session=session)
    assert "failed" == rt.store.read_runs(session.id)[-1].status
    assert rt.replay(session.id, agent=runner).identical
    assert rt.verify(session.id).ok


def test_a_tools_error_told_to_the_model_by_the_sdk_is_a_recorded_result(rt: Runtime) -> None:
    def charge(amount: int) -> str:
        """Charge a card."""
        raise ValueError("card declined")

    def reply(items: list[Any]) -> list[Any]:
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        if not outputs:
            return [function_call("charge", {"amount": 5}, call_id="c1")]
        return [assistant_message(f"told: {outputs[0]['output']}")]

    runner = DurableRunner(Agent(name="till", model=_Script(reply),
                                 tools=[function_tool(charge)]), run_config=NO_TRACES)  # fmt: skip
    session = rt.new_session()
    told = runner.run_sync("charge 5", session=session).final_output
    assert told.startswith("told: An error occurred while running the tool")
    assert rt.replay(session.id, agent=runner).identical


def test_guardrail_verdicts_are_recorded_and_a_tripwire_fails_the_run_alike_on_replay(
    rt: Runtime,
) -> None:
    from agents import GuardrailFunctionOutput, input_guardrail, output_guardrail  # noqa: PLC0415
    from agents.exceptions import InputGuardrailTripwireTriggered  # noqa: PLC0415

    asked: list[str] = []

    @input_guardrail
    def no_swearing(ctx: Any, agent: Any, items: Any) -> GuardrailFunctionOutput:
        asked.append("input")
        text = items if isinstance(items, str) else str(items)
        return GuardrailFunctionOutput(output_info={"checked": len(text)},
                                       tripwire_triggered="darn" in text)  # fmt: skip

    @output_guardrail
    def polite(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        asked.append("output")
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    def make() -> DurableRunner:
        agent = Agent(name="clerk", model=_Script(lambda items: [assistant_message("Sure.")]),
                      input_guardrails=[no_swearing], output_guardrails=[polite])  # fmt: skip
        return DurableRunner(agent, run_config=NO_TRACES)

    session = rt.new_session()
    assert "Sure." == make().run_sync("hello", session=session).final_output
    assert ["input", "output"] == asked
    names = [e.event.tool_name for e in rt.store.iter_events(session.id)
             if e.event_type == "tool_call_finished"]  # fmt: skip
    assert ["guardrail.no_swearing", "guardrail.polite"] == names
    assert rt.replay(session.id, agent=make()).identical
    assert ["input", "output"] == asked  # the replay asked neither again

    tripped = rt.new_session()
    with pytest.raises(InputGuardrailTripwireTriggered):
        make().run_sync("darn it", session=tripped)
    assert "failed" == rt.store.read_runs(tripped.id)[-1].status
    assert rt.replay(tripped.id, agent=make()).identical
