"""The key a side-effecting tool does its effect under (``ToolContext.idempotency_key``).

A model's call id is not unique: the scripted model derives it from the request, so two
sessions asking the same thing record the same id. The key is unique across sessions
(and forks, whose runs are their own); a resume keeps it (tests/actors/runtime/
test_team_crash.py kills a run inside the tool and checks the resumed call's key).
"""

from __future__ import annotations

from pathlib import Path

import pydantic

from actors import Runtime, ScriptedModel, ToolContext, tool
from eventlog.events import ToolCallStarted
from eventlog.ids import idempotency_key

# The primary itself refunds: its request holds nothing of the session, so the scripted
# model derives the same call id in every session. Its conversation starts with the plan
# (an assistant turn): replies[1] is its first answer.
PLAN = {"primary_role": "desk", "workers": []}
REFUND = {"tool_calls": [{"name": "refund", "arguments": {"order": "42"}}]}
SCRIPT = {
    "rules": [
        {"role": "router", "replies": [{"json": PLAN}]},
        {"role": "desk", "replies": [REFUND, REFUND, {"text": "Refunded."}]},
    ]
}


class RefundArgs(pydantic.BaseModel):
    order: str


def _refund_tool(ledger: dict[str, str]):  # type: ignore[no-untyped-def]
    @tool(RefundArgs)
    def refund(args: RefundArgs, ctx: ToolContext) -> str:
        """Refund an order once per key (the pattern of docs/replay-and-recovery.md)."""
        ledger.setdefault(ctx.idempotency_key, args.order)
        return f"refund of order {ledger[ctx.idempotency_key]} under {ctx.idempotency_key}"

    return refund


def _started(rt: Runtime, sid: str) -> tuple[str, str]:
    (started,) = [e for e in rt.store.read_events(sid) if isinstance(e.event, ToolCallStarted)]
    assert started.run_id is not None
    return started.run_id, started.event.tool_call_id


def test_two_sessions_with_the_same_prompt_both_do_their_refund(tmp_path: Path) -> None:
    ledger: dict[str, str] = {}
    refund = _refund_tool(ledger)
    with Runtime(tmp_path / "home", tmp_path) as rt:
        first, second = rt.new_session(), rt.new_session()
        for session in (first, second):
            outcome = session.run("Refund order 42", model=ScriptedModel(SCRIPT), tools=[refund])
            assert "completed" == outcome.status
        (run_1, call_1), (run_2, call_2) = _started(rt, first.id), _started(rt, second.id)

    # The model gave both sessions the same call id; the keys differ, so both refunds ran.
    assert call_1 == call_2
    assert {idempotency_key(run_1, call_1), idempotency_key(run_2, call_2)} == set(ledger)
    assert 2 == len(ledger)


def test_a_key_is_the_same_for_the_same_run_and_call_and_differs_otherwise() -> None:
    key = idempotency_key("sess_20260101_000000_aaaa:brain:r1/w1:r1", "call_1")

    assert key == idempotency_key("sess_20260101_000000_aaaa:brain:r1/w1:r1", "call_1")
    assert key != idempotency_key("sess_20260101_000000_bbbb:brain:r1/w1:r1", "call_1")
    assert key != idempotency_key("sess_20260101_000000_aaaa:brain:r2/w1:r1", "call_1")
    assert key.startswith("key_") and 36 == len(key)
