"""Group commits (issue 17): a live run's events reach the store in as few commits as the
recovery rules allow, and the log is the same as with one commit per event."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pydantic
import pytest
from _runtime_helpers import route as route_rule
from _runtime_helpers import rule, run_session, scripted, worker

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.chains import ModelArg
from actors.models.scripted import ScriptedModel
from actors.models.tools import Tool, tool
from actors.recording.inputs import RunSettings
from actors.recording.recorder import RunRecorder
from actors.runtime.runtime import Runtime
from eventlog.blocks import ArtifactRefBlock
from eventlog.clock import ManualClock
from eventlog.errors import UnknownSession
from eventlog.events import NodeAppended, SessionCreated, TodoUpdated, ToolCallFinished
from eventlog.ids import DerivedIds
from eventlog.records import AppendRequest, StoredEvent
from eventlog.sqlite import SQLiteStore
from eventlog.writer import Writer

Run = list[tuple[int | None, str, bytes]]
#: A session's runs (by run id), the events of each commit, and the session id.
Session = tuple[dict[str, Run], list[list[StoredEvent]], str]


def _by_run(sid: str, project: Path, events: list[StoredEvent]) -> dict[str, Run]:
    """Each run's events in ``run_seq`` order: (run_seq, type, payload), the session id
    and the project directory factored out (two sessions differ only there)."""
    runs: dict[str, Run] = {}
    for e in events:
        payload = msgspec.json.encode(e.event).replace(sid.encode(), b"SID")
        payload = payload.replace(str(project).encode(), b"PROJECT")
        runs.setdefault(str(e.run_id).replace(sid, "SID"), []).append(
            (e.run_seq, e.event_type, payload)
        )
    return {r: sorted(evs, key=lambda x: x[0] or 0) for r, evs in runs.items()}


def _session(
    home: Path,
    project: Path,
    *,
    group_commits: bool,
    prompt: str,
    model: ModelArg,
    tools: list[Tool],
    settings: RunSettings | None = None,
) -> Session:
    """Run one session; return its runs, every commit's events, and its id."""
    commits: list[list[StoredEvent]] = []
    # One session id both ways: run ids, and the seeds derived from them, depend on it.
    ids, clock = DerivedIds(suffix="a1b2"), ManualClock()
    with Runtime(home, project, durability="full", ids=ids, clock=clock) as rt:
        rt._engine.group_commits = group_commits
        unsubscribe = rt.writer.subscribe(commits.append)
        recorded = run_session(rt, prompt, model, tools=tools, settings=settings)
        unsubscribe()
        return _by_run(recorded.sid, rt.project_dir, recorded.events), commits, recorded.sid


def _demo(tmp_path: Path, name: str, *, group_commits: bool, max_workers: int) -> Session:
    project = tmp_path / f"{name}-project"
    return _session(
        tmp_path / name,
        project,
        group_commits=group_commits,
        prompt=DEMO_PROMPT,
        model=demo_model(3),
        tools=demo_tools(project),
        settings=RunSettings(max_workers=max_workers),
    )


def _results_order(runs: dict[str, Run]) -> list[bytes]:
    """The Brain's worker_result_received payloads, in its run order (arrival order)."""
    return [p for _, k, p in runs["SID:brain:r1"] if k == "worker_result_received"]


def test_the_demo_logs_the_same_events_with_and_without_group_commits(tmp_path: Path) -> None:
    # One worker at a time: the Brain's run does not depend on which worker finishes first.
    a, commits_a, _ = _demo(tmp_path, "one", group_commits=False, max_workers=1)
    b, commits_b, _ = _demo(tmp_path, "grouped", group_commits=True, max_workers=1)
    # The same runs, each with the same events (payloads) in the same run order.
    assert a == b
    # The Brain's run, three workers', the review's, and the session's own event.
    assert 6 == len(a)
    # One commit per event without groups; about a third of that with them.
    events = sum(len(r) for r in a.values())
    assert (events, events) == (len(commits_a), sum(len(c) for c in commits_a))
    # A commit listener (what stream(), tail and follow build on) sees every event once,
    # in seq order, with groups as without.
    assert [list(range(1, events + 1))] * 2 == [
        [e.seq for c in commits for e in c] for commits in (commits_a, commits_b)
    ]
    assert len(commits_b) < events / 2, (events, len(commits_b))


def test_concurrent_workers_log_the_same_runs_with_and_without_group_commits(
    tmp_path: Path,
) -> None:
    """Three workers at once (two of them independent), so groups of several producers meet
    in the writer: every worker's run is the same both ways; the Brain's too, unless the
    independent workers finished in another order (it records results as they arrive)."""
    a, _, _ = _demo(tmp_path, "one", group_commits=False, max_workers=3)
    b, _, _ = _demo(tmp_path, "grouped", group_commits=True, max_workers=3)
    assert a.keys() == b.keys()
    assert [] == [r for r in a if r != "SID:brain:r1" and a[r] != b[r]]
    if _results_order(a) == _results_order(b):
        assert a["SID:brain:r1"] == b["SID:brain:r1"]
    else:  # the same events, in the order the results arrived
        assert sorted(p for _, _, p in a["SID:brain:r1"]) == sorted(
            p for _, _, p in b["SID:brain:r1"]
        )


class Query(pydantic.BaseModel):
    q: str


@tool(Query)
def lookup(args: Query) -> str:
    """Look something up (a large result: 40 KB of text)."""
    return f"{args.q}: " + "x" * 40_000


