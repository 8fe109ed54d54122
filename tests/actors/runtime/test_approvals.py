"""Approvals: a run parks on a tool call that needs a person, any process decides, the
same run continues — in new processes, across SIGKILLs, replayed and verified."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest
from _processes import child_env

from actors import (
    AlreadyDecided,
    Approve,
    Deny,
    Edit,
    NotWaiting,
    RunSettings,
    ScriptedModel,
    SessionWaiting,
    StillWaiting,
    UnknownApproval,
    tool,
)
from actors.runtime.runtime import Runtime
from eventlog.events import (
    ApprovalDecided,
    ApprovalRequested,
    InDoubtResolved,
    RunWaiting,
    ToolCallStarted,
    ToolFailed,
)
from projections import verify

CHILD = Path(__file__).parents[2] / "helpers" / "_hitl_child.py"


def _child(home: Path, project: Path, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(CHILD), str(home), str(project), *args],
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    return done.returncode, json.loads(lines[-1]) if lines else {}


def _payments(project: Path) -> list[tuple[str, int, int]]:
    path = project / "payments.txt"
    if not path.exists():
        return []
    return [(c, int(a), int(t)) for c, a, t in (ln.split() for ln in path.read_text().splitlines())]


def _parked(tmp_path: Path) -> tuple[Path, Path, str, str]:
    home, project = tmp_path / "home", tmp_path / "proj"
    code, out = _child(home, project, "run")
    assert (0, "waiting") == (code, out["status"])
    (call_id,) = out["pending"]
    return home, project, out["sid"], call_id


def _assert_replays(home: Path, project: Path, sid: str) -> None:
    with Runtime(home, project) as rt:
        assert [] == rt.interrupted_runs(sid)
        assert all(r.status == "completed" for r in rt.store.read_runs(sid))
        assert verify(rt.store, sid).ok
        report = rt.replay(sid)
        assert report.identical, report.summary()


def _events(home: Path, project: Path, sid: str) -> list[Any]:
    with Runtime(home, project, read_only=True) as rt:
        return [e.event for e in rt.store.read_events(sid)]


def test_a_run_parks_on_one_approval_while_the_other_two_workers_finish(tmp_path: Path) -> None:
    home, project, sid, call_id = _parked(tmp_path)
    with Runtime(home, project, read_only=True) as rt:
        runs = {r.run_id.rsplit("/", 1)[-1]: r.status for r in rt.store.read_runs(sid)}
        assert {
            f"{sid}:brain:r1": "waiting",
            "w1:r1": "waiting",
            "w2:r1": "completed",
            "w3:r1": "completed",
        } == runs
        assert [] == rt.interrupted_runs(sid)  # waiting is not interrupted
        (pending,) = rt.pending(sid)
        assert (call_id, "pay", {"amount": 42}, "payer") == (
            pending.tool_call_id,
            pending.tool_name,
            pending.arguments,
            pending.role,
        )
    assert [] == _payments(project)  # the tool did not run


@pytest.mark.parametrize(("kind", "paid"), [("approve", [42]), ("edit", [7]), ("deny", [])])
def test_a_new_process_decides_and_resumes_the_same_run_the_tool_runs_at_most_once(
    tmp_path: Path, kind: str, paid: list[int]
) -> None:
    home, project, sid, call_id = _parked(tmp_path)
    code, out = _child(home, project, "decide-resume", sid, call_id, kind)
    assert (0, "completed", "All done.") == (code, out["status"], out["answer"])
    assert [(call_id, amount, 1) for amount in paid] == _payments(project)
    events = _events(home, project, sid)
    (decided,) = [e for e in events if isinstance(e, ApprovalDecided)]
    assert kind == decided.decision
    if kind == "deny":
        (failed,) = [e for e in events if isinstance(e, ToolFailed)]
        assert "ApprovalDenied" == failed.error_type
        assert "too expensive" in failed.message
    _assert_replays(home, project, sid)


@pytest.mark.parametrize(
    ("fault", "paid"),
    [
        # Killed at the resume's first commit: with group commits (issue 17) it holds the
        # payer's run_resumed *and* tool_call_started (one commit before the tool runs),
        # so the call is in doubt and the fail policy decides; a crash before that commit
        # leaves nothing of the resume, as if it never ran.
        ({"CLEW_FAULT_KILL_AFTER_EVENTS": "1"}, []),
        # Killed after tool_call_started, before the tool ran: in doubt, policy fail.
        ({"CLEW_FAULT_KILL_BEFORE_TOOL": "1"}, []),
    ],
)
def test_a_sigkill_between_the_decision_and_the_tools_start_runs_the_tool_once_on_resume(
    tmp_path: Path, fault: dict[str, str], paid: list[int]
) -> None:
    home, project, sid, call_id = _parked(tmp_path)
    code, _ = _child(home, project, "decide", sid, call_id, "approve")
    assert 0 == code
    code, _ = _child(home, project, "resume", sid, **fault)
    assert -9 == code
    assert [] == _payments(project)
    code, out = _child(home, project, "resume", sid)
    assert (0, "completed") == (code, out["status"])
    assert [(call_id, amount, 1) for amount in paid] == _payments(project)
    resolved = [e for e in _events(home, project, sid) if isinstance(e, InDoubtResolved)]
    assert (["fail"] if not paid else []) == [e.decision for e in resolved]
    _assert_replays(home, project, sid)


def test_a_sigkill_during_the_approved_tool_applies_the_in_doubt_policy(tmp_path: Path) -> None:
    home, project, sid, call_id = _parked(tmp_path)
    code, _ = _child(home, project, "decide-resume", sid, call_id, "approve", HITL_KILL_IN_PAY="1")
    assert -9 == code
    code, out = _child(home, project, "resume", sid)
    assert (0, "completed") == (code, out["status"])
    assert [(call_id, 42, 1)] == _payments(project)  # policy fail: not run again
    events = _events(home, project, sid)
    (resolved,) = [e for e in events if isinstance(e, InDoubtResolved)]
    assert ("fail", call_id) == (resolved.decision, resolved.tool_call_id)
    _assert_replays(home, project, sid)


def test_deciding_wrongly_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    home, project, sid, call_id = _parked(tmp_path)
    with Runtime(home, project) as rt:
        other = rt.new_session()
        before = rt.store.count_events(sid)
        with pytest.raises(UnknownApproval):
            rt.decide(sid, "call_nope", Approve())
        with pytest.raises(NotWaiting):
            rt.decide(other.id, call_id, Approve())  # a call of another session
        with pytest.raises(NotWaiting):
            other.answer("yes")
        model = ScriptedModel({"rules": [{"replies": [{"text": "x"}]}]})
        with pytest.raises(StillWaiting, match=call_id):
            rt.resume(sid, model=model)
        with pytest.raises(SessionWaiting):
            rt.run(sid, "Another request", model=model)
        assert before == rt.store.count_events(sid)
        rt.decide(sid, call_id, Deny(reason="no"))
        with pytest.raises(AlreadyDecided):
            rt.decide(sid, call_id, Approve())
        assert before + 1 == rt.store.count_events(sid)
        assert [] == rt.pending(sid)


class Amount(pydantic.BaseModel):
    amount: int


def test_the_primarys_own_call_waits_by_policy_and_an_edit_resumes_it_in_process(
    tmp_path: Path,
) -> None:
    paid: list[int] = []

    def big(call: Any, ctx: Any) -> bool:
        return bool(call.arguments["amount"] > 10)

    @tool(Amount, needs_approval=big)
    def refund(args: Amount) -> str:
        """Refund an amount."""
        paid.append(args.amount)
        return "refunded"

    @tool(Amount)
    def charge(args: Amount) -> str:
        """Charge an amount."""
        paid.append(-args.amount)
        return "charged"

    model = ScriptedModel(
        {
            "rules": [
                {"role": "router", "replies": [{"json": {"primary_role": "clerk"}}]},
                {
                    "role": "clerk",
                    "replies": [
                        {"text": "(never)"},
                        {"tool_calls": [{"name": "refund", "arguments": {"amount": 5}}]},
                        {"tool_calls": [{"name": "refund", "arguments": {"amount": 50}}]},
                        {"tool_calls": [{"name": "charge", "arguments": {"amount": 1}}]},
                        {"text": "Done."},
                    ],
                },
            ]
        }
    )
    settings = RunSettings(approval_required=["charge"])
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        session = rt.new_session()
        out = session.run("Refund.", model=model, tools=[refund, charge], settings=settings)
        assert ("waiting", [5]) == (out.status, paid)
        (pending,) = out.pending
        assert "refund" == pending.tool_name
        assert [pending] == session.pending()
        session.decide(pending.tool_call_id, Edit(arguments={"amount": 20}))
        out = session.resume_waiting(model=model, tools=[refund, charge])
        assert ("waiting", [5, 20]) == (out.status, paid)
        (pending,) = out.pending
        assert ("charge", "the run's settings require approval for this tool") == (
            pending.tool_name,
            pending.reason,
        )
        session.decide(pending.tool_call_id, Approve())
        out = session.resume_waiting(model=model, tools=[refund, charge])
        assert ("completed", "Done.", [5, 20, -1]) == (out.status, out.answer, paid)
        events = [e.event for e in rt.store.read_events(session.id)]
        assert 2 == sum(isinstance(e, ApprovalRequested) for e in events)
        assert 2 == sum(isinstance(e, RunWaiting) for e in events)
        started = [e.arguments for e in events if isinstance(e, ToolCallStarted)]
        assert [{"amount": 5}, {"amount": 20}, {"amount": 1}] == started
        assert verify(rt.store, session.id).ok
        report = rt.replay(session.id)
        assert report.identical, report.summary()
