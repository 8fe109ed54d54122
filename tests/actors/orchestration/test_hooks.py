"""Hooks and guardrails: called live, verdicts recorded, replayed without calling them."""

from __future__ import annotations

from typing import Any

import pydantic

from actors import ScriptedModel, tool
from actors.models.tools import ToolContext
from actors.orchestration.approvals import Deny, Edit
from actors.orchestration.hooks import Hooks, ToolVerdict
from actors.runtime.runtime import Runtime
from eventlog.blocks import ToolCallBlock, ToolResultBlock
from eventlog.events import FixIteration, HookDecided, RunEnded, ToolCallStarted, ToolFailed


class Amount(pydantic.BaseModel):
    amount: int


def _model(*clerk: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel(
        {
            "rules": [
                {"role": "router", "replies": [{"json": {"primary_role": "clerk"}}]},
                {"role": "clerk", "replies": [{"text": "(never)"}, *clerk]},
            ]
        }
    )


class Recording(Hooks):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_run_start(self, session_id: str, run_id: str, prompt: str) -> None:
        self.calls.append(f"start {prompt}")

    def before_tool(self, call: ToolCallBlock, ctx: ToolContext) -> ToolVerdict:
        self.calls.append(f"before {call.arguments['amount']}")
        if call.arguments["amount"] > 100:
            return Deny(reason="over the limit")
        if call.arguments["amount"] == 13:
            raise RuntimeError("unlucky")
        return Edit(arguments={"amount": 1}) if call.arguments["amount"] == 2 else None

    def after_tool(self, call: ToolCallBlock, result: ToolResultBlock) -> None:
        self.calls.append(f"after {result.is_error}")

    def on_run_end(self, session_id: str, run_id: str, status: str) -> None:
        self.calls.append(f"end {status}")


def test_before_tool_verdicts_are_recorded_and_replay_does_not_call_the_hooks(
    rt: Runtime,
) -> None:
    paid: list[int] = []

    @tool(Amount)
    def pay(args: Amount) -> str:
        """Pay."""
        paid.append(args.amount)
        return "paid"

    calls = [{"name": "pay", "arguments": {"amount": a}} for a in (500, 2, 13, 5)]
    model = _model({"tool_calls": calls}, {"text": "Done."})
    hooks = Recording()
    rt.hooks = hooks
    session = rt.new_session()
    out = session.run("Pay.", model=model, tools=[pay])
    assert ("completed", [1, 13, 5]) == (out.status, paid)
    assert [
        "start Pay.",
        "before 500",
        "after True",
        "before 2",
        "after False",
        "before 13",
        "after False",
        "before 5",
        "after False",
        "end completed",
    ] == hooks.calls
    events = [e.event for e in rt.store.read_events(session.id)]
    verdicts = [(e.hook, e.decision) for e in events if isinstance(e, HookDecided)]
    assert [("before_tool", "deny"), ("before_tool", "edit"), ("before_tool", "error")] == verdicts
    (denied,) = [e for e in events if isinstance(e, ToolFailed)]
    assert "the before_tool hook denied this call: over the limit" == denied.message
    started = [e.arguments["amount"] for e in events if isinstance(e, ToolCallStarted)]
    assert [500, 1, 13, 5] == started
    hooks.calls.clear()
    assert rt.replay(session.id).identical
    assert [] == hooks.calls  # replay never calls app code
    assert rt.verify(session.id).ok


class Guard(Hooks):
    def input_guardrail(self, prompt: str) -> str | None:
        return "no secrets" if "password" in prompt else None

    def output_guardrail(self, answer: str) -> str | None:
        return "say please" if "please" not in answer else None


def test_an_input_guardrail_refuses_the_prompt_and_the_run_ends_refused(rt: Runtime) -> None:
    rt.hooks = Guard()
    session = rt.new_session()
    out = session.run("Tell me the password.", model=_model({"text": "x"}))
    assert ("refused", "no secrets") == (out.status, out.error)
    events = [e.event for e in rt.store.read_events(session.id)]
    (ended,) = [e for e in events if isinstance(e, RunEnded)]
    assert ("refused", {"status": "refused", "reason": "no secrets"}) == (
        ended.status,
        ended.outcome,
    )
    assert ["refused"] == [r.status for r in rt.store.read_runs(session.id)]
    assert rt.replay(session.id).identical
    assert rt.verify(session.id).ok
    out = session.run("Now something else.", model=_model({"text": "Fine, please."}))
    assert "completed" == out.status


def test_an_output_guardrail_sends_the_answer_into_the_fix_loop(rt: Runtime) -> None:
    rt.hooks = Guard()
    session = rt.new_session()
    out = session.run("Hello.", model=_model({"text": "Hi."}, {"text": "Hi, please."}))
    assert ("completed", "Hi, please.") == (out.status, out.answer)
    events = [e.event for e in rt.store.read_events(session.id)]
    verdicts = [(e.hook, e.decision, e.reason) for e in events if isinstance(e, HookDecided)]
    assert [("output_guardrail", "deny", "say please")] == verdicts
    assert ["output_guardrail"] == [e.trigger for e in events if isinstance(e, FixIteration)]
    rt.hooks = None
    assert rt.replay(session.id).identical
    assert rt.verify(session.id).ok
