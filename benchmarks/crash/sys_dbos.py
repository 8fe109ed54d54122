"""DBOS + Pydantic AI: a durable agent on a SQLite system database, recovered by ``launch()``.

Written the way Pydantic AI's DBOS page says (https://ai.pydantic.dev/durable_execution/dbos,
and DBOS's https://docs.dbos.dev/integrations/pydantic-ai): the agent gets the
``DBOSDurability`` capability (this Pydantic AI deprecates the ``DBOSAgent`` wrapper in its
favour: the same steps), which turns each model request and each tool call into a DBOS
step, and ``agent.run_sync`` is called inside a ``@DBOS.workflow``. Recovery is DBOS's own:
"when it restarts all your workflows will automatically resume from the last completed
step" — ``DBOS.launch()`` recovers the pending workflow
(https://docs.dbos.dev/python/tutorials/workflow-tutorial), and the runner waits for its
result with ``DBOS.retrieve_workflow`` (the workflow id is fixed with ``SetWorkflowID``).
DBOS's step boundaries are the model requests and tool calls, so the runner's generic kill
points (at each request, at each tool) are its boundaries. The refund is keyed by the
tool-call id (``RunContext.tool_call_id``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

import scenario
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent, RunContext
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

NAME = "DBOS + Pydantic AI"
WORKFLOW_ID = "support-1"
logging.getLogger("dbos").setLevel(logging.ERROR)


def agent(trial: Path, base_url: str, durable: bool) -> Any:
    model = OpenAIChatModel(
        "crash-model", provider=OpenAIProvider(base_url=base_url, api_key="crash")
    )
    capabilities = [DBOSDurability()] if durable else []
    desk: Any = Agent(
        model, name="support_desk", instructions=scenario.INSTRUCTIONS, capabilities=capabilities
    )

    def refund(key: str, invoice: str, amount_eur: int) -> str:
        return scenario.issue_refund(trial, key, invoice, amount_eur)

    lookup = scenario.look_up_invoice
    if durable:
        # Pydantic AI makes model requests steps; function tools run in the workflow, so
        # the tools' I/O is a step of its own, as DBOS's step tutorial says of any call to
        # an external API (https://docs.dbos.dev/python/tutorials/step-tutorial).
        refund = DBOS.step(name="issue_refund")(refund)
        lookup = DBOS.step(name="look_up_invoice")(lookup)

    @desk.tool_plain
    def look_up_invoice(invoice: str) -> str:
        """Look an invoice up."""
        return lookup(invoice)

    @desk.tool
    def issue_refund(ctx: RunContext[None], invoice: str, amount_eur: int) -> str:
        """Refund an invoice (a side effect)."""
        return refund(str(ctx.tool_call_id), invoice, amount_eur)

    return desk


def run(mode: str, trial: Path, base_url: str) -> str:
    """Run the workflow (``run``) or let ``DBOS.launch()`` recover it (``recover``)."""
    durable = os.environ.get("CRASH_DURABLE", "1") == "1"
    desk = agent(trial, base_url, durable)
    if not durable:
        scenario.ready()
        return str(desk.run_sync(scenario.PROMPT).output)

    @DBOS.workflow(name="support_desk_run")
    def support(prompt: str) -> str:
        return str(desk.run_sync(prompt).output)

    (trial / "store").mkdir(exist_ok=True)
    db = trial / "store" / "dbos.sqlite"
    DBOS(
        config={
            "name": "crash",
            "system_database_url": f"sqlite:///{db}",
            "run_admin_server": False,
            "log_level": "ERROR",
        }
    )
    DBOS.launch()  # recovers this executor's pending workflows, in the background
    scenario.ready()
    try:
        if mode == "recover" and any(w.workflow_id == WORKFLOW_ID for w in DBOS.list_workflows()):
            return str(DBOS.retrieve_workflow(WORKFLOW_ID).get_result())
        with SetWorkflowID(WORKFLOW_ID):
            return support(scenario.PROMPT)
    finally:
        DBOS.destroy()


def committed(trial: Path) -> list[str]:
    """Return the recorded step outputs: what a recovery must keep."""
    path = trial / "store" / "dbos.sqlite"
    if not path.exists():
        return []
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT workflow_uuid, function_id, function_name FROM operation_outputs ORDER BY 1, 2"
        ).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()
    return [f"{a}:{b}:{c}" for a, b, c in rows]


def boundaries(committed_items: list[str], tools: int) -> list[dict[str, str]]:
    """DBOS exposes no kill point of its own: its steps are the generic ones."""
    del committed_items, tools
    return []
