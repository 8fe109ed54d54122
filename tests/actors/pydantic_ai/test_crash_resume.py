"""A Pydantic AI run SIGKILLed at a chosen point resumes to completion from its recording.

A real child process runs the support desk (``_pyai_desk.py``) and is killed after the
k-th committed event, before a tool, or inside the non-idempotent refund; this process
then resumes the session with the same agent. The model is asked at most once more than
an uninterrupted run asks it (the request in flight at the kill), the ledger holds the
refund once (in-doubt policy ``retry`` under the same idempotency key), the replay is
identical and the session verifies.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from _framework_checks import BOUNDARIES, crashed_session, event_types, ledger, resume_and_check
from _pyai_desk import DESK

from actors.runtime.runtime import Runtime


@pytest.mark.parametrize("k", BOUNDARIES)
def test_a_kill_after_the_kth_event_resumes_without_paying_a_call_twice(
    tmp_path: Path, k: int
) -> None:
    home, sid = crashed_session(tmp_path, DESK, {"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)})
    resume_and_check(tmp_path, DESK, home, sid)


@pytest.mark.parametrize("n", [1, 2])
def test_a_kill_before_a_tool_runs_it_once_on_resume(tmp_path: Path, n: int) -> None:
    home, sid = crashed_session(tmp_path, DESK, {"CLEW_FAULT_KILL_BEFORE_TOOL": str(n)})
    resume_and_check(tmp_path, DESK, home, sid)


def test_a_kill_inside_the_refund_refunds_once_under_the_same_key(tmp_path: Path) -> None:
    home, sid = crashed_session(tmp_path, DESK, {"DESK_KILL_IN_REFUND": "1"})
    assert 1 == len(ledger(tmp_path))
    resume_and_check(tmp_path, DESK, home, sid)
    with Runtime(home, tmp_path) as rt:
        types = event_types(rt, sid)
    assert 1 == types.count("in_doubt_resolved")
