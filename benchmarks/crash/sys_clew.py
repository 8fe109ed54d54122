"""clew: a native Team (the support desk of examples/team.py), recovered with ``rt.resume``.

Durability is clew's default (a SQLite home, ``durability="normal"``: every committed
event survives a process crash, docs/architecture.md). The refund tool keys
its effect on ``ctx.idempotency_key`` and declares ``in_doubt="retry"``: a resume re-runs a
refund a crash left in doubt under the same key (docs/replay-and-recovery.md,
"Resume" and "What exactly once means here"). The kill points clew exposes are its fault
variables (actors/runtime/faults.py): after the k-th committed event, before the k-th tool,
inside the commit of the k-th row.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pydantic
import scenario

from actors import NothingToResume, Role, Runtime, Session, Team, ToolContext, tool
from actors.models.providers import OpenAIChatModel

NAME = "clew"
SESSION_FILE = "clew-session.txt"


class InvoiceArgs(pydantic.BaseModel):
    invoice: str


class RefundArgs(pydantic.BaseModel):
    invoice: str
    amount_eur: int


class Answer(pydantic.BaseModel):
    """What the desk replies (typed output: checked)."""

    reply: str
    refund_id: str | None = None


def team(trial: Path) -> Team:
    @tool(InvoiceArgs, idempotent=True)  # read-only: may simply run again
    def look_up_invoice(args: InvoiceArgs) -> str:
        """Look an invoice up."""
        return scenario.look_up_invoice(args.invoice)

    @tool(RefundArgs, in_doubt="retry")  # keyed by the call: a retry refunds once
    def issue_refund(args: RefundArgs, ctx: ToolContext) -> str:
        """Refund an invoice (a side effect)."""
        return scenario.issue_refund(trial, ctx.idempotency_key, args.invoice, args.amount_eur)

    return Team(
        instructions=scenario.INSTRUCTIONS,
        roles=[
            Role(
                "agent",
                description="answers the customer",
                tools=[look_up_invoice, issue_refund],
                output=Answer,
            )
        ],
        primary="agent",
    )


def last_outcome(rt: Runtime, sid: str, key: str) -> str:
    """Return ``key`` of the outcome of the session's last ended run (a kill after
    ``run_ended``): ``summary`` for a Team's run, ``output`` for a framework agent's."""
    for ev in reversed(rt.store.read_events(sid)):
        if ev.event_type == "run_ended":
            outcome = getattr(ev.event, "outcome", None) or {}
            return str(outcome.get(key, ""))
    return ""


def durable_run(
    mode: str,
    trial: Path,
    start: Callable[[Session], str],
    resume: Callable[[Runtime, str], str],
    outcome_key: str,
) -> str:
    """Run the scenario in a new session of the trial's home (``mode`` run), or recover it
    (``recover``) the way docs/replay-and-recovery.md says: ``start`` again in the same
    session if the kill came before ``run_started``, ``resume`` the interrupted run, or
    the recorded answer if the kill came after ``run_ended``. Return the answer."""
    sid_file = trial / SESSION_FILE
    rt = Runtime.from_env(home=str(trial / "store"), project_dir=str(trial))
    try:
        scenario.ready()
        if mode == "recover" and sid_file.exists():
            sid = sid_file.read_text().strip()
            if not rt.main_runs(sid):  # killed before run_started: nothing to resume
                return start(rt.session(sid))
            try:
                return resume(rt, sid)
            except NothingToResume:  # killed after the run ended
                return last_outcome(rt, sid, outcome_key)
        session = rt.new_session()
        sid_file.write_text(session.id)
        return start(session)
    finally:
        rt.close()


def run(mode: str, trial: Path, base_url: str) -> str:
    """Run the scenario (``mode`` run) or recover it (``recover``); return the answer."""
    model = OpenAIChatModel("crash-model", base_url=base_url, api_key="crash")
    return durable_run(
        mode,
        trial,
        lambda session: session.run(scenario.PROMPT, model=model, team=team(trial)).answer,
        lambda rt, sid: rt.resume(sid, model=model, team=team(trial)).answer,
        "summary",
    )


def committed(trial: Path) -> list[str]:
    """Return the session's committed events (seq, type, id): what a recovery must keep."""
    sid_file = trial / SESSION_FILE
    if not sid_file.exists():
        return []
    with Runtime(str(trial / "store"), project_dir=str(trial), read_only=True) as rt:
        sid = sid_file.read_text().strip()
        return [f"{e.seq}:{e.event_type}:{e.event_id}" for e in rt.store.read_events(sid)]


def boundaries(committed_items: list[str], tools: int) -> list[dict[str, str]]:
    """Return clew's own kill points: after every commit, before every tool, inside commits."""
    committed_events = len(committed_items)
    points = [{"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)} for k in range(1, committed_events + 1)]
    points += [{"CLEW_FAULT_KILL_BEFORE_TOOL": str(k)} for k in range(1, tools + 1)]
    points += [{"CLEW_FAULT_KILL_INSIDE_COMMIT": str(k)} for k in (1, committed_events // 2)]
    return points
