"""Resume across a code change: ``from_divergence`` keeps the recorded prefix, records
``resumed_past_divergence`` where today's code leaves the recording, and goes on live;
the continued session verifies and replays exactly. Without the flag, the refusal stays."""

from __future__ import annotations

from pathlib import Path

import pytest
from _processes import run_crash_demo

import actors.orchestration.worker
from actors.demo import demo_model, demo_tools
from actors.replay.requests import StoreRequests
from actors.runtime.runtime import Runtime
from eventlog.errors import ReplayDivergence
from eventlog.events import ModelRequested, NodeAppended, ResumedPastDivergence

CHANGED = "A changed worker system prompt.\nAnswer in the expected shape."


def _killed_demo(tmp_path: Path, after_events: int) -> str:
    """A demo session whose process SIGKILLed itself after ``after_events`` events."""
    p = run_crash_demo(
        tmp_path / "home",
        tmp_path / "proj",
        "run",
        "3",
        env={"CLEW_FAULT_KILL_AFTER_EVENTS": str(after_events)},
    )
    assert -9 == p.returncode, p.stderr[-2000:]
    return p.stdout.split()[0]


@pytest.mark.parametrize("k", [40, 70])
def test_a_resume_after_a_prompt_change_goes_on_past_the_divergence_and_replays_exactly(
    tmp_path: Path, k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = _killed_demo(tmp_path, k)
    monkeypatch.setattr(actors.orchestration.worker, "WORKER_SYSTEM", CHANGED)
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        before = rt.store.read_events(sid)
        with pytest.raises(ReplayDivergence, match="resume refused") as refused:
            rt.resume(sid, model=demo_model(3), tools=demo_tools(tmp_path / "proj"))
        assert "system changed: " in str(refused.value)  # the text, not only a hash
        assert len(before) == rt.store.count_events(sid)

        out = rt.resume(
            sid, model=demo_model(3), tools=demo_tools(tmp_path / "proj"), from_divergence=True
        )
        assert "completed" == out.status, out.error
        assert [] == rt.interrupted_runs(sid)
        events = rt.store.read_events(sid)
        assert before == events[: len(before)]  # nothing recorded was changed or lost
        marks = [e for e in events if isinstance(e.event, ResumedPastDivergence)]
        assert marks
        by_seq = {e.seq: e for e in before}
        for m in marks:
            assert isinstance(m.event, ResumedPastDivergence)
            first = by_seq[m.event.seq]  # names a recorded event of the same run
            assert (m.run_id, m.event.run_seq, m.event.recorded_type) == (
                first.run_id,
                first.run_seq,
                first.event_type,
            )
            assert "model_requested" == m.event.recorded_type == m.event.current_type
            assert "system changed: " in m.event.reason
            # the first event after the marker in its run is today's request
            nxt = next(e for e in events if e.run_id == m.run_id and e.seq > m.seq)
            assert isinstance(nxt.event, ModelRequested)
            assert CHANGED == StoreRequests(rt.store, sid).request(nxt.event).system
        nodes = [e.event.node.node_id for e in events if isinstance(e.event, NodeAppended)]
        assert len(nodes) == len(set(nodes))
        assert rt.verify(sid).ok
        report = rt.replay(sid)
        assert report.identical, report.summary()
        assert rt.store.count_events(sid) == len(events)


def test_the_continued_session_replayed_with_the_old_code_diverges_after_the_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = _killed_demo(tmp_path, 40)
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        with monkeypatch.context() as m:
            m.setattr(actors.orchestration.worker, "WORKER_SYSTEM", CHANGED)
            rt.resume(
                sid, model=demo_model(3), tools=demo_tools(tmp_path / "proj"), from_divergence=True
            )
        report = rt.replay(sid)  # today's code is the old one again
        first = report.first_divergence
        assert first is not None
        marks = {
            e.run_id: e.seq
            for e in rt.store.read_events(sid)
            if isinstance(e.event, ResumedPastDivergence)
        }
        assert first.run_id in marks
        assert first.seq is not None and first.seq > marks[first.run_id]
        assert "system" == first.field


def test_a_resume_whose_code_still_matches_records_no_marker(tmp_path: Path) -> None:
    sid = _killed_demo(tmp_path, 40)
    with Runtime(tmp_path / "home", tmp_path / "proj") as rt:
        out = rt.resume(
            sid, model=demo_model(3), tools=demo_tools(tmp_path / "proj"), from_divergence=True
        )
        assert "completed" == out.status
        events = rt.store.read_events(sid)
        assert not any(isinstance(e.event, ResumedPastDivergence) for e in events)
        assert rt.replay(sid).identical
