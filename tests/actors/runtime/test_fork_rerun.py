"""Fork, counterfactual rerun and history diff on real SQLite homes.

The model-counting test records a session through the real OpenAI-compatible adapter
against the loopback server and counts what reaches it when the session is rerun with
another model for one worker role.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pydantic
import pytest
from _runtime_helpers import route, rule, scripted, sent_requests, worker
from fake_server import TEST_KEY, FakeClock, FakeServer, Reply, openai_reply

import projections
from actors.demo import demo_model, demo_tools
from actors.errors import UsageError
from actors.models.providers import HttpOptions, OpenAIChatModel, RetryPolicy
from actors.models.tools import FunctionTool
from actors.orchestration import artifact_tool
from actors.orchestration.prompts import PRIMARY_SYSTEM, ROUTER_SYSTEM_V2, WORKER_SYSTEM
from actors.orchestration.team import Role, Team
from actors.recording.inputs import RunInputs
from actors.recording.recorded import run_started_of
from actors.runtime.runtime import Runtime
from eventlog.events import (
    NodeAppended,
    SessionCreated,
    ToolCallFinished,
    ToolCallStarted,
)
from projections.errors import UnknownNode
from projections.history_diff import diff_sides, side_of

# --- a demo session ------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def rt(tmp_path: Path, project: Path) -> Iterator[Runtime]:
    with Runtime(tmp_path / "home", project) as runtime:
        yield runtime


def demo_session(rt: Runtime, project: Path, prompts: tuple[str, ...] = ("Plan it",)) -> str:
    session = rt.new_session()
    for prompt in prompts:
        outcome = session.run(prompt, model=demo_model(), tools=demo_tools(project))
        assert "completed" == outcome.status, outcome.error
    return session.id


def path_content(rt: Runtime, sid: str, run_id: str) -> str:
    """The session's path (role, type, content) as JSON, the run's id read as ``<run>``
    (a worker result names its worker by an id under the run that made it)."""
    path = [(n.role, n.node_type, n.content) for n in rt.store.read_active_path(sid)]
    return json.dumps(path, default=str).replace(run_id, "<run>")


def assert_sound(rt: Runtime, sid: str) -> None:
    """The session replays identically and its tables rebuild from its events."""
    report = rt.replay(sid)
    assert report.identical, report.summary()
    verified = projections.verify(rt.store, sid)
    assert verified.ok, verified.lines()


# --- fork ----------------------------------------------------------------------------------


def test_a_fork_at_a_user_node_holds_the_prefix_runs_and_forks_again(
    rt: Runtime, project: Path
) -> None:
    parent = demo_session(rt, project, ("First question", "Second question"))
    before = rt.store.count_events(parent)
    second_user = next(
        n for n in rt.store.read_nodes(parent) if n.run_id and n.run_id.endswith(":r2")
    )
    assert ("user", "message") == (second_user.role, second_user.node_type)

    fork = rt.fork(parent, at=second_user.node_id, title="what if")

    row = rt.store.read_session(fork.id)
    assert parent == row.parent_session_id
    assert second_user.node_id == row.metadata["fork_from_node_id"]
    assert "what if" == row.metadata["title"]
    assert second_user.node_id == row.active_node_id
    prefix = rt.store.read_active_path(parent, second_user.node_id)
    assert [n.node_id for n in prefix] == [n.node_id for n in rt.store.read_nodes(fork.id)]
    # recorded in the fork's own log: the relation and every copied node
    events = [e.event for e in rt.store.iter_events(fork.id)]
    created = events[0]
    assert isinstance(created, SessionCreated)
    assert (parent, second_user.node_id) == (
        created.parent_session_id,
        created.metadata["fork_from_node_id"],
    )
    assert len(prefix) == sum(isinstance(e, NodeAppended) for e in events)

    outcome = fork.run("A different second question", model=demo_model(), tools=demo_tools(project))

    assert "completed" == outcome.status, outcome.error
    path = rt.store.read_active_path(fork.id)
    assert [n.node_id for n in prefix] == [n.node_id for n in path[: len(prefix)]]
    assert "A different second question" in json.dumps(path[len(prefix)].content, default=str)
    assert before == rt.store.count_events(parent)  # the parent is untouched
    assert_sound(rt, fork.id)

    again = rt.fork(fork.id)  # at its active node: the end of its run
    assert fork.id == rt.store.read_session(again.id).parent_session_id
    assert [n.node_id for n in path] == [n.node_id for n in rt.store.read_active_path(again.id)]
    assert "completed" == again.run("Third", model=demo_model(), tools=demo_tools(project)).status
    assert_sound(rt, again.id)


def test_a_fork_at_an_unknown_node_is_refused_and_writes_nothing(
    rt: Runtime, project: Path
) -> None:
    parent = demo_session(rt, project)
    with pytest.raises(UnknownNode, match="no node"):
        rt.fork(parent, at=f"{parent}:brain:r9:n1")
    assert [parent] == [s.session_id for s in rt.store.list_sessions()]


# --- rerun ---------------------------------------------------------------------------------


def test_a_rerun_with_no_change_is_identical_in_content_and_served_entirely(
    rt: Runtime, project: Path
) -> None:
    parent = demo_session(rt, project, ("First question", "Second question"))
    calls = sum(1 for e in rt.store.read_runs_under(parent, f"{parent}:brain:r2")
                if e.event_type == "model_responded")  # fmt: skip

    report = rt.rerun(parent, model=demo_model(), tools=demo_tools(project))

    assert (calls, 0) == (report.served_calls, report.live_calls)
    assert 0 < report.saved_usage.input_tokens
    assert f"{parent}:brain:r2" == report.run_id
    assert path_content(rt, parent, report.run_id) == path_content(
        rt, report.session_id, report.fork_run_id
    )
    original = [
        e.event
        for e in rt.store.read_runs_under(parent, report.run_id)
        if isinstance(e.event, ToolCallFinished)
    ]
    rerun = [
        e.event
        for e in rt.store.iter_events(report.session_id)
        if isinstance(e.event, ToolCallFinished)
    ]
    assert sorted(original, key=lambda e: e.tool_call_id) == sorted(
        rerun, key=lambda e: e.tool_call_id
    )
    assert ("completed", "completed") == (
        rt.store.read_runs(parent)[-1].status,
        report.outcome.status,
    )
    assert report.run_id in json.dumps(rt.store.read_session(report.session_id).metadata)
    inputs = [
        RunInputs.from_metadata(run_started_of(rt.store.read_run(sid, run)).metadata)
        for sid, run in ((parent, report.run_id), (report.session_id, report.fork_run_id))
    ]
    assert msgspec.structs.replace(inputs[0], create_agent=True) == inputs[1]
    diff = diff_sides(
        side_of(rt.store, parent, rt.store.read_session(parent).active_node_id),
        side_of(
            rt.store, report.session_id, rt.store.read_session(report.session_id).active_node_id
        ),
    )
    assert diff.identical, diff.differing
    assert diff.a.usage.totals == diff.b.usage.totals
    assert_sound(rt, report.session_id)


def test_a_rerun_with_an_edited_tool_result_gives_it_and_the_diff_shows_exactly_it(
    rt: Runtime, project: Path
) -> None:
    parent = demo_session(rt, project)
    started = [
        e.event for e in rt.store.iter_events(parent) if isinstance(e.event, ToolCallStarted)
    ]
    lookup = next(e for e in started if e.tool_name == "lookup")

    report = rt.rerun(
        parent,
        tool_results={lookup.tool_call_id: {"facts": ["an edited fact"]}},
        model=demo_model(),
        tools=demo_tools(project),
    )

    assert [lookup.tool_call_id] == report.edited_tool_calls
    assert 1 == report.live_calls  # the one request that holds the edited result
    finished = {
        e.event.tool_call_id: e.event
        for e in rt.store.iter_events(report.session_id)
        if isinstance(e.event, ToolCallFinished)
    }
    assert "an edited fact" in json.dumps(finished[lookup.tool_call_id].content, default=str)
    diff = diff_sides(
        side_of(rt.store, parent, rt.store.read_session(parent).active_node_id),
        side_of(
            rt.store, report.session_id, rt.store.read_session(report.session_id).active_node_id
        ),
    )
    assert not diff.identical
    [(a, b)] = diff.differing
    assert a is not None and b is not None
    assert ("tool", "lookup", lookup.tool_call_id) == (a.kind, a.what, a.ref)
    assert "an edited fact" in b.text and "an edited fact" not in a.text
    assert_sound(rt, report.session_id)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"run": "brain:r7"}, "no main run"),
        ({"models": {"nobody": "openai:x"}}, "no role 'nobody'"),
        ({"tool_results": {"call_nope": "x"}}, "no tool call 'call_nope'"),
        ({"prompt": "   "}, "the prompt is empty"),
    ],
)
def test_a_rerun_naming_nothing_of_the_run_is_refused_before_anything_is_written(
    rt: Runtime, project: Path, change: dict[str, Any], message: str
) -> None:
    parent = demo_session(rt, project)
    events = rt.store.count_events(parent)
    with pytest.raises(UsageError, match=message):
        rt.rerun(parent, model=demo_model(), **change)
    assert [parent] == [s.session_id for s in rt.store.list_sessions()]
    assert events == rt.store.count_events(parent)


# --- rerun with another model for one worker role, counted on the loopback server ---------

PLAN = {
    "primary_role": "lead",
    "workers": [
        {"id": "w1", "role": "researcher", "goal": "Look up topic=alpha", "deps": []},
        {"id": "w2", "role": "analyst", "goal": "Look up topic=beta", "deps": ["w1"]},
    ],
    "review": False,
}


def provider(path: str, request: Any) -> Reply:
    """Answer by system prompt; a worker looks its topic up, then says what it found."""
    messages = request["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if system == ROUTER_SYSTEM_V2:  # new runs follow flow 2
        return Reply(body=openai_reply(json.dumps(PLAN)))
    if system == WORKER_SYSTEM:
        topic = "alpha" if "topic=alpha" in json.dumps(request) else "beta"
        if messages[-1]["role"] == "tool":
            return Reply(body=openai_reply(f"{topic} has three facts."))
        call = {"id": f"call_{topic}", "name": "lookup", "arguments": json.dumps({"topic": topic})}
        return Reply(body=openai_reply(None, tool_calls=[call], finish_reason="tool_calls"))
    if system == PRIMARY_SYSTEM:
        return Reply(body=openai_reply("alpha and beta have three facts each."))
    return Reply(status=400, body={"error": {"message": "unexpected request"}})


class LookupArgs(pydantic.BaseModel):
    topic: str


def lookup_tool() -> FunctionTool:
    def lookup(args: LookupArgs) -> dict[str, Any]:
        return {"topic": args.topic, "facts": [f"{args.topic} fact {i}" for i in (1, 2, 3)]}

    return FunctionTool("lookup", lookup, LookupArgs, idempotent=True)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as running:
        running.answer_with(provider)
        yield running


def adapter(server: FakeServer, name: str) -> OpenAIChatModel:
    clock = FakeClock()
    options = HttpOptions(
        timeout=2.0, retry=RetryPolicy(), sleep=clock.sleep, rng=random.Random(7),
        clock=clock.monotonic,
    )  # fmt: skip
    return OpenAIChatModel(name, base_url=server.url + "/v1", api_key=TEST_KEY, options=options)


def test_a_rerun_with_another_model_for_one_worker_asks_only_that_worker_live(
    rt: Runtime, server: FakeServer
) -> None:
    model, other = adapter(server, "gpt-test"), adapter(server, "gpt-other")
    try:
        session = rt.new_session()
        outcome = session.run("Compare alpha and beta.", model=model, tools=[lookup_tool()])
        assert "completed" == outcome.status, outcome.error
        recorded = len(server.requests)
        assert 6 == recorded  # router, 2 turns of each worker, the primary

        report = rt.rerun(session.id, models={"analyst": other}, model=model, tools=[lookup_tool()])

        # only the analyst's two turns reached the server, with the other model; the
        # router, the researcher and the primary (whose request did not change) did not
        asked = [r.json() for r in server.requests[recorded:]]
        assert ["gpt-other", "gpt-other"] == [r["model"] for r in asked]
        assert all("topic=beta" in json.dumps(r) for r in asked)
        assert (4, 2) == (report.served_calls, report.live_calls)
        assert "completed" == report.outcome.status, report.outcome.error
        assert {"analyst": [other.name]} == report.changes["models"]

        diff = diff_sides(
            side_of(rt.store, session.id, rt.store.read_session(session.id).active_node_id),
            side_of(
                rt.store, report.session_id, rt.store.read_session(report.session_id).active_node_id
            ),
        )
        # exactly the analyst's two replies differ (the model that gave them)
        assert [("reply", f"analyst · {model.name}"), ("reply", f"analyst · {other.name}")] * 2 == [
            (s.kind, s.what) for pair in diff.differing for s in pair if s is not None
        ]
        assert len(diff.a.nodes) == len(diff.b.nodes) == diff.common_nodes  # same texts
        assert_sound(rt, report.session_id)
    finally:
        model.close()
        other.close()


def test_a_rerun_with_new_instructions_for_one_role_asks_only_that_role_live(
    rt: Runtime,
) -> None:
    team = Team(
        roles=[
            Role("researcher", instructions="Cite sources."),
            Role("writer", instructions="Write plainly."),
        ],
        primary="writer",
    )
    model = scripted(
        route([worker("w1", "researcher", "Find facts")], primary_role="writer"),
        rule("researcher", {"text": "Three facts."}),
        rule("writer", {"text": "The answer."}),
    )
    session = rt.new_session()
    assert "completed" == session.run("Tell me", model=model, team=team).status

    report = rt.rerun(session.id, instructions={"researcher": "Cite nothing."}, model=model)

    assert (2, 1) == (report.served_calls, report.live_calls)  # router and writer served
    assert ["researcher"] == report.changes["instructions"]
    asked = [r for r in sent_requests(rt.store, report.session_id) if r.role == "researcher"]
    assert ["Cite nothing." in r.system for r in asked] == [True]
    started = run_started_of(rt.store.read_run(report.session_id, report.fork_run_id))
    recorded = RunInputs.from_metadata(started.metadata).team
    assert recorded is not None
    assert {"researcher": "Cite nothing.", "writer": "Write plainly."} == {
        r.name: r.instructions for r in recorded.roles
    }
    assert_sound(rt, report.session_id)
    diff = diff_sides(
        side_of(rt.store, session.id, rt.store.read_session(session.id).active_node_id),
        side_of(
            rt.store, report.session_id, rt.store.read_session(report.session_id).active_node_id
        ),
    )
    # the researcher's replies are alike (same script): its system prompt differs
    assert not diff.identical
    [(a, b)] = diff.differing
    assert a is not None and b is not None
    assert ("request", "researcher · system prompt") == (a.kind, a.what) == (b.kind, b.what)
    assert "Cite sources." in a.text and "Cite nothing." in b.text


class BigArgs(pydantic.BaseModel):
    pass


def test_a_fork_reads_its_parents_artifacts_without_copying_them(rt: Runtime) -> None:
    big = FunctionTool("big", lambda args: "x" * (40 * 1024), BigArgs, idempotent=True)
    model = scripted(
        route([worker("w1", "researcher", "Fetch")]),
        rule("researcher", {"tool_calls": [{"name": "big"}]}, {"text": "Fetched."}),
    )
    session = rt.new_session()
    assert "completed" == session.run("Fetch it", model=model, tools=[big]).status
    [artifact] = rt.store.read_artifacts(session.id)
    files = sorted(p.name for p in rt.home.rglob("*") if p.is_file() and "artifacts" in p.parts)

    fork = rt.fork(session.id)

    assert [] == rt.store.read_artifacts(fork.id)  # no copy: a row of the parent's
    assert files == sorted(
        p.name for p in rt.home.rglob("*") if p.is_file() and "artifacts" in p.parts
    )
    found = artifact_tool._find(rt.store, fork.id, artifact.artifact_id)
    assert found is not None
    assert (session.id, artifact.path) == (found.session_id, found.path)
    assert artifact_tool._find(rt.store, rt.new_session().id, artifact.artifact_id) is None
