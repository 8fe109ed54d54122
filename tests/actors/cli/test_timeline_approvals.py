"""``clew timeline`` and ``clew tail`` say what an approval was about and how it was decided
(the tool, its arguments, approve / deny / edit and by whom), and what a run waits for."""

from __future__ import annotations

from pathlib import Path

from _cli_helpers import Where, invoke
from _ui_helpers import pay_model, pay_tools, waiting_session

from actors import Runtime
from actors.documents.summaries import summarise
from actors.orchestration.approvals import Edit
from eventlog.events import HookDecided


def _decided(tmp_path: Path) -> tuple[Where, str]:
    where = Where(tmp_path / "home", tmp_path / "project")
    where.project.mkdir()
    paid: list[int] = []
    with Runtime(where.home, where.project) as rt:
        sid = waiting_session(rt, paid)
        s = rt.session(sid)
        (pending,) = s.pending()
        s.decide(pending.tool_call_id, Edit(arguments={"amount": 40}))
        s.resume_waiting(model=pay_model(), tools=pay_tools(paid))
    assert [40] == paid
    return where, sid


def _row(out: str, event: str) -> str:
    """The rows of ``event`` (the worker's run and its main run both wait and resume)."""
    rows = [r for r in out.splitlines() if f"  {event} " in r]
    assert rows, event
    return "\n".join(rows)


def test_the_timeline_shows_the_approval_trail(tmp_path: Path) -> None:
    where, sid = _decided(tmp_path)
    out = invoke(where, "timeline", sid).out
    assert 'pay {"amount":42} [payer]' in _row(out, "approval_requested")
    decided = _row(out, "approval_decided")
    assert 'pay {"amount":42} [payer] ← edit by a person → {"amount":40} · ' in decided
    assert "approval: 1 pending" in _row(out, "run_waiting")
    assert "brain:r1" in _row(out, "run_resumed")
    tail = invoke(where, "tail", sid).out
    assert 'edit by a person → {"amount":40}' in _row(tail, "approval_decided")
    assert 'pay {"amount":42} [payer]' in _row(tail, "approval_requested")


def test_a_hook_s_verdict_says_which_hook_decided() -> None:
    ev = HookDecided(hook="before_tool", decision="deny", reason="too much")
    assert "deny by the before_tool hook: too much" == summarise("sess_x", ev)
