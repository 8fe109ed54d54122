"""A Pydantic AI run SIGKILLed at a chosen point resumes to completion from its recording.

A real child process runs the support desk (``_pyai_desk.py``) and is killed after the
k-th committed event, before a tool, or inside the non-idempotent refund; this process
then resumes the session with the same agent. The model is asked at most once more than
an uninterrupted run asks it (the request in flight at the kill), the ledger holds the
refund once (in-doubt policy ``retry`` under the same idempotency key), the replay is
identical and the session verifies.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from _processes import child_env
from _pyai_desk import Reply, calls, desk, ledger

from actors.runtime.runtime import Runtime

DESK = Path(__file__).resolve().parents[2] / "helpers" / "_pyai_desk.py"
#: The requests an uninterrupted run asks the model.
REQUESTS = 3


def _crashed_session(tmp_path: Path, **env: str) -> tuple[Path, str]:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    child = subprocess.run(
        [sys.executable, str(DESK), str(home), sid, str(tmp_path)],
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert -9 == child.returncode, child.stdout + child.stderr
    return home, sid


def _resume_and_check(tmp_path: Path, home: Path, sid: str) -> None:
    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=desk(tmp_path))
        assert "completed" == outcome.status, outcome.error
        assert Reply(answer="Refunded 42.50 for A-17.", refunded=42.5) == outcome.output
        resent = sum(
            1
            for e in rt.store.iter_events(sid)
            if e.event_type == "model_requested" and getattr(e.event, "attempt", 1) > 1
        )
        # A request committed but not answered at the kill is sent again (attempt 2): paid
        # twice only if the child had asked it before it died.
        assert resent <= 1
        assert REQUESTS <= calls(tmp_path) <= REQUESTS + resent
        assert 1 == len(ledger(tmp_path))
        report = rt.replay(sid, agent=desk(tmp_path))
        assert report.identical, report.summary()
        assert rt.verify(sid).ok


#: The run's group commits end after these events (its 20 events are committed in 7
#: groups, each flushed before a side effect; the last one holds ``run_ended``): a kill
#: after each of them but the last leaves the run interrupted at a different point.
BOUNDARIES = [3, 5, 8, 10, 13, 15]


@pytest.mark.parametrize("k", BOUNDARIES)
def test_a_kill_after_the_kth_event_resumes_without_paying_a_call_twice(
    tmp_path: Path, k: int
) -> None:
    home, sid = _crashed_session(tmp_path, CLEW_FAULT_KILL_AFTER_EVENTS=str(k))
    _resume_and_check(tmp_path, home, sid)


@pytest.mark.parametrize("n", [1, 2])
def test_a_kill_before_a_tool_runs_it_once_on_resume(tmp_path: Path, n: int) -> None:
    home, sid = _crashed_session(tmp_path, CLEW_FAULT_KILL_BEFORE_TOOL=str(n))
    _resume_and_check(tmp_path, home, sid)


def test_a_kill_inside_the_refund_refunds_once_under_the_same_key(tmp_path: Path) -> None:
    home, sid = _crashed_session(tmp_path, DESK_KILL_IN_REFUND="1")
    assert 1 == len(ledger(tmp_path))
    _resume_and_check(tmp_path, home, sid)
    with Runtime(home, tmp_path) as rt:
        types = [e.event_type for e in rt.store.iter_events(sid)]
    assert 1 == types.count("in_doubt_resolved")
