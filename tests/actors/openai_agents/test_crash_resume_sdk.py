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

from pathlib import Path

import pytest

pytest.importorskip("agents")

from _framework_checks import (
    BOUNDARIES,
    CALLS,
    calls,
    crashed_session,
    event_types,
    ledger,
    resume_and_check,
)
from _oai_desk import DESK

from actors.runtime.runtime import Runtime

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


def _resume_and_check(tmp_path: Path, home: Path, sid: str) -> None:
    resent = resume_and_check(tmp_path, DESK, home, sid)
    assert CALLS + resent >= calls(tmp_path)  # the replay asked nothing


@pytest.mark.parametrize("point", FAST, ids=_name)
def test_a_kill_resumes_without_paying_a_call_twice(tmp_path: Path, point: dict[str, str]) -> None:
    home, sid = crashed_session(tmp_path, DESK, point)
    _resume_and_check(tmp_path, home, sid)


@pytest.mark.slow
@pytest.mark.parametrize("point", [p for p in POINTS if p not in [*FAST, IN_REFUND]], ids=_name)
def test_every_kill_point_resumes_without_paying_a_call_twice(
    tmp_path: Path, point: dict[str, str]
) -> None:
    home, sid = crashed_session(tmp_path, DESK, point)
    _resume_and_check(tmp_path, home, sid)


def test_a_kill_inside_the_refund_settles_the_call_in_doubt_under_the_same_key(
    tmp_path: Path,
) -> None:
    home, sid = crashed_session(tmp_path, DESK, IN_REFUND)
    assert 1 == len(ledger(tmp_path))
    _resume_and_check(tmp_path, home, sid)
    with Runtime(home, tmp_path) as rt:
        types = event_types(rt, sid)
    assert 1 == types.count("in_doubt_resolved")
