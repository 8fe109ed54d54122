"""A team: roles with instructions and tool allow-lists, typed output, an exactly-once refund.

Usage: ``python examples/team.py [HOME]`` (else ``$CLEW_HOME``, else a fresh temp dir).

``issue_refund`` has a side effect. It keys the refund on ``ctx.idempotency_key``: unique
across sessions and forks (a call id alone is not: a model may give two sessions the same
one), and the same when a resume re-runs a call a crash left in doubt — so the tool may
declare ``in_doubt="retry"``: running it twice refunds once.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import pydantic

from actors import ModelSettings, Role, Runtime, ScriptedModel, Team, ToolContext, tool

home = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CLEW_HOME") or tempfile.mkdtemp())
home.mkdir(parents=True, exist_ok=True)
LEDGER = home / "refunds.json"


class OrderArgs(pydantic.BaseModel):
    order: str


class RefundArgs(pydantic.BaseModel):
    order: str
    amount_eur: int


class Answer(pydantic.BaseModel):
    """What the support agent must reply: checked, and retried once if it does not match."""

    reply: str
    refund_id: str | None = None


@tool(OrderArgs, idempotent=True)  # read-only: may simply run again
def look_up_order(args: OrderArgs) -> dict[str, object]:
    """Look an order up."""
    return {"order": args.order, "status": "lost in transit", "paid_eur": 42}


@tool(RefundArgs, in_doubt="retry")  # a retry is safe: the refund is keyed by the call
def issue_refund(args: RefundArgs, ctx: ToolContext) -> dict[str, object]:
    """Refund an order (a side effect: once per tool call, whatever the retries)."""
    ledger = json.loads(LEDGER.read_text()) if LEDGER.exists() else {}
    if ctx.idempotency_key not in ledger:
        refund = {"refund_id": f"R-{len(ledger) + 1}", "order": args.order, "eur": args.amount_eur}
        ledger[ctx.idempotency_key] = refund
        LEDGER.write_text(json.dumps(ledger))
    return ledger[ctx.idempotency_key]


team = Team(
    instructions="You are the support desk of ACME. Be kind and precise.",
    roles=[
        Role(
            "investigator",
            description="looks orders up",
            instructions="Find the order's status and what was paid.",
            tools=[look_up_order],  # its allow-list: it can never refund
        ),
        Role(
            "refunder",
            description="refunds lost orders",
            instructions="Refund only an order that is lost, for what was paid.",
            tools=[issue_refund],
        ),
        Role(
            "agent",
            description="answers the customer",
            output=Answer,
            settings=ModelSettings(temperature=0.2, max_tokens=400),
        ),
    ],
    primary="agent",
)

# A scripted model, so this runs offline; in production pass your own client (or give a
# role its own model, e.g. Role(..., model="openai:gpt-4.1-mini")).
plan = {
    "primary_role": "agent",
    "workers": [
        {"id": "w1", "role": "investigator", "goal": "Look up order 42"},
        {"id": "w2", "role": "refunder", "goal": "Refund order 42 if lost", "deps": ["w1"]},
    ],
}
model = ScriptedModel(
    {
        "rules": [
            {"role": "router", "replies": [{"json": plan}]},
            {
                "role": "investigator",
                "replies": [
                    {"tool_calls": [{"name": "look_up_order", "arguments": {"order": "42"}}]},
                    {"json": {"summary": "Order 42 is lost in transit; 42 EUR paid."}},
                ],
            },
            {
                "role": "refunder",
                "replies": [
                    {
                        "tool_calls": [
                            {"name": "issue_refund", "arguments": {"order": "42", "amount_eur": 42}}
                        ]
                    },
                    {"json": {"summary": "Refunded 42 EUR as R-1."}},
                ],
            },
            {
                "role": "agent",
                "replies": [{"json": {"reply": "Sorry! Refunded 42 EUR.", "refund_id": "R-1"}}],
            },
        ]
    }
)

with Runtime(home, project_dir=home) as rt:
    session = rt.new_session()
    outcome = session.run("My order 42 never arrived.", model=model, team=team)
    answer: Answer = outcome.output
    print("answer:", answer.reply)
    print("refund:", answer.refund_id)
    print("refunds:", len(json.loads(LEDGER.read_text())))
    print("session:", session.id)
    print("replay:", rt.replay(session.id).summary())
