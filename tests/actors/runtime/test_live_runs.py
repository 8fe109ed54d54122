"""Live runs: a handle streams a run's committed events and text, awaits and cancels it.

Cancellation is durable and replayable whatever asks for it: the handle, Ctrl-C in the
embedding process, another process (``clew cancel``), or a timeout. Every cancelled
session here replays identically, verifies, is not "interrupted" afterwards, and takes
a new run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cli_helpers import count_events
from _live_helpers import (
    NoArgs,
    Streaming,
    calls_tool,
    ended_well,
    main_end,
    slow_session,
    three_workers,
    until_cancelled,
)
from _processes import child_env
from _runtime_helpers import scripted

from actors import RunSettings, Runtime, tool
from actors.errors import NothingToCancel
from actors.models.protocol import TextDelta
from eventlog.events import ModelFailed, ModelRequested, ModelResponded, RunCancelling, RunEnded
from eventlog.records import StoredEvent


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    project = tmp_path / "project"
    project.mkdir()
    with Runtime(tmp_path / "home", project) as runtime:
        yield runtime


# --- streaming ---------------------------------------------------------------------------


def test_a_streamed_run_yields_every_stored_event_in_seq_order_and_the_text_as_it_comes(
    rt: Runtime,
) -> None:
    session = rt.new_session()
    handle = session.start("plan it", model=Streaming(three_workers()))
    items = list(handle.stream())
    outcome = handle.result()

    assert "completed" == outcome.status
    events = [i for i in items if isinstance(i, StoredEvent)]
    stored = [e for e in rt.store.read_events(session.id) if e.event_type != "session_created"]
    assert stored == events
    seqs = [e.seq for e in events]
    assert list(range(seqs[0], seqs[0] + len(seqs))) == seqs  # no gap
    assert isinstance(events[-1].event, RunEnded)

    # The pieces of each call concatenate to the text recorded in its model_responded,
    # and come between its model_requested and its model_responded.
    texts: dict[tuple[str, int], str] = {}
    position: dict[tuple[str, int], int] = {}
    for i, item in enumerate(items):
        if isinstance(item, TextDelta):
            key = (item.run_id, item.call_index)
            texts[key] = texts.get(key, "") + item.text
            position.setdefault(key, i)
    responded = {
        (e.run_id, e.event.call_index): (i, e.event)
        for i, e in enumerate(items)
        if isinstance(e, StoredEvent) and isinstance(e.event, ModelResponded)
    }
    assert len(texts) >= 4  # three workers and the lead (the router replies in JSON)
    for key, text in texts.items():
        at, event = responded[key]
        assert text == "".join(getattr(b, "text", "") for b in event.content)
        assert position[key] < at
    ended_well(rt, session.id)


def test_run_is_start_then_result_and_has_no_stream(rt: Runtime) -> None:
    session = rt.new_session()
    assert "completed" == session.run("plan it", model=three_workers()).status
    handle = session.start("again", model=three_workers())
    assert "completed" == handle.result(timeout=60).status
    assert handle.done() and not handle.cancel("too late")
    ended_well(rt, session.id)


def test_a_stream_cut_midway_is_recorded_and_asked_again_as_the_next_attempt(
    rt: Runtime,
) -> None:
    session = rt.new_session()
    model = Streaming(three_workers(), cut_first=frozenset({"lead"}))
    handle = session.start("plan it", model=model)
    items = list(handle.stream())
    assert "completed" == handle.result().status

    lead = [
        e.event
        for e in rt.store.read_events(session.id)
        if isinstance(e.event, ModelRequested | ModelFailed | ModelResponded)
        and e.run_id == f"{session.id}:brain:r1"
        and e.event.call_index == 2
    ]
    assert [type(e).__name__ for e in lead] == [
        "ModelRequested",
        "ModelFailed",
        "ModelRequested",
        "ModelResponded",
    ]
    assert "StreamInterrupted" == lead[1].error_type and lead[1].will_fallback
    assert [1, 1, 2, 2] == [e.attempt for e in lead]
    pieces = [i for i in items if isinstance(i, TextDelta) and i.call_index == 2]
    assert {1, 2} == {p.attempt for p in pieces}
    assert "".join(p.text for p in pieces if p.attempt == 2) == outcome_text(lead[3])
    ended_well(rt, session.id)


def outcome_text(event: ModelResponded) -> str:
    return "".join(getattr(b, "text", "") for b in event.content)


# --- cancelling from the handle ------------------------------------------------------------


def test_cancelling_from_the_handle_stops_the_workers_and_records_the_run_cancelled(
    rt: Runtime,
) -> None:
    session = rt.new_session()
    handle = session.start("plan it", model=three_workers(delay_ms=30_000))
    started = time.monotonic()
    for item in handle.stream():
        if isinstance(item, StoredEvent) and item.event_type == "handoff_sent":
            assert handle.cancel("the user changed their mind")
    outcome = handle.result()

    assert time.monotonic() - started < 20  # not the workers' 30 s replies
    assert "cancelled" == outcome.status and "the user changed their mind" == outcome.error
    end = main_end(rt, session.id)
    assert ("cancelled", "cancelled") == (end.status, end.end_reason)
    assert {"status": "cancelled", "reason": "the user changed their mind", "source": "handle"} == (
        end.outcome
    )
    events = rt.store.read_events(session.id)
    stops = [e for e in events if isinstance(e.event, RunCancelling)]
    assert stops and all(e.event.source == "handle" for e in stops)
    workers = [
        e.event for e in events if isinstance(e.event, RunEnded) and "/w" in (e.run_id or "")
    ]
    assert workers and all(w.status == "cancelled" for w in workers)
    # Stopped in their model calls, or before their first one.
    assert {w.end_reason for w in workers} <= {"aborted_streaming", "cancelled"}
    assert not session.info().interrupted
    ended_well(rt, session.id)

    # A cancelled session takes a new run.
    assert "completed" == session.run("now something else", model=three_workers()).status
    ended_well(rt, session.id)


def test_a_tool_is_asked_to_stop_and_its_outcome_is_recorded(rt: Runtime) -> None:
    session = rt.new_session()
    started = threading.Event()
    tools = [until_cancelled(started)]
    handle = session.start("plan it", model=calls_tool("wait_for_cancel"), tools=tools)
    assert started.wait(60)
    handle.cancel("stop the tool")
    assert "cancelled" == handle.result().status

    events = rt.store.read_events(session.id)
    finished = [e.event for e in events if e.event_type == "tool_call_finished"]
    assert ["stopped early"] == [b.text for f in finished for b in f.content]  # type: ignore[attr-defined]
    [worker_end] = [
        e.event for e in events if isinstance(e.event, RunEnded) and "/w1" in (e.run_id or "")
    ]
    assert ("cancelled", "aborted_tools") == (worker_end.status, worker_end.end_reason)
    # Both calls of the reply have a result on the worker's branch: the second was not run.
    [tool_node] = [n for n in rt.store.read_nodes(session.id) if n.role == "tool"]
    results = tool_node.content
    assert 2 == len(results)
    assert "not run: the run was cancelled" in results[1].content[0].text  # type: ignore[union-attr]
    ended_well(rt, session.id)


def test_a_tool_that_ignores_the_cancel_is_abandoned_after_its_grace(rt: Runtime) -> None:
    @tool(NoArgs, name="stubborn")
    def stubborn(args: NoArgs) -> str:
        """Never looks at its context."""
        time.sleep(30)
        return "too late"

    session = rt.new_session()
    handle = session.start("plan it", model=calls_tool("stubborn"), tools=[stubborn])
    for item in handle.stream():
        if isinstance(item, StoredEvent) and item.event_type == "tool_call_started":
            handle.cancel("stop")
    assert "cancelled" == handle.result().status
    [failed] = [e.event for e in rt.store.read_events(session.id) if e.event_type == "tool_failed"]
    assert "Cancelled" == failed.error_type  # type: ignore[union-attr]
    ended_well(rt, session.id)


def test_cancelling_inside_a_model_call_does_not_wait_for_the_model(rt: Runtime) -> None:
    session = rt.new_session()
    handle = session.start("plan it", model=three_workers(lead_delay_ms=60_000))
    started = time.monotonic()
    for item in handle.stream():
        event = item.event if isinstance(item, StoredEvent) else None
        if isinstance(event, ModelRequested) and event.role == "lead":
            handle.cancel("no time")
    assert "cancelled" == handle.result().status
    assert time.monotonic() - started < 30
    end = main_end(rt, session.id)
    assert "aborted_streaming" == end.end_reason
    ended_well(rt, session.id)


def test_cancelling_a_session_with_nothing_running_is_refused(rt: Runtime) -> None:
    session = rt.new_session()
    with pytest.raises(NothingToCancel, match="no run in progress"):
        session.cancel()
    session.run("plan it", model=three_workers())
    with pytest.raises(NothingToCancel):
        rt.cancel(session.id, "late")


# --- timeouts -----------------------------------------------------------------------------


def test_a_model_call_past_its_timeout_fails_over_to_the_next_model(rt: Runtime) -> None:
    slow = scripted({"role": None, "replies": [{"text": "slow", "delay_ms": 30_000}]}, name="slow")
    session = rt.new_session()
    outcome = session.run(
        "plan it",
        model={"default": [three_workers()], "lead": [slow, three_workers()]},
        settings=RunSettings(model_timeout_s=0.3),
    )
    assert "completed" == outcome.status
    [failed] = [
        e.event for e in rt.store.read_events(session.id) if isinstance(e.event, ModelFailed)
    ]
    assert ("ModelTimeout", "slow", True) == (failed.error_type, failed.model, failed.will_fallback)
    ended_well(rt, session.id)


def test_a_worker_past_its_timeout_is_cancelled_alone_and_the_run_goes_on(rt: Runtime) -> None:
    session = rt.new_session()
    outcome = session.run(
        "plan it", model=three_workers(delay_ms=30_000), settings=RunSettings(worker_timeout_s=0.3)
    )
    assert "completed" == outcome.status
    events = rt.store.read_events(session.id)
    stops = [e.event for e in events if isinstance(e.event, RunCancelling)]
    assert stops and all((s.source, s.scope) == ("timeout", "worker") for s in stops)
    assert all("worker_timeout_s" in s.reason for s in stops)
    assert {r.status for r in outcome.worker_results} <= {"cancelled", "blocked"}
    ended_well(rt, session.id)


def test_a_run_past_its_timeout_is_cancelled_with_the_reason(rt: Runtime) -> None:
    session = rt.new_session()
    outcome = session.run(
        "plan it", model=three_workers(delay_ms=30_000), settings=RunSettings(run_timeout_s=0.5)
    )
    assert "cancelled" == outcome.status and "run_timeout_s" in (outcome.error or "")
    assert "timeout" == main_end(rt, session.id).outcome["source"]
    ended_well(rt, session.id)


# --- Ctrl-C and other processes ------------------------------------------------------------


def _wait_for_events(home: Path, sid: str, n: int, child: object) -> None:
    deadline = time.monotonic() + 60
    while count_events(home, sid) < n:
        assert time.monotonic() < deadline, f"the session never committed {n} events"
        assert getattr(child, "poll")() is None, "the process ended early"  # noqa: B009
        time.sleep(0.02)


def _slow_session_going(
    tmp_path: Path, delay_ms: int, events: int
) -> tuple[Path, Path, subprocess.Popen[str], str]:
    """Start a process running a slow session; return once it committed ``events``."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    child = slow_session(home, project, delay_ms)
    assert child.stdout is not None
    sid = child.stdout.readline().strip()
    _wait_for_events(home, sid, events, child)
    return home, project, child, sid


