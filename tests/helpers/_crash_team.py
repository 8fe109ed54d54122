"""Child process of the team crash tests: run (or resume) a team session, maybe get killed.

Usage: python _crash_team.py HOME PROJECT run POLICY
       python _crash_team.py HOME PROJECT resume SESSION_ID POLICY

The clerk (the primary) dispatches a researcher, then calls ``charge``: a non-idempotent
tool with its own in-doubt POLICY (the run's default is a different one), keyed by
``ctx.idempotency_key``. Each run of ``charge`` appends ``<tool_call_id> <attempt>`` to
``PROJECT/charges.txt`` and ``<idempotency_key> <attempt>`` to ``PROJECT/keys.txt``; with
``TEAM_CRASH_KILL_IN_CHARGE=1`` its first attempt SIGKILLs the process right after those
lines are written — a crash in the middle of a side effect.
The ``CLEW_FAULT_*`` variables kill it elsewhere (Runtime.from_env reads them).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pydantic

from actors import Role, RunSettings, Runtime, ScriptedModel, Team, ToolContext, tool

#: The run's default policy is never the tool's own, so a test sees which one was used.
RUN_DEFAULT = {"retry": "fail", "fail": "retry", "skip": "retry"}

PLAN = {"primary_role": "clerk", "workers": [{"id": "w1", "role": "researcher", "goal": "Look"}]}
SCRIPT: dict[str, Any] = {
    "rules": [
        {"role": "router", "replies": [{"json": PLAN}]},
        {
            "role": "researcher",
            "replies": [
                {"tool_calls": [{"name": "lookup", "arguments": {"topic": "order 42"}}]},
                {"json": {"summary": "Order 42 is paid for: 42 EUR."}},
            ],
        },
        {
            "role": "clerk",
            "replies": [
                {"text": "(turn 0 is never asked)"},
                {
                    "tool_calls": [
                        {
                            "name": "dispatch",
                            "arguments": {"role": "researcher", "goal": "Double-check 42"},
                        }
                    ]
                },
                {"tool_calls": [{"name": "charge", "arguments": {"amount": 42}}]},
                {"text": "Charged 42 EUR."},
            ],
        },
    ]
}


class TopicArgs(pydantic.BaseModel):
    topic: str


class ChargeArgs(pydantic.BaseModel):
    amount: int


def team(project: Path, policy: str) -> Team:
    @tool(TopicArgs, idempotent=True)
    def lookup(args: TopicArgs) -> str:
        """Look a topic up."""
        return f"{args.topic}: paid"

    @tool(ChargeArgs, in_doubt=policy)
    def charge(args: ChargeArgs, ctx: ToolContext) -> str:
        """Charge the customer (a side effect: not idempotent)."""
        with (project / "charges.txt").open("a", encoding="utf-8") as f:
            f.write(f"{ctx.tool_call_id} {ctx.attempt}\n")
            f.flush()
            os.fsync(f.fileno())
        with (project / "keys.txt").open("a", encoding="utf-8") as f:
            f.write(f"{ctx.idempotency_key} {ctx.attempt}\n")
            f.flush()
            os.fsync(f.fileno())
        if os.environ.get("TEAM_CRASH_KILL_IN_CHARGE") and ctx.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"charged {args.amount}"

    return Team(
        instructions="You are the billing desk.",
        roles=[
            Role("researcher", description="checks orders", tools=[lookup]),
            Role("clerk", description="charges customers", tools=[charge]),
        ],
        primary="clerk",
    )


def main() -> int:
    home, project, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    project.mkdir(parents=True, exist_ok=True)
    model = ScriptedModel(SCRIPT, name="scripted:team")
    rt = Runtime.from_env(home=home, project_dir=str(project))
    try:
        if mode == "run":
            policy = sys.argv[4]
            session = rt.new_session()
            print(session.id, flush=True)
            settings = RunSettings(in_doubt_policy=RUN_DEFAULT[policy])
            out = session.run(
                "Charge order 42.", model=model, team=team(project, policy), settings=settings
            )
        else:
            sid, policy = sys.argv[4], sys.argv[5]
            out = rt.resume(sid, model=model, team=team(project, policy))
        print(out.status, flush=True)
        return 0 if out.status == "completed" else 1
    finally:
        rt.close()


if __name__ == "__main__":
    raise SystemExit(main())
