"""LangGraph: the prebuilt ReAct agent (a model node and a ``ToolNode``) on ``SqliteSaver``.

Recovered the way LangGraph's durable-execution page says: with the same ``thread_id``,
``graph.invoke(None, config)`` resumes from the last checkpoint
(https://docs.langchain.com/oss/python/langgraph/durable-execution, "Resuming workflows";
checkpoints per super-step: https://docs.langchain.com/oss/python/langgraph/persistence).
Its default durability is kept (``invoke`` without ``durability=``). The kill points
LangGraph exposes are its checkpoints: ``CRASH_KILL_AFTER_CHECKPOINT=k`` kills the process
right after the saver wrote the k-th one. The refund is keyed by the tool-call id
(``InjectedToolCallId``), the most stable key a LangGraph tool gets.
"""

from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import scenario
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent

NAME = "LangGraph"
THREAD: Any = {"configurable": {"thread_id": "support-1"}}
KILL_AFTER_CHECKPOINT = "CRASH_KILL_AFTER_CHECKPOINT"


class KillingSaver(SqliteSaver):
    """``SqliteSaver`` that SIGKILLs the process after its k-th ``put`` (a step boundary)."""

    puts = 0

    def put(self, *args: Any, **kwargs: Any) -> Any:
        out = super().put(*args, **kwargs)
        KillingSaver.puts += 1
        if os.environ.get(KILL_AFTER_CHECKPOINT) == str(KillingSaver.puts):
            os.kill(os.getpid(), signal.SIGKILL)
        return out


def graph(trial: Path, base_url: str, conn: sqlite3.Connection | None) -> Any:
    @tool
    def look_up_invoice(invoice: str) -> str:
        """Look an invoice up."""
        return scenario.look_up_invoice(invoice)

    @tool
    def issue_refund(
        invoice: str, amount_eur: int, tool_call_id: Annotated[str, InjectedToolCallId]
    ) -> str:
        """Refund an invoice (a side effect)."""
        return scenario.issue_refund(trial, tool_call_id, invoice, amount_eur)

    model = ChatOpenAI(model="crash-model", base_url=base_url, api_key="crash")  # type: ignore[arg-type]
    saver = None
    if conn is not None:
        saver = KillingSaver(conn)
        saver.setup()
    return create_react_agent(
        model,
        [look_up_invoice, issue_refund],
        prompt=scenario.INSTRUCTIONS,
        checkpointer=saver,
    )


def _answer(state: dict[str, Any]) -> str:
    last = state["messages"][-1]
    return str(last.content) if isinstance(last, AIMessage) else ""


def run(mode: str, trial: Path, base_url: str) -> str:
    """Run (``run``) or resume (``recover``) the agent; ``durable=0`` in the env: no saver."""
    durable = os.environ.get("CRASH_DURABLE", "1") == "1"
    (trial / "store").mkdir(exist_ok=True)
    conn = sqlite3.connect(trial / "store" / "lg.sqlite", check_same_thread=False)
    agent = graph(trial, base_url, conn if durable else None)
    scenario.ready()
    prompt = {"messages": [HumanMessage(content=scenario.PROMPT)]}
    # Resume from the last checkpoint, the docs' way, whatever the state looks like: a
    # checkpoint's pending writes may already hold the next node's input (``next`` is then
    # empty before the run has ended), and on an ended thread it runs nothing.
    if mode == "recover" and durable and agent.get_state(THREAD).values:
        return _answer(agent.invoke(None, THREAD))
    return _answer(agent.invoke(prompt, THREAD))


def committed(trial: Path) -> list[str]:
    """Return the thread's checkpoint ids and pending writes: what a recovery must keep."""
    path = trial / "store" / "lg.sqlite"
    if not path.exists():
        return []
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT checkpoint_id FROM checkpoints ORDER BY 1").fetchall()
        writes = conn.execute(
            "SELECT checkpoint_id, task_id, idx FROM writes ORDER BY 1, 2, 3"
        ).fetchall()
    except sqlite3.OperationalError:  # killed before the saver made its tables
        return []
    finally:
        conn.close()
    return [f"cp:{r[0]}" for r in rows] + [f"w:{a}:{b}:{c}" for a, b, c in writes]


def boundaries(committed_items: list[str], tools: int) -> list[dict[str, str]]:
    """Return LangGraph's own kill points: after every checkpoint."""
    del tools
    checkpoints = sum(1 for c in committed_items if c.startswith("cp:"))
    return [{KILL_AFTER_CHECKPOINT: str(k)} for k in range(1, checkpoints + 1)]
