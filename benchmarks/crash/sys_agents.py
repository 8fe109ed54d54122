"""The OpenAI Agents SDK: an ``Agent`` with a ``SQLiteSession``, recovered by re-running it.

The SDK's durable state is its session memory (https://openai.github.io/openai-agents-python/sessions/):
``Runner.run(agent, input, session=session)`` stores the conversation's items (user input,
model output, tool calls and results) in the session's SQLite file, and a later run with
the same session continues from that history. That is the recovery the docs offer: the
runner re-runs the agent with the same session — with the user's message when the session
holds nothing yet, else with no new input (the history carries on). A session whose last
item is the final answer is done. The model is the SDK's Chat Completions model on the
loopback server. The refund is keyed by the tool-call id (``ToolContext.tool_call_id``).
The SDK's kill points are its session writes: ``CRASH_KILL_AFTER_SESSION_WRITE=k`` kills
the process right after the k-th ``add_items``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import scenario
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from agents.tool_context import ToolContext
from openai import AsyncOpenAI

NAME = "OpenAI Agents SDK"
SESSION_ID = "support-1"
KILL_AFTER_WRITE = "CRASH_KILL_AFTER_SESSION_WRITE"


class KillingSession(SQLiteSession):
    """``SQLiteSession`` that SIGKILLs the process after its k-th write (a step boundary)."""

    writes = 0

    async def add_items(self, items: Any) -> None:
        await super().add_items(items)
        KillingSession.writes += 1
        if os.environ.get(KILL_AFTER_WRITE) == str(KillingSession.writes):
            os.kill(os.getpid(), signal.SIGKILL)


def agent(trial: Path, base_url: str) -> Agent[Any]:
    @function_tool
    def look_up_invoice(invoice: str) -> str:
        """Look an invoice up."""
        return scenario.look_up_invoice(invoice)

    @function_tool
    def issue_refund(ctx: ToolContext[Any], invoice: str, amount_eur: int) -> str:
        """Refund an invoice (a side effect)."""
        return scenario.issue_refund(trial, ctx.tool_call_id, invoice, amount_eur)

    client = AsyncOpenAI(base_url=base_url, api_key="crash")
    return Agent(
        name="support_desk",
        instructions=scenario.INSTRUCTIONS,
        model=OpenAIChatCompletionsModel(model="crash-model", openai_client=client),
        tools=[look_up_invoice, issue_refund],
    )


def _final_text(items: list[Any]) -> str | None:
    """Return the session's final answer, if its last item is one."""
    if not items:
        return None
    last = items[-1]
    if last.get("role") != "assistant" or last.get("type", "message") != "message":
        return None
    content = last.get("content")
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content)


async def _run(mode: str, trial: Path, base_url: str) -> str:
    durable = os.environ.get("CRASH_DURABLE", "1") == "1"
    set_tracing_disabled(True)
    desk = agent(trial, base_url)
    if not durable:
        scenario.ready()
        return str((await Runner.run(desk, scenario.PROMPT)).final_output)
    (trial / "store").mkdir(exist_ok=True)
    session = KillingSession(SESSION_ID, str(trial / "store" / "agents.sqlite"))
    items = await session.get_items()
    scenario.ready()
    if mode == "recover" and items:
        done = _final_text(items)
        if done is not None:
            return done
        return str((await Runner.run(desk, [], session=session)).final_output)
    return str((await Runner.run(desk, scenario.PROMPT, session=session)).final_output)


def run(mode: str, trial: Path, base_url: str) -> str:
    """Run the agent (``run``) or re-run it on its session (``recover``)."""
    return asyncio.run(_run(mode, trial, base_url))


def committed(trial: Path) -> list[str]:
    """Return the session's stored items: what a recovery must keep."""
    path = trial / "store" / "agents.sqlite"
    if not path.exists():
        return []
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT id, message_data FROM agent_messages ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()
    return [f"{i}:{len(data)}" for i, data in rows]


def boundaries(committed_items: list[str], tools: int) -> list[dict[str, str]]:
    """Return the SDK's own kill points: after every session write."""
    del tools
    return [{KILL_AFTER_WRITE: str(k)} for k in range(1, len(committed_items) + 1)]
