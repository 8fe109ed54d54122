"""Issue 32 item 17: two decisions for one call at the same instant — from two threads of
one process, from two processes, through one inspector — record exactly one; the other
is refused with ``AlreadyDecided``, and the session stays resumable."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _processes import child_env
from _ui_helpers import CSRF, pay_model, pay_tools, waiting_session
from starlette.testclient import TestClient

from actors import AlreadyDecided, Approve, Deny, Runtime
from actors.ui import create_app
from eventlog.events import ApprovalDecided
from projections import verify

CHILD = Path(__file__).parents[2] / "helpers" / "_hitl_child.py"
THREADS = 6


def _decided(rt: Runtime, sid: str) -> list[ApprovalDecided]:
    return [e.event for e in rt.store.read_events(sid) if isinstance(e.event, ApprovalDecided)]


def _at_once(work: Callable[[int], object]) -> list[object]:
    """Run ``work(i)`` on :data:`THREADS` threads released together; return the results."""
    start = threading.Barrier(THREADS)
    results: list[object] = []

    def one(i: int) -> None:
        start.wait()
        results.append(work(i))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def _decide(rt: Runtime, sid: str, call: str, i: int) -> str:
    try:
        rt.decide(sid, call, Approve() if i % 2 else Deny(reason="no"))
    except AlreadyDecided:
        return "refused"
    return "recorded"


def _post(client: TestClient, sid: str, call: str, i: int) -> int:
    body: dict[str, Any] = {"call_id": call, "decision": "approve"}
    if i % 2:
        body = {"call_id": call, "decision": "deny", "reason": "no"}
    url = f"/api/sessions/{sid}/decide"
    return client.post(url, json=body, headers={"X-Clew-CSRF": CSRF}).status_code


def test_two_decisions_for_one_call_at_the_same_instant_record_exactly_one_across_threads(
    tmp_path: Path,
) -> None:
    paid: list[int] = []
    with Runtime(tmp_path / "home", tmp_path) as rt:
        for _ in range(4):
            sid = waiting_session(rt, paid)
            (pending,) = rt.pending(sid)
            call = pending.tool_call_id
            outcomes = _at_once(lambda i, sid=sid, call=call: _decide(rt, sid, call, i))
            assert ["recorded"] + ["refused"] * (THREADS - 1) == sorted(outcomes)
            assert 1 == len(_decided(rt, sid))
            out = rt.resume(sid, model=pay_model(), tools=pay_tools(paid))
            assert "completed" == out.status, out
            assert verify(rt.store, sid).ok
            assert rt.replay(sid).identical


def test_two_decisions_for_one_call_through_one_inspector_record_exactly_one(
    tmp_path: Path,
) -> None:
    paid: list[int] = []
    with Runtime(tmp_path / "home", tmp_path) as rt:
        app = create_app(rt, csrf=CSRF, hosts=["testserver"])
        for _ in range(3):
            sid = waiting_session(rt, paid)
            (pending,) = rt.pending(sid)
            call = pending.tool_call_id
            with TestClient(app) as c:
                codes = _at_once(lambda i, sid=sid, call=call, c=c: _post(c, sid, call, i))
            assert [200] + [400] * (THREADS - 1) == sorted(codes)
            assert 1 == len(_decided(rt, sid))


def test_two_decisions_for_one_call_from_two_processes_record_exactly_one(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    paid: list[int] = []
    with Runtime(home, project) as rt:
        sid = waiting_session(rt, paid)
        (pending,) = rt.pending(sid)
    children = [
        subprocess.Popen(
            [
                sys.executable,
                str(CHILD),
                str(home),
                str(project),
                "decide",
                sid,
                pending.tool_call_id,
                kind,
            ],
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for kind in ("approve", "deny", "approve", "deny")
    ]
    results = [(c.wait(120), c.communicate()[1]) for c in children]
    assert [0] == [code for code, _ in results if code == 0]
    losers = [err for code, err in results if code != 0]
    assert 3 == len(losers)
    assert all("AlreadyDecided" in err for err in losers), losers
    with Runtime(home, project, read_only=True) as rt:
        assert 1 == len(_decided(rt, sid))


def test_decide_through_the_inspector_does_not_say_resumed_when_the_resume_fails(
    tmp_path: Path,
) -> None:
    def resumer(rt: Runtime, sid: str) -> None:
        raise AlreadyDecided("the resume was refused for this test")

    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, [])
        (pending,) = rt.pending(sid)
        app = create_app(rt, csrf=CSRF, resumer=resumer, hosts=["testserver"])
        with TestClient(app) as c:
            out = _post_json(c, sid, pending.tool_call_id)
    assert (False, "the resume was refused for this test") == (
        out["resumed"],
        out.get("resume_error"),
    )


def _post_json(client: TestClient, sid: str, call: str) -> dict[str, Any]:
    url = f"/api/sessions/{sid}/decide"
    body = {"call_id": call, "decision": "approve"}
    reply = client.post(url, json=body, headers={"X-Clew-CSRF": CSRF})
    assert 200 == reply.status_code, reply.text
    out: dict[str, Any] = reply.json()
    return out
