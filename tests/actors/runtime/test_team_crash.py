"""Crash tests of a team session: real child processes killed with SIGKILL, then resumed.

The child (``tests/helpers/_crash_team.py``) runs a team whose primary dispatches a
worker and then calls ``charge``, a non-idempotent tool keyed by ``ctx.tool_call_id``
with its own in-doubt policy (the run's default is a different one).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _processes import CRASH_TEAM, run_crash_demo

from actors.runtime.runtime import Runtime
from eventlog.events import (
    InDoubtResolved,
    ModelResponded,
    RunEnded,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)
from eventlog.ids import idempotency_key
from projections import verify


def _run(home: Path, project: Path, *args: str, **env: str) -> tuple[int, str]:
    done = run_crash_demo(home, project, *args, env=env, child=CRASH_TEAM)
    return done.returncode, done.stdout


def _kill_and_resume(tmp_path: Path, policy: str, **fault: str) -> tuple[Path, Path, str]:
    home, project = tmp_path / "home", tmp_path / "proj"
    code, out = _run(home, project, "run", policy, **fault)
    assert -9 == code
    sid = out.split()[0]
    with Runtime(home, project) as rt:
        assert rt.interrupted_runs(sid)
        assert rt.replay(sid).identical  # the cut recording replays up to its end
    code, out = _run(home, project, "resume", sid, policy)
    assert (0, "completed") == (code, out.split()[-1])
    return home, project, sid


def _assert_recovered(home: Path, project: Path, sid: str) -> None:
    with Runtime(home, project) as rt:
        assert [] == rt.interrupted_runs(sid)
        events = rt.store.read_events(sid)
        (main_end,) = [
            e.event
            for e in events
            if isinstance(e.event, RunEnded) and e.run_id == f"{sid}:brain:r1"
        ]
        assert "completed" == main_end.status
        answered = [
            (e.run_id, e.event.call_index) for e in events if isinstance(e.event, ModelResponded)
        ]
        assert len(answered) == len(set(answered))  # no model call paid twice
        assert verify(rt.store, sid).ok
        report = rt.replay(sid)
        assert report.identical, report.summary()


def _charge_started(home: Path, project: Path, sid: str) -> ToolCallStarted:
    with Runtime(home, project) as rt:
        (started,) = [
            e.event
            for e in rt.store.read_events(sid)
            if isinstance(e.event, ToolCallStarted) and e.event.tool_name == "charge"
        ]
    return started


def _charges(project: Path) -> list[tuple[str, int]]:
    lines = (project / "charges.txt").read_text().splitlines()
    return [(call_id, int(attempt)) for call_id, attempt in (ln.split() for ln in lines)]


def test_a_retried_call_gets_the_same_tool_call_id_after_a_sigkill_in_the_tool(
    tmp_path: Path,
) -> None:
    home, project, sid = _kill_and_resume(tmp_path, "retry", TEAM_CRASH_KILL_IN_CHARGE="1")

    started = _charge_started(home, project, sid)
    # Before the kill and after the resume, the same call: the same idempotency key.
    assert [(started.tool_call_id, 1), (started.tool_call_id, 2)] == _charges(project)
    _assert_recovered(home, project, sid)


def test_a_retried_call_gets_the_same_idempotency_key_after_a_sigkill_in_the_tool(
    tmp_path: Path,
) -> None:
    home, project, sid = _kill_and_resume(tmp_path, "retry", TEAM_CRASH_KILL_IN_CHARGE="1")

    keys = [ln.split() for ln in (project / "keys.txt").read_text().splitlines()]
    with Runtime(home, project) as rt:
        (started,) = [
            e
            for e in rt.store.read_events(sid)
            if isinstance(e.event, ToolCallStarted) and e.event.tool_name == "charge"
        ]
    assert started.run_id is not None
    key = idempotency_key(started.run_id, started.event.tool_call_id)
    # The first attempt, killed inside the tool, and the resumed one: one key, the call's.
    assert [[key, "1"], [key, "2"]] == keys
    _assert_recovered(home, project, sid)


@pytest.mark.parametrize(
    ("policy", "outcome"),
    [("retry", ToolCallFinished), ("skip", ToolCallFinished), ("fail", ToolFailed)],
)
def test_a_tools_own_in_doubt_policy_decides_after_a_sigkill(
    tmp_path: Path, policy: str, outcome: type
) -> None:
    home, project, sid = _kill_and_resume(tmp_path, policy, TEAM_CRASH_KILL_IN_CHARGE="1")

    with Runtime(home, project) as rt:
        events = [e.event for e in rt.store.read_events(sid)]
    (resolved,) = [e for e in events if isinstance(e, InDoubtResolved)]
    # The run's default is another policy: the tool's own one decided.
    assert ("charge", policy) == (resolved.tool_name, resolved.decision)
    (after,) = [
        e
        for e in events
        if isinstance(e, ToolCallFinished | ToolFailed) and e.tool_name == "charge"
    ]
    assert isinstance(after, outcome)
    assert (2 if policy == "retry" else 1) == len(_charges(project))
    _assert_recovered(home, project, sid)


# Commit 38 is the dispatch's tool_call_started, 44 the dispatched worker's unanswered model
# call, 49 its own tool's outcome, 57 its result taken with the dispatch not yet finished.
@pytest.mark.parametrize("k", [38, 44, 49, 57])
def test_a_team_session_killed_around_a_dispatch_resumes_and_charges_once(
    tmp_path: Path, k: int
) -> None:
    home, project, sid = _kill_and_resume(tmp_path, "fail", CLEW_FAULT_KILL_AFTER_EVENTS=str(k))

    _assert_recovered(home, project, sid)
    (charge,) = _charges(project)
    assert (_charge_started(home, project, sid).tool_call_id, 1) == charge
