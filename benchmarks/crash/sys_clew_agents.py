"""clew + the OpenAI Agents SDK: the SDK row's agent, made durable by clew's ``DurableRunner``.

Written the way docs/openai-agents.md says: the same ``Agent`` (Chat Completions model on
the loopback server, the two tools) is run by :class:`actors.openai_agents.DurableRunner`
inside a clew session in a SQLite home (clew's default durability); the read is
``ToolPolicy(idempotent=True)``, the refund ``in_doubt="retry"`` keyed on
``tool_context().idempotency_key``; a killed process is recovered with ``rt.resume(sid,
agent=runner)`` ("Resume after a crash"). With ``CRASH_DURABLE=0`` the bare agent runs
with ``Runner.run`` and no session (the no-durability baseline). clew's own kill points
are its fault variables after the k-th committed event and inside a commit.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import scenario
import sys_clew
import sys_clew_pai
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.tool_context import ToolContext
from openai import AsyncOpenAI

from actors.openai_agents import DurableRunner, ToolPolicy, tool_context

NAME = "clew + OpenAI Agents SDK"
committed = sys_clew.committed
boundaries = sys_clew_pai.boundaries


def _durable() -> bool:
    return os.environ.get("CRASH_DURABLE", "1") == "1"


def agent(trial: Path, base_url: str) -> Agent[Any]:
    @function_tool
    def look_up_invoice(invoice: str) -> str:
        """Look an invoice up."""
        return scenario.look_up_invoice(invoice)

    @function_tool
    def issue_refund(ctx: ToolContext[Any], invoice: str, amount_eur: int) -> str:
        """Refund an invoice (a side effect)."""
        # clew's key is unique per session and call, stable across resume; the bare agent
        # has the model's tool-call id only (as the SDK row uses)
        key = tool_context().idempotency_key if _durable() else ctx.tool_call_id
        return scenario.issue_refund(trial, key, invoice, amount_eur)

    client = AsyncOpenAI(base_url=base_url, api_key="crash")
    return Agent(
        name="support_desk",
        instructions=scenario.INSTRUCTIONS,
        model=OpenAIChatCompletionsModel(model="crash-model", openai_client=client),
        tools=[look_up_invoice, issue_refund],
    )


def runner(trial: Path, base_url: str) -> DurableRunner:
    return DurableRunner(
        agent(trial, base_url),
        tools={
            scenario.LOOKUP_TOOL: ToolPolicy(idempotent=True),
            scenario.REFUND_TOOL: ToolPolicy(in_doubt="retry"),
        },
        run_config=RunConfig(tracing_disabled=True),
    )


def run(mode: str, trial: Path, base_url: str) -> str:
    """Run the scenario (``mode`` run) or recover it (``recover``); return the answer."""
    set_tracing_disabled(True)
    if not _durable():
        scenario.ready()
        return str(asyncio.run(Runner.run(agent(trial, base_url), scenario.PROMPT)).final_output)
    desk = runner(trial, base_url)
    return sys_clew.durable_run(
        mode,
        trial,
        lambda session: str(desk.run_sync(scenario.PROMPT, session=session).final_output),
        # docs/openai-agents.md "Resume after a crash"
        lambda rt, sid: str(rt.resume(sid, agent=desk).output),
        "output",
    )