def test_ctrl_c_in_an_embedding_process_cancels_its_run_durably(tmp_path: Path) -> None:
    home, project, child, sid = _slow_session_going(tmp_path, 1000, 6)
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = child.communicate(timeout=60)
    assert time.monotonic() - sent < 2.0, err
    assert (130, "interrupted") == (child.returncode, out.strip().splitlines()[-1]), err
    with Runtime(home, project) as rt:
        end = main_end(rt, sid)
        assert ("cancelled", "interrupt") == (end.status, end.outcome["source"])
        ended_well(rt, sid)


def test_clew_cancel_from_another_process_stops_the_owner_within_a_second(
    tmp_path: Path,
) -> None:
    home, project, child, sid = _slow_session_going(tmp_path, 1000, 6)
    where = ["--home", str(home), "--project", str(project)]
    cancel = subprocess.run(
        [sys.executable, "-m", "actors", "cancel", sid, "--reason", "stop now", "--json", *where],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        check=False,
    )
    assert 0 == cancel.returncode, cancel.stderr
    assert {"session_id": sid, "run_id": f"{sid}:brain:r1", "status": "cancelled"}.items() <= (
        json.loads(cancel.stdout).items()
    )
    out, _ = child.communicate(timeout=60)
    assert "outcome cancelled stop now" == out.strip().splitlines()[-1]
    with Runtime(home, project) as rt:
        assert "external" == main_end(rt, sid).outcome["source"]
        ended_well(rt, sid)


def test_cancelling_a_session_a_crash_interrupted_records_it_cancelled_without_a_model(
    tmp_path: Path,
) -> None:
    home, project, child, sid = _slow_session_going(tmp_path, 300, 12)
    child.kill()
    child.communicate(timeout=30)
    with Runtime(home, project) as rt:
        assert rt.interrupted_runs(sid)
        report = rt.cancel(sid, "abandoned after the crash")
        assert ("cancelled", f"{sid}:brain:r1") == (report.status, report.run_id)
        end = main_end(rt, sid)
        assert ("cancelled", "external") == (end.status, end.outcome["source"])
        requests = [e for e in rt.store.read_events(sid) if e.event_type == "model_requested"]
        responses = [e for e in rt.store.read_events(sid) if e.event_type == "model_responded"]
        assert len(requests) - len(responses) <= 3  # no call asked again, none answered anew
        ended_well(rt, sid)
