"""The run digest: one line per run, worker, model call and tool call, folded from the
committed events; durations from their recorded ``created_at``."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from _runtime_helpers import Recorded, run_session
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.observe.logs import RunDigest
from actors.runtime.runtime import Runtime
from eventlog.clock import ManualClock
from eventlog.events import (
    ModelRequested,
    ModelResponded,
    RunStarted,
    ToolCallFinished,
)
from eventlog.logs import LogOutput, set_output


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """A demo session recorded with a clock that ticks 1 ms per timestamp."""
    base = tmp_path_factory.mktemp("digest")
    (base / "project").mkdir()
    rt = Runtime(base / "home", base / "project", clock=ManualClock(step_us=1000))
    yield run_session(rt, DEMO_PROMPT, demo_model(3), tools=demo_tools(base / "project"))
    rt.close()


def _ms(start: str, end: str) -> float:
    delta = dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)
    return round(delta.total_seconds() * 1000, 1)


def test_the_digest_of_a_demo_has_one_line_per_run_worker_model_and_tool_call(
    demo: Recorded,
) -> None:
    lines = RunDigest().lines(demo.events)

    workers = len(demo.worker_runs())
    expected = {
        "run_started": 1,
        "run_ended": 1,
        "worker_started": workers,
        "worker_ended": workers,
        "model_call": len(demo.of(ModelResponded)),
        "tool_call": len(demo.of(ToolCallFinished)),
    }
    assert expected == dict(Counter(line.event for line in lines))
    for line in lines:
        assert {"session_id", "run_id", "agent_id"} <= set(line.fields)
        assert demo.sid == line.fields["session_id"]


def test_a_model_call_line_has_role_model_tokens_and_the_recorded_duration(
    demo: Recorded,
) -> None:
    requested = demo.stored(ModelRequested)[0]
    responded = demo.stored(ModelResponded)[0]

    first = next(line for line in RunDigest().lines(demo.events) if line.event == "model_call")

    assert isinstance(responded.event, ModelResponded)
    assert {
        "session_id": demo.sid,
        "run_id": demo.brain_run,
        "agent_id": requested.agent_id,
        "role": "router",
        "model": "scripted:demo",
        "call_index": 1,
        "attempt": 1,
        "input_tokens": responded.event.usage.input_tokens,
        "output_tokens": responded.event.usage.output_tokens,
        "stop_reason": "end_turn",
        "ms": _ms(requested.created_at, responded.created_at),
        "ok": True,
    } == first.fields
    assert first.fields["ms"] > 0


def test_worker_and_tool_lines_name_the_role_the_tool_and_the_outcome(demo: Recorded) -> None:
    lines = RunDigest().lines(demo.events)

    started = {line.fields["role"] for line in lines if line.event == "worker_started"}
    ended = [line for line in lines if line.event == "worker_ended"]
    tools = [line for line in lines if line.event == "tool_call"]

    assert {"researcher", "analyst", "engineer", "reviewer"} == started
    assert {("completed", "completed")} == {
        (x.fields["status"], x.fields["end_reason"]) for x in ended
    }
    assert all(x.fields["ms"] is not None and x.fields["ms"] > 0 for x in ended)
    assert {("lookup", True), ("save_note", True)} == {
        (x.fields["tool"], x.fields["ok"]) for x in tools
    }


def test_a_start_committed_by_an_earlier_process_gives_no_duration(demo: Recorded) -> None:
    # A resumed run: this process's writer never saw the run's start or the call's request.
    first_response = demo.stored(ModelResponded)[0].seq
    later = [e for e in demo.events if e.seq >= first_response]

    lines = RunDigest().lines(later)

    first = lines[0]
    assert ("model_call", None) == (first.event, first.fields["ms"])
    assert None is next(x for x in lines if x.event == "run_ended").fields["ms"]


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_the_lines_do_not_depend_on_how_the_commits_were_batched(
    demo: Recorded, data: st.DataObject
) -> None:
    events = demo.events
    cuts = sorted(data.draw(st.sets(st.integers(1, len(events) - 1), max_size=20)))
    batches = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)], strict=True)]

    digest = RunDigest()
    folded = [line for batch in batches for line in digest.lines(batch)]

    assert RunDigest().lines(events) == folded


def _digest_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "clew-run-logs"]


def test_with_info_off_an_engine_subscribes_no_listener_and_starts_no_thread(
    tmp_path: Path,
) -> None:
    set_output(LogOutput(level=logging.WARNING))
    with Runtime(tmp_path / "home", tmp_path) as rt:
        assert ([], ()) == (_digest_threads(), rt.writer._listeners.active)

    set_output(LogOutput(level=logging.INFO))
    with Runtime(tmp_path / "home", tmp_path) as rt:
        assert (["clew-run-logs"], 1) == (_digest_threads(), len(rt.writer._listeners.active))
    assert [] == _digest_threads()  # closed with its engine


def test_the_run_started_line_of_a_main_run_names_its_phase(demo: Recorded) -> None:
    lines = RunDigest().lines(demo.events)

    (main,) = (x for x in lines if x.event == "run_started")

    started = demo.of(RunStarted, demo.brain_run)[0]
    assert (demo.brain_run, started.phase) == (main.fields["run_id"], main.fields["phase"])
