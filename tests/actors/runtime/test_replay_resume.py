"""Replay reports and the resume rules, checked on real demo sessions."""

from __future__ import annotations

from pathlib import Path

import pytest
from _processes import run_crash_demo

import actors.orchestration.worker
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.errors import NothingToResume
from actors.runtime.runtime import Runtime
from eventlog.clock import ManualClock
from eventlog.errors import InvalidSessionId, ReplayDivergence, UnknownSession
from eventlog.events import (
    InDoubtResolved,
    ModelRequested,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)


def _demo_session(tmp_path: Path, workers: int = 3) -> tuple[Runtime, str]:
    rt = Runtime(tmp_path / "home", tmp_path / "proj", clock=ManualClock())
    session = rt.new_session()
    out = session.run(DEMO_PROMPT, model=demo_model(workers), tools=demo_tools(tmp_path / "proj"))
    assert "completed" == out.status
    return rt, session.id


def test_a_recorded_demo_session_replays_identically_and_writes_nothing(tmp_path: Path) -> None:
    rt, sid = _demo_session(tmp_path)
    try:
        before = rt.store.count_events(sid)
        report = rt.replay(sid)
        assert report.identical, report.summary()
        # every run event; session_created and content_stored are not in a run
        in_runs = sum(1 for e in rt.store.iter_events(sid) if e.run_id is not None)
        assert in_runs == report.events
        assert 5 == report.runs
        assert before == rt.store.count_events(sid)
    finally:
        rt.close()


def test_a_changed_prompt_template_diverges_at_each_workers_first_model_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, sid = _demo_session(tmp_path)
    try:
        monkeypatch.setattr(
            actors.orchestration.worker, "WORKER_SYSTEM", "A changed worker system prompt."
        )
        report = rt.replay(sid)
        assert not report.identical
        diverged = {d.run_id.rsplit("/", 1)[1]: d for d in report.divergences}
        assert ["review:r1", "w1:r1", "w2:r1", "w3:r1"] == sorted(diverged)
        for d in diverged.values():
            assert ("model_requested", "model_requested") == (d.expected_type, d.actual_type)
            assert ["request_hash", "system"] == [f.path for f in d.diff]
        first_request = {
            e.run_id: e.run_seq
            for e in reversed(rt.store.read_events(sid))
            if isinstance(e.event, ModelRequested)
        }
        assert all(first_request[d.run_id] == d.run_seq for d in report.divergences)
        # the Brain's own run still reproduces: it goes on with the recorded results
        assert f"{sid}:brain:r1" not in {d.run_id for d in report.divergences}
    finally:
        rt.close()


def test_replay_refuses_an_invalid_or_unknown_session_id(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        with pytest.raises(InvalidSessionId):
            rt.replay("../x")
        with pytest.raises(UnknownSession):
            rt.replay("sess_nope")


def test_resume_of_a_completed_session_is_refused(tmp_path: Path) -> None:
    rt, sid = _demo_session(tmp_path)
    try:
        with pytest.raises(NothingToResume):
            rt.resume(sid, model=demo_model(3), tools=demo_tools(tmp_path / "proj"))
    finally:
        rt.close()


def _kill_at(tmp_path: Path, env: dict[str, str]) -> str:
    p = run_crash_demo(tmp_path / "home", tmp_path / "proj", "run", "3", env=env)
    assert -9 == p.returncode, p.stderr[-2000:]
    return p.stdout.split()[0]


def _first_index(tmp_path: Path, predicate: object) -> int:
    """The global seq of the first event matching ``predicate`` in an uninterrupted run."""
    rt, sid = _demo_session(tmp_path / "ref")
    try:
        return next(e.seq for e in rt.store.read_events(sid) if predicate(e.event))  # type: ignore[operator]
    finally:
        rt.close()


def test_a_requested_but_unanswered_model_call_is_sent_again_with_the_next_attempt(
    tmp_path: Path,
) -> None:
    k = _first_index(tmp_path, lambda e: isinstance(e, ModelRequested))
    sid = _kill_at(tmp_path, {"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)})
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        assert [f"{sid}:brain:r1"] == rt.interrupted_runs(sid)
        rt.resume(sid, model=demo_model(3), tools=demo_tools(tmp_path / "proj"))
        requests = [
            e.event.attempt
            for e in rt.store.read_run(sid, f"{sid}:brain:r1")
            if isinstance(e.event, ModelRequested) and e.event.call_index == 1
        ]
        assert [1, 2] == requests
        assert rt.replay(sid).identical


def test_an_in_doubt_tool_call_is_rerun_only_when_idempotent(tmp_path: Path) -> None:
    # Kill right before the n-th tool run. Workers run concurrently, so one or several
    # tool calls may be in doubt at that moment (started, no outcome); each must be
    # settled by the rule: lookup (idempotent) re-run, save_note (not) failed.
    decisions: set[tuple[str, str]] = set()
    for nth in range(1, 7):
        case = tmp_path / f"kill-before-tool-{nth}"
        sid = _kill_at(case, {"CLEW_FAULT_KILL_BEFORE_TOOL": str(nth)})
        with Runtime(case / "home", case / "proj") as rt:
            events = rt.store.read_events(sid)
            settled = {
                e.event.tool_call_id
                for e in events
                if isinstance(e.event, ToolCallFinished | ToolFailed)
            }
            in_doubt = sorted(
                (e.event.tool_call_id, e.event.tool_name)
                for e in events
                if isinstance(e.event, ToolCallStarted) and e.event.tool_call_id not in settled
            )
            assert in_doubt, f"kill before tool {nth}: nothing in doubt"
            out = rt.resume(sid, model=demo_model(3), tools=demo_tools(case / "proj"))
            assert "completed" == out.status
            resolved = sorted(
                (e.event.tool_call_id, e.event.tool_name, e.event.decision)
                for e in rt.store.read_events(sid)
                if isinstance(e.event, InDoubtResolved)
            )
            expected = [
                (call, name, "retry" if name == "lookup" else "fail") for call, name in in_doubt
            ]
            assert expected == resolved
            decisions.update((name, decision) for _, name, decision in resolved)
            assert rt.replay(sid).identical
    assert {("lookup", "retry"), ("save_note", "fail")} <= decisions


@pytest.mark.parametrize("k", [40, 70])
def test_a_resume_whose_code_diverges_is_refused_and_a_later_resume_still_converges(
    tmp_path: Path, k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = _kill_at(tmp_path, {"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)})
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        before = rt.store.count_events(sid)
        with monkeypatch.context() as m:
            m.setattr(
                actors.orchestration.worker, "WORKER_SYSTEM", "A changed worker system prompt."
            )
            with pytest.raises(ReplayDivergence, match="resume refused"):
                rt.resume(sid, model=demo_model(3), tools=demo_tools(tmp_path / "proj"))
        assert before == rt.store.count_events(sid)
        assert f"{sid}:brain:r1" in rt.interrupted_runs(sid)
        out = rt.resume(sid, model=demo_model(3), tools=demo_tools(tmp_path / "proj"))
        assert "completed" == out.status
        assert rt.replay(sid).identical


@pytest.mark.parametrize("k", [12, 30, 55, 80])
def test_replaying_an_interrupted_session_checks_it_up_to_its_end_without_divergence(
    tmp_path: Path, k: int
) -> None:
    sid = _kill_at(tmp_path, {"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)})
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        report = rt.replay(sid)
        assert report.identical, report.summary()
        assert f"{sid}:brain:r1" in report.incomplete_runs
