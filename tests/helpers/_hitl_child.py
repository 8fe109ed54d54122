"""Child process of the human-in-the-loop tests: run a session that parks, decide, resume.

Usage: python _hitl_child.py HOME PROJECT run
       python _hitl_child.py HOME PROJECT decide SESSION_ID CALL_ID approve|deny|edit
       python _hitl_child.py HOME PROJECT resume SESSION_ID
       python _hitl_child.py HOME PROJECT decide-resume SESSION_ID CALL_ID approve|deny|edit

Three workers run in parallel: ``payer`` calls ``pay`` (it needs approval), ``reader``
and ``writer`` call ``note`` (no approval) and finish. Each run of ``pay`` appends
``<tool_call_id> <amount> <attempt>`` to ``PROJECT/payments.txt``; with
``HITL_KILL_IN_PAY=1`` its first attempt SIGKILLs the process right after that line.
The ``CLEW_FAULT_*`` variables kill it elsewhere (``Runtime.from_env`` reads them).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pydantic

from actors import Approve, Deny, Edit, Runtime, ScriptedModel, ToolContext, tool

PLAN = {
    "primary_role": "writer",
    "workers": [
        {"id": "w1", "role": "payer", "goal": "Pay the invoice"},
        {"id": "w2", "role": "reader", "goal": "Read the contract"},
        {"id": "w3", "role": "writer", "goal": "Draft the letter"},
    ],
}


def _worker(role: str, call: dict[str, Any], summary: str) -> dict[str, Any]:
    return {
        "role": role,
        "phase": "worker",
        "replies": [{"tool_calls": [call]}, {"json": {"summary": summary}}],
    }


SCRIPT: dict[str, Any] = {
    "rules": [
        {"role": "router", "replies": [{"json": PLAN}]},
        _worker("payer", {"name": "pay", "arguments": {"amount": 42}}, "Paid."),
        _worker("reader", {"name": "note", "arguments": {"text": "read"}}, "Read it."),
        _worker("writer", {"name": "note", "arguments": {"text": "draft"}}, "Drafted."),
        {"role": "writer", "replies": [{"text": "(never)"}, {"text": "All done."}]},
    ]
}


class PayArgs(pydantic.BaseModel):
    amount: int


class NoteArgs(pydantic.BaseModel):
    text: str


def tools(project: Path) -> list[Any]:
    @tool(PayArgs, needs_approval=True)
    def pay(args: PayArgs, ctx: ToolContext) -> str:
        """Pay an amount (a side effect)."""
        with (project / "payments.txt").open("a", encoding="utf-8") as f:
            f.write(f"{ctx.tool_call_id} {args.amount} {ctx.attempt}\n")
            f.flush()
            os.fsync(f.fileno())
        if os.environ.get("HITL_KILL_IN_PAY") and ctx.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"paid {args.amount}"

    @tool(NoteArgs, idempotent=True)
    def note(args: NoteArgs) -> str:
        """Write a note."""
        return f"noted: {args.text}"

    return [pay, note]


def decision(kind: str) -> Any:
    if kind == "approve":
        return Approve()
    if kind == "deny":
        return Deny(reason="too expensive")
    return Edit(arguments={"amount": 7})


def main() -> int:
    home, project, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    project.mkdir(parents=True, exist_ok=True)
    model = ScriptedModel(SCRIPT, name="scripted:hitl")
    rt = Runtime.from_env(home=home, project_dir=str(project))
    try:
        if mode == "run":
            session = rt.new_session()
            out = session.run("Pay and write.", model=model, tools=tools(project))
            pending = [p.tool_call_id for p in out.pending]
            print(json.dumps({"sid": session.id, "status": out.status, "pending": pending}))
            return 0
        sid = sys.argv[4]
        if mode in ("decide", "decide-resume"):
            rt.decide(sid, sys.argv[5], decision(sys.argv[6]))
        if mode in ("resume", "decide-resume"):
            out = rt.resume(sid, model=model, tools=tools(project))
            print(json.dumps({"sid": sid, "status": out.status, "answer": out.answer}))
        return 0
    finally:
        rt.close()


if __name__ == "__main__":
    raise SystemExit(main())
