"""Fault injection: SIGKILL a demo session at many points, resume it, check everything.

A representative subset of kill points runs by default; ``CLEW_CRASH_SWEEP=full`` runs
every point (≥ 50 distinct: after each group commit, before each tool run, and inside
group commits).

A run commits its events in groups (issue 17), so "after the k-th event" kills right after
the commit that holds it; "inside the commit" kills while the k-th event row is written,
before its group's COMMIT: none of that group may survive.
"""

from __future__ import annotations

import collections
import os
from pathlib import Path

import pytest
from _processes import run_crash_demo

from actors.runtime.runtime import Runtime
from eventlog.events import ModelResponded, NodeAppended, RunEnded
from projections import verify

WORKERS = 3
FULL = os.environ.get("CLEW_CRASH_SWEEP") == "full"

# Full: every k from 2 (1 is the session's own event: no run yet), so each of the ~36
# group commits of the 104-event run is a kill point (every other k, as before group
# commits, would skip 6 of them).
EVENT_POINTS = list(range(2, 101)) if FULL else [2, 5, 11, 19, 28, 37, 46, 58, 71, 86, 97]
TOOL_POINTS = list(range(1, 7)) if FULL else [2, 5]
# From the 5th row: rows 2-4 (run_started, the Brain's agent, its status) are the run's
# first group; killed inside it, no run exists and there is nothing to resume.
INSIDE_POINTS = list(range(5, 104, 8)) if FULL else [9, 40, 83]


Shape = list[tuple[str, str | None, str, str]]


def _shape(rt: Runtime, sid: str) -> Shape:
    """The tree's structure, (node_id, parent_id, role, node_type), with the session id
    factored out: ids are derived, so two runs of one script have the same shape."""

    def strip(x: str | None) -> str | None:
        return None if x is None else x.replace(sid, "SID")

    return sorted(
        (n.node_id.replace(sid, "SID"), strip(n.parent_id), n.role, n.node_type)
        for n in rt.store.read_nodes(sid)
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Shape:
    """The tree of an uninterrupted run (node ids are derived, so they compare directly)."""
    base = tmp_path_factory.mktemp("reference")
    done = run_crash_demo(base / "home", base / "proj", "run", str(WORKERS))
    assert 0 == done.returncode, done.stderr
    sid = done.stdout.split()[0]
    with Runtime(base / "home", base / "proj") as rt:
        return _shape(rt, sid)


def _assert_recovered(home: Path, project: Path, sid: str, reference: Shape) -> None:
    with Runtime(home, project) as rt:
        assert [] == rt.interrupted_runs(sid)
        events = rt.store.read_events(sid)
        # the session completed: the main run ended completed
        ends = [
            e.event
            for e in events
            if isinstance(e.event, RunEnded) and e.run_id == f"{sid}:brain:r1"
        ]
        assert ["completed"] == [e.status for e in ends]
        # same conversation tree as an uninterrupted run (ids are derived from the session id)
        assert reference == _shape(rt, sid)
        # each node exactly once
        appended = collections.Counter(
            e.event.node.node_id for e in events if isinstance(e.event, NodeAppended)
        )
        assert [] == [n for n, c in appended.items() if c != 1]
        # never re-paid: no (run, call_index) answered twice
        answered = collections.Counter(
            (e.run_id, e.event.call_index) for e in events if isinstance(e.event, ModelResponded)
        )
        assert [] == [k for k, c in answered.items() if c != 1]
        assert verify(rt.store, sid).ok, verify(rt.store, sid).lines()
        # The runtime's verify too: the Task WAL (named after the recorded task name)
        # agrees with the log, and every run's usage with its token_usage events.
        checked = rt.verify(sid)
        assert checked.ok, checked.sessions[0].problems
        report = rt.replay(sid)
        assert report.identical, report.summary()
    # the non-idempotent tool never ran twice: each worker's note line appears at most once
    notes = project / ".clew" / "demo-notes.txt"
    lines = notes.read_text().splitlines() if notes.exists() else []
    assert [] == [line for line, c in collections.Counter(lines).items() if c > 1]


def _kill_resume_and_assert_recovered(
    tmp_path: Path,
    reference: Shape,
    fault: dict[str, str],
    resume_fault: dict[str, str] | None = None,
) -> None:
    """Kill the demo at ``fault`` (and its first resume at ``resume_fault``), resume it, and
    assert it recovered to ``reference``."""
    home, project = tmp_path / "home", tmp_path / "proj"
    killed = run_crash_demo(home, project, "run", str(WORKERS), env=fault)
    assert -9 == killed.returncode, (killed.returncode, killed.stderr[-2000:])
    sid = killed.stdout.split()[0]
    # Before any resume: the interrupted recording replays identically up to its end,
    # and the replay writes nothing.
    with Runtime(home, project) as rt:
        before = rt.store.count_events(sid)
        report = rt.replay(sid)
        assert report.identical, report.summary()
        assert before == rt.store.count_events(sid)
    if resume_fault:
        again = run_crash_demo(home, project, "resume", sid, str(WORKERS), env=resume_fault)
        assert -9 == again.returncode, again.stderr[-2000:]
    resumed = run_crash_demo(home, project, "resume", sid, str(WORKERS))
    assert 0 == resumed.returncode, resumed.stderr[-2000:]
    _assert_recovered(home, project, sid, reference)


@pytest.mark.parametrize("k", EVENT_POINTS)
def test_a_session_killed_after_the_kth_commit_resumes_to_the_same_tree(
    tmp_path: Path, k: int, reference: Shape
) -> None:
    _kill_resume_and_assert_recovered(tmp_path, reference, {"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)})


@pytest.mark.parametrize("k", TOOL_POINTS)
def test_a_session_killed_right_before_a_tool_runs_resumes_without_running_it_twice(
    tmp_path: Path, k: int, reference: Shape
) -> None:
    _kill_resume_and_assert_recovered(tmp_path, reference, {"CLEW_FAULT_KILL_BEFORE_TOOL": str(k)})


@pytest.mark.parametrize("k", INSIDE_POINTS)
def test_a_session_killed_inside_a_group_commit_resumes_to_the_same_tree(
    tmp_path: Path, reference: Shape, k: int
) -> None:
    _kill_resume_and_assert_recovered(
        tmp_path, reference, {"CLEW_FAULT_KILL_INSIDE_COMMIT": str(k)}
    )


@pytest.mark.parametrize(("k", "j"), [(30, 12), (60, 25)])
def test_killing_a_resume_and_resuming_again_converges(
    tmp_path: Path, k: int, j: int, reference: Shape
) -> None:
    _kill_resume_and_assert_recovered(
        tmp_path,
        reference,
        {"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)},
        {"CLEW_FAULT_KILL_AFTER_EVENTS": str(j)},
    )