def _tool_turn_model() -> ScriptedModel:
    return scripted(
        route_rule([]),
        rule(
            "lead",
            {"text": "(never: the plan is the conversation's first assistant message)"},
            {"tool_calls": [{"name": "lookup", "arguments": {"q": "notes"}}]},
            {"json": {"answer": "y" * 40_000}},
        ),
    )


def _tool_session(home: Path, project: Path, *, group_commits: bool) -> Session:
    return _session(
        home,
        project,
        group_commits=group_commits,
        prompt="Look it up.",
        model=_tool_turn_model(),
        tools=[lookup],
    )


def test_a_tool_turn_makes_two_commits_and_the_turn_after_it_one(tmp_path: Path) -> None:
    _, commits, sid = _tool_session(tmp_path / "h", tmp_path / "p", group_commits=True)
    brain = f"{sid}:brain:r1"
    kinds = [[e.event_type for e in c if e.run_id == brain] for c in commits]
    at = next(i for i, c in enumerate(kinds) if "tool_call_started" in c)
    # Before the tool runs: the reply, its usage, the assistant node and the start.
    assert ["model_responded", "token_usage", "node_appended", "tool_call_started"] == kinds[at]
    # Before the next model call: the outcome (its artifact first), the tool node (its
    # result is the outcome's ref already), the next request.
    assert ["artifact_created", "tool_call_finished", "node_appended", "model_requested"] == kinds[
        at + 1
    ]
    # The last turn (no tool): its reply, usage and node in one commit, before the Task
    # WAL moves the primary's task; then the run's end.
    assert ["model_responded", "token_usage", "artifact_created", "node_appended"] == kinds[at + 2][
        :4
    ]


def test_large_results_and_replies_are_stored_as_emit_returned_them(tmp_path: Path) -> None:
    a, _, _ = _tool_session(tmp_path / "a", tmp_path / "pa", group_commits=False)
    b, _, sid = _tool_session(tmp_path / "b", tmp_path / "pb", group_commits=True)
    # The next request carries the tool node as emit returned it (an artifact ref): equal
    # requests both ways prove the local stored form is the committed one.
    assert a == b
    with Runtime(tmp_path / "b", tmp_path / "pb") as rt:
        events = [e.event for e in rt.store.read_events(sid)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [[ArtifactRefBlock]] == [[type(b) for b in f.content] for f in finished]
    big_reply = [
        e for e in events
        if isinstance(e, NodeAppended) and e.node.role == "assistant"
        and any(isinstance(b, ArtifactRefBlock) for b in e.node.content)
    ]  # fmt: skip
    assert 1 == len(big_reply)


@pytest.mark.parametrize("group_commits", [False, True])
def test_a_worker_with_a_tool_logs_the_same_events_both_ways(
    tmp_path: Path, group_commits: bool
) -> None:
    model = scripted(
        route_rule([worker("w1", "researcher", "find it")]),
        rule(
            "researcher",
            {"tool_calls": [{"name": "lookup", "arguments": {"q": "w"}}]},
            {"text": "found"},
        ),
    )
    runs, _, _ = _session(tmp_path / "h", tmp_path / "p", group_commits=group_commits,
                          prompt="Research.", model=model, tools=[lookup])  # fmt: skip
    other, _, _ = _session(tmp_path / "h2", tmp_path / "p2", group_commits=not group_commits,
                           prompt="Research.", model=model, tools=[lookup])  # fmt: skip
    assert runs == other
    assert any("tool_call_started" in [k for _, k, _ in r] for r in runs.values())


SID = "sess_20260101_000000_a1b2"


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Writer]:
    """A writer on a real SQLite file holding one session, ``SID``."""
    w = Writer(SQLiteStore(tmp_path / "s.sqlite"))
    created = SessionCreated(session_id=SID, cwd="/", root_agent_id="a")
    w.append(AppendRequest(session_id=SID, event=created, created_at="t0"))
    yield w
    w.stop()


def _recorder(writer: Writer, session_id: str = SID) -> RunRecorder:
    return RunRecorder(
        session_id=session_id, agent_id="a", run_id="r1", writer=writer, clock=ManualClock()
    )


def _todo(note: str) -> TodoUpdated:
    return TodoUpdated(todo_id="t1", status="running", note=note)


def test_emitted_events_wait_for_a_flush_and_commit_in_emit_order(
    writer: Writer, tmp_path: Path
) -> None:
    rec = _recorder(writer)
    reader = SQLiteStore(tmp_path / "s.sqlite")
    for note in "abc":
        rec.emit(_todo(note))
    assert (3, 1) == (len(rec.commits), reader.count_events(rec.session_id))
    rec.flush()
    assert 0 == len(rec.commits)
    assert [(1, "a"), (2, "b"), (3, "c")] == [
        (e.run_seq, e.event.note) for e in reader.read_run(rec.session_id, "r1")
        if isinstance(e.event, TodoUpdated)
    ]  # fmt: skip


def test_an_exception_leaving_the_run_commits_what_was_emitted_then_goes_on(
    writer: Writer, tmp_path: Path
) -> None:
    rec = _recorder(writer)
    with pytest.raises(ValueError, match="the run's bug"), rec.commits.committing():
        rec.emit(_todo("before the bug"))
        raise ValueError("the run's bug")
    assert ["todo_updated"] == [e.event_type for e in SQLiteStore(tmp_path / "s.sqlite").read_run(
        rec.session_id, "r1")]  # fmt: skip


def test_a_failing_flush_on_the_way_out_raises_its_own_error(writer: Writer) -> None:
    rec = _recorder(writer, session_id="sess_20260101_000001_c3d4")  # an unknown session
    with pytest.raises(UnknownSession), rec.commits.committing():
        rec.emit(_todo("lost"))
        raise ValueError("the run's bug")
