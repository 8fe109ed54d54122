"""A session's status, derived from its runs (``actors/runtime/status.py``), and a busy
session told apart from an interrupted one."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from _runtime_helpers import route, rule, scripted, worker

from actors.errors import NeedsResume, SessionBusy
from actors.models.protocol import ModelRequest, ModelResponse
from actors.runtime.runtime import Runtime
from actors.runtime.status import session_status
from eventlog.events import RunEnded, RunStarted
from eventlog.ids import brain_agent_id, main_run_id
from eventlog.records import AppendRequest, RunRow

SID = "sess_20260101_000000_aaaa"


def _run(n: int, status: str, *, worker: bool = False) -> RunRow:
    agent = f"{main_run_id(SID, n)}/w1" if worker else brain_agent_id(SID)
    run_id = f"{agent}:r1" if worker else main_run_id(SID, n)
    return RunRow(
        run_id=run_id,
        session_id=SID,
        agent_id=agent,
        status=status,
        start_node_id=None,
        end_node_id=None,
        end_reason=None,
        turn_count=None,
        usage=None,
        error=None,
        metadata={},
        created_at="2026-01-01T00:00:00",
        updated_at="2026-01-01T00:00:00",
    )


@pytest.mark.parametrize(
    ("runs", "owned", "expected"),
    [
        ([], False, "new"),
        ([_run(1, "completed"), _run(1, "failed", worker=True)], False, "completed"),
        ([_run(1, "completed"), _run(2, "failed")], False, "failed"),
        ([_run(1, "aborted")], False, "failed"),
        ([_run(1, "cancelled")], False, "cancelled"),
        ([_run(1, "completed"), _run(2, "waiting")], False, "waiting"),
        ([_run(1, "running")], False, "interrupted"),
        ([_run(1, "running")], True, "running"),
        ([_run(1, "running"), _run(1, "pending", worker=True)], False, "interrupted"),
        # A worker left open under an ended main run still needs a resume.
        ([_run(1, "completed"), _run(1, "running", worker=True)], False, "interrupted"),
    ],
    ids=str,
)
def test_the_status_is_the_last_main_runs_unless_a_run_is_open(
    runs: list[RunRow], owned: bool, expected: str
) -> None:
    assert expected == session_status(SID, runs, owned=owned)


def _append(rt: Runtime, sid: str, event: Any, n: int = 1) -> None:
    rt.writer.append(
        AppendRequest(
            session_id=sid,
            event=event,
            created_at=rt.clock.now(),
            agent_id=brain_agent_id(sid),
            run_id=main_run_id(sid, n),
        )
    )


def test_sessions_lists_the_derived_status_main_runs_and_the_last_activity(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        done = rt.new_session()
        one_worker = scripted(
            route([worker("w1", "analyst", "look")]), rule("analyst", {"text": "ok"})
        )
        assert "completed" == done.run("hello", model=one_worker).status
        cancelled = rt.new_session()
        run = main_run_id(cancelled.id, 1)
        _append(rt, cancelled.id, RunStarted(run_id=run, agent_id=brain_agent_id(cancelled.id)))
        _append(rt, cancelled.id, RunEnded(run_id=run, status="cancelled", end_reason="failed"))
        fresh = rt.new_session()
        rt.writer.flush()
        infos = {i.session_id: i for i in rt.sessions()}
        last_event = rt.store.read_events(done.id)[-1].created_at
    assert ("completed", 1, 2, 2, False) == (
        infos[done.id].status,
        infos[done.id].main_runs,  # the main run only
        infos[done.id].runs,  # and the primary's (every run, as in 0.1)
        infos[done.id].all_runs,
        infos[done.id].interrupted,
    )
    assert last_event == infos[done.id].updated_at
    assert "cancelled" == infos[cancelled.id].status
    assert ("new", 0, "active") == (
        infos[fresh.id].status,
        infos[fresh.id].runs,
        infos[fresh.id].lifecycle,
    )


def test_an_open_run_is_running_while_owned_and_interrupted_once_not(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = rt.new_session().id
        _append(rt, sid, RunStarted(run_id=main_run_id(sid, 1), agent_id=brain_agent_id(sid)))
        rt.writer.flush()
        rt.lock(sid)
        assert ("running", False) == (rt.session(sid).info().status, rt.interrupted_runs(sid) != [])
        rt.unlock(sid)
        info = rt.session(sid).info()
        assert ("interrupted", True) == (info.status, info.interrupted)
        with pytest.raises(NeedsResume, match="has an interrupted run; resume it first"):
            rt.session(sid).run("again", model=scripted(route()))


class _Gate:
    """A model that holds its first call until released: a run in progress, on cue."""

    def __init__(self) -> None:
        self.inner = scripted(route())
        self.name = self.inner.name
        self.entered = threading.Event()
        self.release = threading.Event()

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.entered.set()
        assert self.release.wait(60), "never released"
        return self.inner.complete(request)


def test_a_second_thread_running_a_busy_session_is_told_busy_not_interrupted(
    tmp_path: Path,
) -> None:
    gate = _Gate()
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        outcomes: list[Any] = []
        first = threading.Thread(target=lambda: outcomes.append(session.run("one", model=gate)))
        first.start()
        try:
            assert gate.entered.wait(60)
            with pytest.raises(SessionBusy, match="busy: another thread of this process"):
                session.run("two", model=scripted(route()))
            # The refusal left the first run's owner lock alone.
            assert rt.is_owned(session.id)
        finally:
            gate.release.set()
            first.join(60)
        assert ["completed"] == [o.status for o in outcomes]
        # Free again: the next run goes ahead.
        assert "completed" == session.run("three", model=scripted(route())).status
        assert ("completed", 2) == (session.info().status, session.info().runs)
