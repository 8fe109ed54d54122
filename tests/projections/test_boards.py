# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from functools import partial

from _events import stored_event

from eventlog.events import (
    AgentCreated,
    AgentStatusChanged,
    ArtifactCreated,
    Event,
    RunEnded,
    RunStarted,
    SessionArchived,
    SessionCreated,
)
from eventlog.records import StoredEvent
from projections.boards import rebuild

stored = partial(stored_event, agent_id="main")


def history(*events: Event) -> list[StoredEvent]:
    head: list[Event] = [
        SessionCreated(session_id="s1", cwd="/", root_agent_id="main"),
        AgentCreated(agent_id="main", agent_type="orchestrator", role="brain"),
    ]
    return [stored(i, e) for i, e in enumerate([*head, *events], start=1)]


def test_a_running_run_is_interrupted_only_when_its_owner_is_not_alive() -> None:
    boards = rebuild(
        history(
            RunStarted(run_id="r1", agent_id="main"),
            RunStarted(run_id="r2", agent_id="main"),
            RunStarted(run_id="r3", agent_id="main"),
            RunEnded(run_id="r3", status="completed", end_reason="completed"),
        )
    )
    assert ["r1", "r2"] == [r.run_id for r in boards.interrupted_runs(False)]
    assert [] == boards.interrupted_runs(True)
    assert ["r2"] == [r.run_id for r in boards.interrupted_runs({"r1"})]
    assert "interrupted" == boards.run_status("r1", live=False)
    assert "running" == boards.run_status("r1", live=True)
    assert "completed" == boards.run_status("r3", live=False)
    assert {"interrupted": ["r1", "r2"], "completed": ["r3"]} == boards.runs_by_status(False)


def test_a_status_change_without_a_result_keeps_the_previous_result() -> None:
    boards = rebuild(
        history(
            AgentStatusChanged(agent_id="main", status="running", result={"x": 1}),
            AgentStatusChanged(agent_id="main", status="completed"),
        )
    )
    row = boards.agents["main"]
    assert ("completed", {"x": 1}, "t4") == (row.status, row.result, row.updated_at)
    assert {"role": "brain", "purpose": ""} == row.metadata


def test_the_first_artifact_created_wins_and_takes_its_envelope() -> None:
    a = ArtifactCreated(artifact_id="art", path="p1", sha256="aa")
    b = ArtifactCreated(artifact_id="art", path="p2", sha256="bb")
    events = history()
    events += [stored(3, a, run_id="r9"), stored(4, b)]
    row = rebuild(events).artifacts["art"]
    assert ("p1", "r9", {"sha256": "aa"}, "t3") == (
        row.path,
        row.run_id,
        row.metadata,
        row.created_at,
    )


def test_the_session_row_tracks_archive_and_the_last_event_time() -> None:
    boards = rebuild(history(SessionArchived(), RunStarted(run_id="r1", agent_id="main")))
    session = boards.session
    assert session is not None
    assert ("archived", "t1", "t4") == (session.status, session.created_at, session.updated_at)


def test_run_rows_hold_metadata_and_usage_like_the_store() -> None:
    boards = rebuild(
        history(
            RunStarted(run_id="r1", agent_id="main", phase="route", metadata={"k": 1}),
            RunEnded(
                run_id="r1",
                status="failed",
                end_reason="failed",
                error={"message": "x"},
                turn_count=2,
            ),
        )
    )
    row = boards.runs["r1"]
    assert {"phase": "route", "attempt": 1, "rng_seed": 0, "k": 1} == row.metadata
    assert {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    } == row.usage
    assert ("failed", "failed", 2, {"message": "x"}) == (
        row.status,
        row.end_reason,
        row.turn_count,
        row.error,
    )
