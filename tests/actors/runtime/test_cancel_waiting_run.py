"""Issue 32 item 18 (second part): a run waiting for a person can be cancelled — the
approved-or-not tool never runs, the session is no longer waiting, and it verifies and
replays identically."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

from _ui_helpers import waiting_session

from actors import Runtime
from eventlog.ids import main_run_id
from projections import verify


def test_a_waiting_run_can_be_cancelled(tmp_path: Path) -> None:
    paid: list[int] = []
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, paid)
        assert [] != rt.pending(sid)
        report = rt.cancel(sid, "nobody will decide")
        assert ("cancelled", main_run_id(sid, 1)) == (report.status, report.run_id)
        main = [r.status for r in rt.store.read_runs(sid) if r.run_id == main_run_id(sid, 1)]
        assert ["cancelled"] == main
        assert [] == rt.waiting(sid)
        assert [] == rt.interrupted_runs(sid)
        assert [] == paid
        assert verify(rt.store, sid).ok, verify(rt.store, sid).lines()
        replayed = rt.replay(sid)
        assert replayed.identical, replayed.summary()
