"""The one scenario every system runs: a support desk refunds a lost invoice.

The agent looks the invoice up (idempotent: a read), decides, refunds it (a side effect),
and answers. The tools' bodies live here so every system runs the same ones; each system
only wraps them in its own tool decorator.

The refund appends a line with the call's key to ``ledger.txt`` (fsynced): the ledger
stands for a payment API that takes an idempotency key, so a refund is counted once per
distinct key — re-running the tool with the same key is absorbed, a new key is a second
refund. Each system passes the most stable key it offers (clew ``ctx.idempotency_key``,
the others the model's tool-call id).

Kill points inside the tools come from ``CRASH_KILL_TOOL`` (``<tool>:enter`` or
``issue_refund:written`` — after the ledger write, before the tool returns).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

PROMPT = "Invoice INV-42 never arrived. Please check it and refund me if it was lost."
INSTRUCTIONS = (
    "You are the support desk of ACME. Look the invoice up, refund it if it was lost "
    "(for what was paid), then answer as JSON with `reply` and `refund_id`."
)
INVOICE = "INV-42"
LOOKUP_TOOL = "look_up_invoice"
REFUND_TOOL = "issue_refund"
INVOICE_MARK = "invoice-status:"
REFUND_MARK = "refund-issued:"
REPLY = "Sorry! INV-42 was lost: we refunded 42 EUR."
LEDGER = "ledger.txt"
KILL_TOOL = "CRASH_KILL_TOOL"


def _maybe_kill(point: str) -> None:
    if os.environ.get(KILL_TOOL) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def refund_id(key: str) -> str:
    """Return the refund id the payment API gives the refund keyed ``key``."""
    return "R-" + hashlib.sha256(key.encode()).hexdigest()[:10]


def look_up_invoice(invoice: str) -> str:
    """Look an invoice up (read-only)."""
    _maybe_kill(f"{LOOKUP_TOOL}:enter")
    return f"{INVOICE_MARK} {invoice} lost in transit; paid 42 EUR"


def issue_refund(state: Path, key: str, invoice: str, amount_eur: int) -> str:
    """Refund ``invoice`` under ``key``: one ledger line per call, one refund per key."""
    _maybe_kill(f"{REFUND_TOOL}:enter")
    with (state / LEDGER).open("a", encoding="utf-8") as f:
        f.write(key + "\n")
        f.flush()
        os.fsync(f.fileno())
    _maybe_kill(f"{REFUND_TOOL}:written")
    return f"{REFUND_MARK} {refund_id(key)} {amount_eur} EUR for {invoice}"


def refund_id_in(result: str) -> str:
    """Return the refund id a refund tool result names."""
    after = result.split(REFUND_MARK, 1)[1].split()
    return after[0] if after else ""


def answer_json(rid: str) -> str:
    """Return the final answer the model gives once the refund ``rid`` is issued."""
    return json.dumps({"reply": REPLY, "refund_id": rid})


def ledger_keys(state: Path) -> list[str]:
    """Return the ledger's lines (one per run of the refund tool's body)."""
    path = state / LEDGER
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def is_correct(answer: Any, state: Path) -> bool:
    """True when ``answer`` is the expected reply naming a refund that is in the ledger."""
    try:
        data = json.loads(answer) if isinstance(answer, str) else answer
    except ValueError:
        return False
    if not isinstance(data, dict) or data.get("reply") != REPLY:
        return False
    return data.get("refund_id") in {refund_id(k) for k in ledger_keys(state)}


def ready() -> None:
    """Tell the runner (stdout) that the system opened its store and starts (or resumes)."""
    print(json.dumps({"ready": time.time()}), flush=True)
