"""A ``needs_approval`` tool of an Agents SDK run waits the clew way: decided by ``clew
approve`` / ``clew deny`` in another process, resumed later, replayed identically."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("agents")

from _cli_helpers import Where, run_process
from _oai_desk import PROMPT, Reply, calls, desk, ledger

from actors.openai_agents import DurableRunFailed
from actors.runtime.runtime import Runtime


def _waiting(tmp_path: Path) -> str:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        with pytest.raises(DurableRunFailed) as raised:
            desk(tmp_path, approval=True).run_sync(PROMPT, session=session)
        outcome = raised.value.outcome
        assert "waiting" == outcome.status
        assert ["issue_refund"] == [p.tool_name for p in outcome.pending]
        assert ["call-2"] == [p.tool_call_id for p in rt.pending(session.id)]
        assert [] == ledger(tmp_path)
        return session.id


def test_an_approval_decided_by_clew_approve_in_another_process_resumes_the_run(
    tmp_path: Path,
) -> None:
    sid = _waiting(tmp_path)
    approved = run_process(Where(tmp_path / "home", tmp_path), "approve", sid, "call-2")
    assert 0 == approved.code, approved.err
    with Runtime(tmp_path / "home", tmp_path) as rt:
        outcome = rt.resume(sid, agent=desk(tmp_path, approval=True))
        assert "completed" == outcome.status, outcome.error
        assert Reply(answer="Refunded 42.50 for A-17.", refunded=42.5) == outcome.output
        assert 1 == len(ledger(tmp_path))
        assert 3 == calls(tmp_path)  # the two answered before the wait are not asked again
        report = rt.replay(sid, agent=desk(tmp_path, approval=True))
        assert report.identical, report.summary()
        assert rt.verify(sid).ok


def test_a_denied_call_never_runs_and_the_model_is_told(tmp_path: Path) -> None:
    sid = _waiting(tmp_path)
    denied = run_process(Where(tmp_path / "home", tmp_path), "deny", sid, "call-2",
                         "--reason", "no refunds today")  # fmt: skip
    assert 0 == denied.code, denied.err
    with Runtime(tmp_path / "home", tmp_path) as rt:
        outcome = rt.resume(sid, agent=desk(tmp_path, approval=True))
        assert "completed" == outcome.status, outcome.error
        assert [] == ledger(tmp_path)
        failed = [e.event for e in rt.store.iter_events(sid) if e.event_type == "tool_failed"]
        assert ["ApprovalDenied"] == [f.error_type for f in failed]
        assert rt.replay(sid, agent=desk(tmp_path, approval=True)).identical
