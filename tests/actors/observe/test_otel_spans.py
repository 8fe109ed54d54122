"""OpenTelemetry spans of a run match its event log: tree, times, tokens, statuses.

Every test hands the runtime its own SDK ``TracerProvider`` with an in-memory exporter
(``tracing=provider``): the global provider of this process is never set, so no other
test starts tracing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import pytest
from _runtime_helpers import route, rule, scripted, worker
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.tools import FunctionTool
from actors.observe.otel import RunSpans, time_ns
from actors.runtime.runtime import Runtime
from eventlog.events import (
    AgentCreated,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    RunEnded,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)
from eventlog.ids import is_main_run, session_of
from eventlog.records import StoredEvent

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Traced:
    provider: TracerProvider
    exporter: InMemorySpanExporter

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


@pytest.fixture
def traced() -> Iterator[Traced]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Traced(provider, exporter)
    provider.shutdown()


# --- the span tree the log implies, and the one exported ------------------------------------


@dataclass(frozen=True, order=True)
class Shape:
    """One span reduced to what the log determines."""

    key: Key
    parent: Key | None
    name: str
    start: int
    end: int
    error: bool
    tokens: tuple[int, int] | None = None


def _ends(events: Sequence[StoredEvent]) -> dict[Key, StoredEvent]:
    ends: dict[Key, StoredEvent] = {}
    for e in events:
        match e.event:
            case RunEnded(run_id=run_id):
                ends["run", run_id] = e
            case ModelResponded() | ModelFailed() as answer:
                ends["chat", e.run_id, answer.call_index, answer.attempt] = e
            case ToolCallFinished() | ToolFailed() as outcome:
                ends["tool", e.run_id, outcome.tool_call_id] = e
    return ends


def expected_shapes(events: Sequence[StoredEvent]) -> list[Shape]:
    """The spans a complete log implies: run → agent → chat / tool, times as recorded."""
    ends = _ends(events)
    created = {e.event.agent_id: e.event for e in events if isinstance(e.event, AgentCreated)}
    shapes: list[Shape] = []

    def add(key: Key, end_key: Key, parent: Key | None, name: str, e: StoredEvent) -> None:
        end = ends[end_key]
        error = isinstance(end.event, ModelFailed | ToolFailed) or (
            isinstance(end.event, ToolCallFinished) and end.event.is_error
        )
        error = error or (isinstance(end.event, RunEnded) and end.event.status == "failed")
        tokens = None
        if isinstance(end.event, ModelResponded):
            tokens = (end.event.usage.input_tokens, end.event.usage.output_tokens)
        start, stop = time_ns(e.created_at), time_ns(end.created_at)
        shapes.append(Shape(key, parent, name, start, stop, error, tokens))

    for e in events:
        match e.event:
            case RunStarted(run_id=run_id, agent_id=agent_id):
                if is_main_run(session_of(run_id), agent_id):
                    add(("run", run_id), ("run", run_id), None, "clew.run", e)
                    add(
                        ("agent", run_id), ("run", run_id), ("run", run_id), "invoke_agent brain", e
                    )
                else:
                    agent = created[agent_id]
                    parent = ("agent", agent.created_by_run_id)
                    add(("agent", run_id), ("run", run_id), parent, f"invoke_agent {agent.role}", e)
            case ModelRequested(call_index=i, attempt=a, model=model):
                key = ("chat", e.run_id, i, a)
                add(key, key, ("agent", e.run_id), f"chat {model}", e)
            case ToolCallStarted(tool_call_id=call_id, tool_name=tool):
                key = ("tool", e.run_id, call_id)
                add(key, key, ("agent", e.run_id), f"execute_tool {tool}", e)
    return sorted(shapes)


def key_of(span: ReadableSpan) -> Key:
    a = span.attributes or {}
    match a.get("gen_ai.operation.name"):
        case "chat":
            return ("chat", a["clew.run_id"], a["clew.call_index"], a["clew.attempt"])
        case "execute_tool":
            return ("tool", a["clew.run_id"], a["gen_ai.tool.call.id"])
        case "invoke_agent":
            return ("agent", a["clew.run_id"])
    return ("run", a["clew.run_id"])


def actual_shapes(spans: Sequence[ReadableSpan]) -> list[Shape]:
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    shapes = []
    for s in spans:
        a = s.attributes or {}
        parent = key_of(by_id[s.parent.span_id]) if s.parent is not None else None
        tokens = None
        if "gen_ai.usage.input_tokens" in a:
            tokens = (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"])
        assert s.start_time is not None and s.end_time is not None
        error = s.status.status_code is StatusCode.ERROR
        shapes.append(Shape(key_of(s), parent, s.name, s.start_time, s.end_time, error, tokens))
    return sorted(shapes)


def assert_one_trace_per_main_run(spans: Sequence[ReadableSpan]) -> None:
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    for s in spans:
        if s.parent is not None:
            assert s.parent.trace_id == by_id[s.parent.span_id].context.trace_id
    roots = [s for s in spans if s.parent is None]
    assert {"clew.run"} == {s.name for s in roots}
    assert len(roots) == len({s.context.trace_id for s in spans if s.context is not None})


def assert_replays_and_verifies(rt: Runtime, sid: str) -> None:
    report = rt.replay(sid)
    assert report.identical, report.summary()
    assert rt.verify(sid).ok


# --- a live demo team -------------------------------------------------------------------------


def test_the_span_tree_of_a_demo_session_matches_its_event_log(
    tmp_path: Path, traced: Traced
) -> None:
    project = tmp_path / "project"
    with Runtime(tmp_path / "home", project, tracing=traced.provider) as rt:
        session = rt.new_session()
        first = session.run(DEMO_PROMPT, model=demo_model(4), tools=demo_tools(project))
        second = session.run(
            "And once more, briefly.", model=demo_model(2), tools=demo_tools(project)
        )
        assert ("completed", "completed") == (first.status, second.status)
        events = rt.store.read_events(session.id)
        spans = traced.spans()  # every run ended: each span is exported by now

        assert expected_shapes(events) == actual_shapes(spans)
        assert_one_trace_per_main_run(spans)
        assert 2 == len([s for s in spans if s.name == "clew.run"])
        assert 6 * 2 == len([s for s in spans if s.name.startswith("execute_tool ")])
        assert_replays_and_verifies(rt, session.id)
        assert len(spans) == len(traced.spans())  # a replay writes nothing: no span


def test_the_spans_carry_the_genai_attributes_and_the_recorded_ids(
    tmp_path: Path, traced: Traced
) -> None:
    project = tmp_path / "project"
    with Runtime(tmp_path / "home", project, tracing=traced.provider) as rt:
        session = rt.new_session()
        session.run(DEMO_PROMPT, model=demo_model(1), tools=demo_tools(project))
        events = {e.seq: e for e in rt.store.read_events(session.id)}
        spans = traced.spans()

    for s in spans:
        a = dict(s.attributes or {})
        opened = events[a["clew.seq"]]
        assert (session.id, opened.run_id) == (a["clew.session_id"], a["clew.run_id"])
        assert time_ns(opened.created_at) == s.start_time
    chat = next(s for s in spans if s.name.startswith("chat "))
    assert {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "scripted:demo",
    }.items() <= dict(chat.attributes or {}).items()
    tool = next(s for s in spans if s.name == "execute_tool lookup")
    started = events[tool.attributes["clew.seq"]].event
    assert isinstance(started, ToolCallStarted)
    assert ("lookup", started.tool_call_id) == (
        tool.attributes["gen_ai.tool.name"],
        tool.attributes["gen_ai.tool.call.id"],
    )
    agent = next(s for s in spans if s.name == "invoke_agent researcher")
    assert "researcher" == agent.attributes["gen_ai.agent.name"]
    assert "invoke_agent" == agent.attributes["gen_ai.operation.name"]


class NoArgs(pydantic.BaseModel):
    pass


def test_a_failed_tool_and_a_failed_model_call_are_error_spans(
    tmp_path: Path, traced: Traced
) -> None:
    def boom(_args: NoArgs) -> str:
        raise RuntimeError("the tool broke")

    model = scripted(
        route([worker("w1", "breaker", "Break"), worker("w2", "flaky", "Fail")]),
        rule("breaker", {"tool_calls": [{"name": "boom"}]}, {"text": "done"}),
        rule("flaky", {"error": "the model is down", "status": 503}),
    )
    with Runtime(tmp_path / "home", tmp_path / "project", tracing=traced.provider) as rt:
        session = rt.new_session()
        session.run("Break things.", model=model, tools=[FunctionTool("boom", boom, NoArgs)])
        events = rt.store.read_events(session.id)
        spans = traced.spans()
        assert_replays_and_verifies(rt, session.id)

    assert expected_shapes(events) == actual_shapes(spans)
    errors = {
        s.name: (s.status.description, (s.attributes or {}).get("error.type"))
        for s in spans
        if s.status.status_code is StatusCode.ERROR
    }
    assert {
        "execute_tool boom": ("the tool broke", "RuntimeError"),
        "chat scripted": ("the model is down", "ModelError"),
        "invoke_agent flaky": ("the model is down", "ModelError"),
    } == errors


# --- a run that does not end ------------------------------------------------------------------


def test_an_interrupted_run_keeps_its_spans_open_until_close_and_a_resume_traces_the_rest(
    tmp_path: Path, traced: Traced
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"

    def fill_the_disk(rt: Runtime) -> None:
        conn = rt.store._connections.writer()
        conn.pragma("max_page_count", conn.pragma("page_count"))

    def model() -> Any:
        return scripted(
            route([worker("w1", "filler", "Fill"), worker("w2", "other", "Other")]),
            rule("filler", {"tool_calls": [{"name": "arm"}]}, {"text": "filled"}),
            rule("other", {"text": "other done"}),
        )

    def arm(fill: Any) -> FunctionTool:
        def body(_args: NoArgs) -> str:
            fill()
            return "armed"

        return FunctionTool("arm", body, NoArgs, idempotent=True)

    with Runtime(home, project, tracing=traced.provider) as rt:
        session = rt.new_session()
        out = session.run("Fill the disk.", model=model(), tools=[arm(lambda: fill_the_disk(rt))])
        assert "interrupted" == out.status
        assert [] == [s for s in traced.spans() if s.name == "clew.run"]  # still open
        before = len(traced.spans())
    interrupted = traced.spans()[before:]  # ended by close
    with Runtime(home, project) as rt:
        events = rt.store.read_events(session.id)

    # A run lasts until its last event, or the last event of a worker run it created.
    last = {e.run_id: time_ns(e.created_at) for e in events}
    for e in events:
        if isinstance(e.event, AgentCreated) and e.event.created_by_run_id in last:
            creator = e.event.created_by_run_id
            last[creator] = max(last[creator], last[e.run_id])
    assert interrupted  # the main run at least
    for s in interrupted:
        a = s.attributes or {}
        assert (True, StatusCode.ERROR) == (a["clew.interrupted"], s.status.status_code)
        assert last[a["clew.run_id"]] == s.end_time
    unended = {e.event.run_id for e in events if isinstance(e.event, RunStarted)} - {
        e.event.run_id for e in events if isinstance(e.event, RunEnded)
    }
    assert unended == {
        (s.attributes or {})["clew.run_id"]
        for s in interrupted
        if s.name.startswith("invoke_agent")
    }

    traced.exporter.clear()
    with Runtime(home, project, tracing=traced.provider) as rt:
        resumed = rt.resume(session.id, model=model(), tools=[arm(lambda: None)])
        assert "completed" == resumed.status
        spans = traced.spans()
        assert_replays_and_verifies(rt, session.id)

    assert_one_trace_per_main_run(spans)
    (root,) = [s for s in spans if s.name == "clew.run"]
    assert (True, "completed") == (
        root.attributes["clew.resumed"],
        root.attributes["clew.run.status"],
    )
    assert [] == [s for s in spans if (s.attributes or {}).get("clew.interrupted")]


# --- any point of a log -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_events(tmp_path_factory: pytest.TempPathFactory) -> list[StoredEvent]:
    root = tmp_path_factory.mktemp("demo")
    with Runtime(root / "home", root / "project") as rt:
        session = rt.new_session()
        session.run(DEMO_PROMPT, model=demo_model(3), tools=demo_tools(root / "project"))
        return rt.store.read_events(session.id)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_listener_started_anywhere_in_a_log_leaves_a_whole_tree_of_ended_spans(
    demo_events: list[StoredEvent], data: st.DataObject
) -> None:
    """From any first event to any last one (a resume, then a crash), in any batches."""
    n = len(demo_events)
    start = data.draw(st.integers(0, n - 1), label="start")
    stop = data.draw(st.integers(start + 1, n), label="stop")
    part = demo_events[start:stop]
    cuts = (
        sorted(data.draw(st.sets(st.integers(1, len(part) - 1)), label="cuts"))
        if len(part) > 1
        else []
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = RunSpans(provider.get_tracer("test"))

    for a, b in zip([0, *cuts], [*cuts, len(part)], strict=True):
        spans.on_commit(part[a:b])
    spans.close()

    out = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in out if s.context is not None}
    assert [] == [s.name for s in out if s.parent is not None and s.parent.span_id not in by_id]
    assert [] == [s.name for s in out if s.end_time < s.start_time]
    assert [] == [
        s.name
        for s in out
        if s.parent is not None and by_id[s.parent.span_id].end_time < s.end_time
    ]
    keys = [key_of(s) for s in out]
    assert len(keys) == len(set(keys))  # one span per run, call attempt and tool call
    runs = {e.run_id for e in part if e.run_id and not isinstance(e.event, AgentCreated)}
    agents = {k[1] for k in keys if k[0] == "agent"}
    assert runs <= agents
    assert agents - runs <= {demo_events[1].run_id}  # the main run, opened for its workers
    if (start, stop) == (0, n):
        assert expected_shapes(part) == actual_shapes(out)
    provider.shutdown()
