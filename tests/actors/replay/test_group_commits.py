"""Group commits (issue 17): a live run's events reach the store in as few commits as the
recovery rules allow, and the log is the same as with one commit per event."""

from __future__ import annotations

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
from actors.runtime.runtime import Runtime
from eventlog.blocks import ArtifactRefBlock
from eventlog.clock import ManualClock
from eventlog.events import NodeAppended, ToolCallFinished
from eventlog.ids import DerivedIds
from eventlog.records import StoredEvent

Run = list[tuple[int | None, str, bytes]]


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
) -> tuple[dict[str, Run], list[list[StoredEvent]], str]:
    """Run one session; return its runs, every commit's events, and its id."""
    commits: list[list[StoredEvent]] = []
    # One session id both ways: run ids, and the seeds derived from them, depend on it.
    ids, clock = DerivedIds(suffix="a1b2"), ManualClock()
    with Runtime(home, project, durability="full", ids=ids, clock=clock) as rt:
        rt._engine.group_commits = group_commits
        unsubscribe = rt.writer.subscribe(commits.append)
        recorded = run_session(rt, prompt, model, tools=tools)
        unsubscribe()
        return _by_run(recorded.sid, rt.project_dir, recorded.events), commits, recorded.sid


def test_the_demo_logs_the_same_events_with_and_without_group_commits(tmp_path: Path) -> None:
    (one, project1), (grouped, project2) = (
        (tmp_path / "one", tmp_path / "p1"),
        (
            tmp_path / "grouped",
            tmp_path / "p2",
        ),
    )
    a, commits_a, _ = _session(one, project1, group_commits=False, prompt=DEMO_PROMPT,
                               model=demo_model(3), tools=demo_tools(project1))  # fmt: skip
    b, commits_b, _ = _session(grouped, project2, group_commits=True, prompt=DEMO_PROMPT,
                               model=demo_model(3), tools=demo_tools(project2))  # fmt: skip
    # The same runs, each with the same events (payloads) in the same run order.
    assert a == b
    # The Brain's run, three workers', the review's, and the session's own event.
    assert 6 == len(a)
    # One commit per event without groups (the three workers' may share a commit).
    events = sum(len(r) for r in a.values())
    assert sum(len(c) for c in commits_a) == events
    assert len(commits_b) < len(commits_a) / 2, (len(commits_a), len(commits_b))


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


def _tool_session(
    home: Path, project: Path, *, group_commits: bool
) -> tuple[dict[str, Run], list[list[StoredEvent]], str]:
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
