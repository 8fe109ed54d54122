"""An Agents SDK run SIGKILLed at a chosen point resumes to completion from its recording.

A real child process runs the support desk (``_oai_desk.py``) on the fake ``DeskModel``
and is killed after each group commit of the run, inside a commit, before each tool,
inside each tool, and inside a streamed reply; this process then resumes the session
with the same runner. The model is asked at most once more than an uninterrupted run
asks it (the call in flight at the kill), the ledger holds the refund once (in-doubt
policy ``retry`` under the same idempotency key), the replay is identical and the
session verifies.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents")

from _oai_desk import ANSWER, Reply, calls, desk, ledger
from _processes import child_env

from actors.runtime.runtime import Runtime

DESK = Path(__file__).resolve().parents[2] / "helpers" / "_oai_desk.py"
#: The model calls of an uninterrupted run.
CALLS = 3
#: The run's group commits end after these events of the child (its 20 events are
#: committed in 7 groups, each flushed before a side effect; the last holds
#: ``run_ended``): a kill after each but the last leaves the run at another point.
BOUNDARIES = (3, 5, 8, 10, 13, 15)
#: Every kill point of the sweep (the fast ones run without ``-m slow``).
POINTS = [
    *({"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)} for k in BOUNDARIES),
    *({"CLEW_FAULT_KILL_INSIDE_COMMIT": str(k)} for k in (4, 9, 14)),
    {"CLEW_FAULT_KILL_BEFORE_TOOL": "1"},
    {"CLEW_FAULT_KILL_BEFORE_TOOL": "2"},
    {"DESK_KILL_IN_LOOKUP": "1"},
    {"DESK_KILL_IN_REFUND": "1"},
    *({"DESK_STREAM": "1", "DESK_KILL_IN_STREAM": str(n)} for n in (1, 2, 3)),
    *({"DESK_STREAM": "1", "CLEW_FAULT_KILL_AFTER_EVENTS": str(k)} for k in (5, 10)),
]
FAST = [{"CLEW_FAULT_KILL_AFTER_EVENTS": "8"}, {"DESK_STREAM": "1", "DESK_KILL_IN_STREAM": "2"}]
#: Its own test, below (it also checks the in-doubt call was settled).
IN_REFUND = {"DESK_KILL_IN_REFUND": "1"}


def _name(point: dict[str, str]) -> str:
    return "-".join(f"{k.removeprefix('CLEW_FAULT_').lower()}={v}" for k, v in point.items())


def _crashed_session(tmp_path: Path, point: dict[str, str]) -> tuple[Path, str]:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    child = subprocess.run(
        [sys.executable, str(DESK), str(home), sid, str(tmp_path)],
        env=child_env(**point),
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
        assert Reply(**ANSWER) == outcome.output
        resent = sum(
            1
            for e in rt.store.iter_events(sid)
            if e.event_type == "model_requested" and getattr(e.event, "attempt", 1) > 1
        )
        # A call committed but not answered at the kill is asked again (attempt 2): paid
        # twice only if the child had asked it before it died.
        assert resent <= 1
        assert CALLS <= calls(tmp_path) <= CALLS + resent
        assert 1 == len(ledger(tmp_path))
        report = rt.replay(sid, agent=desk(tmp_path))
        assert report.identical, report.summary()
        assert rt.verify(sid).ok
        assert CALLS + resent >= calls(tmp_path)  # the replay asked nothing


@pytest.mark.parametrize("point", FAST, ids=_name)
def test_a_kill_resumes_without_paying_a_call_twice(tmp_path: Path, point: dict[str, str]) -> None:
    home, sid = _crashed_session(tmp_path, point)
    _resume_and_check(tmp_path, home, sid)


@pytest.mark.slow
@pytest.mark.parametrize("point", [p for p in POINTS if p not in [*FAST, IN_REFUND]], ids=_name)
def test_every_kill_point_resumes_without_paying_a_call_twice(
    tmp_path: Path, point: dict[str, str]
) -> None:
    home, sid = _crashed_session(tmp_path, point)
    _resume_and_check(tmp_path, home, sid)


def test_a_kill_inside_the_refund_settles_the_call_in_doubt_under_the_same_key(
    tmp_path: Path,
) -> None:
    home, sid = _crashed_session(tmp_path, IN_REFUND)
    assert 1 == len(ledger(tmp_path))
    _resume_and_check(tmp_path, home, sid)
    with Runtime(home, tmp_path) as rt:
        types = [e.event_type for e in rt.store.iter_events(sid)]
    assert 1 == types.count("in_doubt_resolved")
