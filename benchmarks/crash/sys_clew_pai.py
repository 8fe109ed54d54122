"""clew + Pydantic AI: the same Pydantic AI agent as the DBOS column, made durable by clew.

Written the way docs/pydantic-ai.md says: the ``Agent`` is wrapped in
:class:`actors.pydantic_ai.DurableAgent` (the read is idempotent, the refund declares
``in_doubt="retry"`` and keys its effect on ``tool_context().idempotency_key``) and each
``run_sync`` is a main run of a clew session in a SQLite home (clew's default durability);
a killed process is recovered with ``rt.resume(sid, agent=…)`` ("Resume after a crash").
With ``CRASH_DURABLE=0`` the bare agent runs (the no-durability baseline). clew's own kill
points are its fault variables after the k-th committed event and inside a commit (the
generic points cover the tools).
"""

from __future__ import annotations

import os
from pathlib import Path

import scenario
import sys_clew
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from actors.pydantic_ai import DurableAgent, ToolPolicy, tool_context

NAME = "clew + Pydantic AI"


def agent(trial: Path, base_url: str) -> Agent[None, str]:
    model = OpenAIChatModel(
        "crash-model", provider=OpenAIProvider(base_url=base_url, api_key="crash")
    )
    desk: Agent[None, str] = Agent(model, name="support_desk", instructions=scenario.INSTRUCTIONS)

    @desk.tool_plain
    def look_up_invoice(invoice: str) -> str:
        """Look an invoice up."""
        return scenario.look_up_invoice(invoice)

    @desk.tool
    def issue_refund(ctx: RunContext[None], invoice: str, amount_eur: int) -> str:
        """Refund an invoice (a side effect)."""
        # clew's key is unique per session and call, stable across resume; the bare agent
        # has the model's tool-call id only (as the DBOS column uses)
        key = tool_context().idempotency_key if _durable() else str(ctx.tool_call_id)
        return scenario.issue_refund(trial, key, invoice, amount_eur)

    return desk


def durable(trial: Path, base_url: str) -> DurableAgent:
    return DurableAgent(
        agent(trial, base_url),
        tools={
            scenario.LOOKUP_TOOL: ToolPolicy(idempotent=True),
            scenario.REFUND_TOOL: ToolPolicy(in_doubt="retry"),
        },
    )


def _durable() -> bool:
    return os.environ.get("CRASH_DURABLE", "1") == "1"


def run(mode: str, trial: Path, base_url: str) -> str:
    """Run the scenario (``mode`` run) or recover it (``recover``); return the answer."""
    if not _durable():
        scenario.ready()
        return str(agent(trial, base_url).run_sync(scenario.PROMPT).output)
    desk = durable(trial, base_url)
    return sys_clew.durable_run(
        mode,
        trial,
        lambda session: str(desk.run_sync(scenario.PROMPT, session=session).output),
        # docs/pydantic-ai.md "Resume after a crash"
        lambda rt, sid: str(rt.resume(sid, agent=desk).output),
        "output",
    )


committed = sys_clew.committed


def boundaries(committed_items: list[str], tools: int) -> list[dict[str, str]]:
    """Return clew's own kill points: after every commit and inside two commits."""
    del tools
    n = len(committed_items)
    points = [{"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)} for k in range(1, n + 1)]
    points += [{"CLEW_FAULT_KILL_INSIDE_COMMIT": str(k)} for k in (1, n // 2)]
    return points
