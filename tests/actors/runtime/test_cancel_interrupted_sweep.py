"""Issue 32 item 18: ``cancel`` of a crash-interrupted run records its cancellation after
the recorded prefix, at every kill point of the demo (a real subprocess SIGKILLed after
each commit), and the cancelled session verifies and replays identically."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _processes import run_crash_demo

from actors.runtime.runtime import Runtime
from eventlog.ids import main_run_id
from projections import verify

WORKERS = 3
#: Full (``CLEW_CRASH_SWEEP=full``, as the crash-recovery sweep): every commit of the
#: demo's ~104-event run is a kill point (1 is the session's own event: no run yet; past
#: the run's end the child completes) — before the fix 17 of them refused the cancel.
#: Else every third, with 52 and 54 (two of those 17), to keep the suite fast.
FULL = os.environ.get("CLEW_CRASH_SWEEP") == "full"
KILL_POINTS = list(range(2, 106)) if FULL else sorted({*range(2, 106, 3), 52, 54})


def _killed(tmp_path: Path, k: int) -> tuple[int, Path, Path, str, int]:
    home, project = tmp_path / f"home{k}", tmp_path / f"proj{k}"
    env = {"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)}
    done = run_crash_demo(home, project, "run", str(WORKERS), env=env)
    return k, home, project, done.stdout.split()[0], done.returncode


def _cancel_problem(home: Path, project: Path, sid: str) -> str | None:  # noqa: PLR0911 - one return per check
    with Runtime(home, project) as rt:
        if not rt.interrupted_runs(sid):
            return None  # killed before the run existed, or after it ended
        main_id = main_run_id(sid, 1)
        was = [r.status for r in rt.store.read_runs(sid) if r.run_id == main_id]
        expected = ["cancelled"] if was in (["running"], ["pending"]) else was
        try:
            report = rt.cancel(sid, "cancelled after a crash")
        except Exception as e:  # the sweep collects every failure
            return f"cancel refused: {type(e).__name__}: {e}"
        if "cancelled" != report.status:
            return f"cancel reported {report.status}"
        main = [r.status for r in rt.store.read_runs(sid) if r.run_id == main_id]
        if expected != main:
            return f"main run ended {main}, was {was}"
        if rt.interrupted_runs(sid):
            return f"still interrupted: {rt.interrupted_runs(sid)}"
        checked = verify(rt.store, sid)
        if not checked.ok:
            return f"verify: {checked.lines()}"
        replayed = rt.replay(sid)
        if not replayed.identical:
            return f"replay: {replayed.summary()}"
    return None


def test_cancel_of_a_crash_interrupted_run_is_recorded_after_its_prefix_at_every_kill_point(
    tmp_path: Path,
) -> None:
    with ThreadPoolExecutor(2) as pool:
        killed = list(pool.map(lambda k: _killed(tmp_path, k), KILL_POINTS))
    problems = {}
    for k, home, project, sid, code in killed:
        assert code in (-9, 0), (k, code)
        problem = _cancel_problem(home, project, sid)
        if problem is not None:
            problems[k] = problem
    assert {} == problems
