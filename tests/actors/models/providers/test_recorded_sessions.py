"""Whole sessions through the real adapters against the loopback server: replay and secrets.

Each provider's fake answers by reading the request, like a model would: the router
(its system prompt) gets a JSON plan of two workers, a worker first asks for the
``lookup`` tool and, once the tool result is the last message, replies with text; the
primary replies with the final answer. The tool call ids are the provider's own, so
their round trip (reply → tool → next request) goes over the wire.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import pytest
from _runtime_helpers import sent_requests
from fake_server import FakeServer, Reply, anthropic_reply, openai_reply

import projections
from actors.models.protocol import Model
from actors.models.tools import FunctionTool
from actors.orchestration.prompts import PRIMARY_SYSTEM, ROUTER_SYSTEM_V2, WORKER_SYSTEM
from actors.runtime.runtime import Runtime
from eventlog.events import ModelRequested, ModelResponded, ToolCallStarted

SECRET = "sk-test-SECRET-1234567890"
PROMPT = "Compare alpha and beta."
ANSWER = "alpha and beta each have three facts."
PLAN = {
    "primary_role": "lead",
    "workers": [
        # The marker ``topic=<name>`` is only in the goal, so a worker's request names its
        # own topic even when an upstream summary is quoted in it.
        {"id": "w1", "role": "researcher", "goal": "Look up topic=alpha", "deps": []},
        {"id": "w2", "role": "analyst", "goal": "Look up topic=beta", "deps": ["w1"]},
    ],
    "review": False,
}
TOPICS = ("alpha", "beta")
TOPIC_RE = re.compile(r"topic=(\w+)")
# 1 router + 2 turns for each of 2 workers + 1 primary
CALLS = 6


def topic_of(request: Any) -> str | None:
    """Return the topic of a worker's request (None for the router's and the primary's)."""
    match = TOPIC_RE.search(json.dumps(request))
    return match.group(1) if match else None


def unanswerable(what: str) -> Reply:
    return Reply(status=400, body={"error": {"message": f"fake provider: unexpected {what}"}})


# --- the two fake providers ---------------------------------------------------------------


def openai_session(path: str, request: Any) -> Reply:
    """Answer a Chat Completions request of the session by its system prompt."""
    messages = request["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if system == ROUTER_SYSTEM_V2:  # the router's prompt of flow 2
        return Reply(body=openai_reply(json.dumps(PLAN)))
    if system == WORKER_SYSTEM:
        topic = topic_of(request)
        if topic is None:
            return unanswerable("worker request without its topic")
        if messages[-1]["role"] == "tool":
            return Reply(body=openai_reply(f"{topic} has three facts."))
        call = {
            "id": f"call_{topic}_1",
            "name": "lookup",
            "arguments": json.dumps({"topic": topic}),
        }
        return Reply(body=openai_reply(None, tool_calls=[call], finish_reason="tool_calls"))
    if system == PRIMARY_SYSTEM:
        return Reply(body=openai_reply(ANSWER))
    return unanswerable(f"system prompt {system[:40]!r}")


def openai_round_trip(request: Any) -> tuple[list[str], list[str]]:
    """Return the tool call ids of the request's assistant turns and of its tool results."""
    calls = [c["id"] for m in request["messages"] for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]
    return calls, results


def anthropic_session(path: str, request: Any) -> Reply:
    """Answer a Messages API request of the session by its system prompt."""
    system = request.get("system", "")
    last = request["messages"][-1]["content"]
    if system == ROUTER_SYSTEM_V2:  # the router's prompt of flow 2
        return Reply(body=anthropic_reply({"type": "text", "text": json.dumps(PLAN)}))
    if system == WORKER_SYSTEM:
        topic = topic_of(request)
        if topic is None:
            return unanswerable("worker request without its topic")
        if any(b["type"] == "tool_result" for b in last if isinstance(b, dict)):
            return Reply(
                body=anthropic_reply({"type": "text", "text": f"{topic} has three facts."})
            )
        return Reply(
            body=anthropic_reply(
                {"type": "text", "text": f"Looking up {topic}."},
                {
                    "type": "tool_use",
                    "id": f"toolu_{topic}_1",
                    "name": "lookup",
                    "input": {"topic": topic},
                },
                stop_reason="tool_use",
            )
        )
    if system == PRIMARY_SYSTEM:
        return Reply(body=anthropic_reply({"type": "text", "text": ANSWER}))
    return unanswerable(f"system prompt {system[:40]!r}")


def anthropic_round_trip(request: Any) -> tuple[list[str], list[str]]:
    """Return the ids of the request's tool_use blocks and of its tool_result blocks."""
    blocks = [
        b for m in request["messages"] if isinstance(m["content"], list) for b in m["content"]
    ]
    calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    return calls, results


@dataclass(frozen=True)
class Provider:
    """One adapter under test: its fixture, fake, call-id scheme and key header."""

    fixture: str
    responder: Callable[[str, Any], Reply]
    round_trip: Callable[[Any], tuple[list[str], list[str]]]
    id_prefix: str
    key_header: str
    key_value: Callable[[str], str]

    def __str__(self) -> str:
        return self.fixture


PROVIDERS = [
    Provider(
        fixture="openai_model",
        responder=openai_session,
        round_trip=openai_round_trip,
        id_prefix="call_",
        key_header="authorization",
        key_value=lambda key: f"Bearer {key}",
    ),
    Provider(
        fixture="anthropic_model",
        responder=anthropic_session,
        round_trip=anthropic_round_trip,
        id_prefix="toolu_",
        key_header="x-api-key",
        key_value=lambda key: key,
    ),
]


# --- the session's tool and runtime -----------------------------------------------------


class LookupArgs(pydantic.BaseModel):
    topic: str


def lookup_tool(looked_up: list[str]) -> FunctionTool:
    """Return ``lookup``, which appends each topic it is asked about to ``looked_up``."""

    def lookup(args: LookupArgs) -> dict[str, Any]:
        looked_up.append(args.topic)
        return {"topic": args.topic, "facts": [f"{args.topic} fact {i}" for i in (1, 2, 3)]}

    return FunctionTool("lookup", lookup, LookupArgs, idempotent=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def runtime(tmp_path: Path, project: Path) -> Iterator[Runtime]:
    rt = Runtime(tmp_path / "home", project)
    yield rt
    rt.close()  # the secrets test closes it first; closing twice must be harmless


def model_for(request: pytest.FixtureRequest, provider: Provider, **kw: Any) -> Model:
    make: Callable[..., Model] = request.getfixturevalue(provider.fixture)
    return make(**kw)


# --- tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS, ids=str)
def test_a_session_recorded_through_the_adapter_replays_identically_with_the_server_stopped(
    provider: Provider,
    request: pytest.FixtureRequest,
    server: FakeServer,
    runtime: Runtime,
) -> None:
    server.answer_with(provider.responder)
    model = model_for(request, provider)
    looked_up: list[str] = []
    session = runtime.new_session()

    outcome = session.run(PROMPT, model=model, tools=[lookup_tool(looked_up)])

    assert "completed" == outcome.status, outcome.error
    assert ANSWER == outcome.answer
    assert list(TOPICS) == looked_up
    assert CALLS == len(server.requests)

    # each provider-made tool call id went back to the provider with its result
    ids = [f"{provider.id_prefix}{t}_1" for t in TOPICS]
    for topic, call_id in zip(TOPICS, ids, strict=True):
        [answered] = [
            r.json()
            for r in server.requests
            if topic_of(r.json()) == topic and provider.round_trip(r.json())[1]
        ]
        assert ([call_id], [call_id]) == provider.round_trip(answered)

    events = [e.event for e in runtime.store.iter_events(session.id)]
    assert ids == [e.tool_call_id for e in events if isinstance(e, ToolCallStarted)]
    requested = [e for e in events if isinstance(e, ModelRequested)]
    responded = [e for e in events if isinstance(e, ModelResponded)]
    assert CALLS == len(requested) == len(responded)
    assert {model.name} == {e.model for e in requested}
    assert all(e.request_hash for e in requested)
    assert all(r.messages for r in sent_requests(runtime.store, session.id))

    server.stop()
    seen = len(server.requests)

    report = runtime.replay(session.id)
    # given the adapter itself, now pointing at a dead server, replay must not call it either
    with_adapter = runtime.replay(session.id, model=model, tools=[lookup_tool(looked_up)])

    assert report.identical, report.summary()
    assert with_adapter.identical, with_adapter.summary()
    assert 0 < report.events
    assert seen == len(server.requests)
    assert list(TOPICS) == looked_up  # the tool never ran again
    verified = projections.verify(runtime.store, session.id)
    assert verified.ok, verified.lines()


@pytest.mark.parametrize("provider", PROVIDERS, ids=str)
def test_the_api_key_reaches_the_server_but_no_byte_of_the_home_or_the_task_wals(
    provider: Provider,
    request: pytest.FixtureRequest,
    server: FakeServer,
    runtime: Runtime,
    project: Path,
) -> None:
    server.answer_with(provider.responder)
    model = model_for(request, provider, api_key=SECRET)
    session = runtime.new_session()

    outcome = session.run(PROMPT, model=model, tools=[lookup_tool([])])
    runtime.close()  # checkpoint the SQLite WAL and flush every Task WAL first

    assert "completed" == outcome.status, outcome.error
    header = provider.key_value(SECRET)
    assert CALLS == len(server.requests)
    assert all(header == r.headers[provider.key_header] for r in server.requests)

    home = runtime.home
    sqlite = home / "sessions.sqlite"
    task_wals = [p for p in (project / ".clew" / "tasks").rglob("*") if p.is_file()]
    assert sqlite.is_file()
    assert task_wals, "no Task WAL was written: the scan would prove nothing"
    # The SQLite file and its -wal/-shm, every artifact (a provider session writes none
    # today: only top-level JSON blocks become artifacts, and adapters return text and
    # tool calls), every Task WAL — and anything else either tree holds (locks).
    # Each file is read once; a -wal an actor thread still winding down removes on its
    # last connection's close is gone (its pages are in the database file, read here).
    scanned = {}
    for p in sorted(p for root in (home, project) for p in root.rglob("*") if p.is_file()):
        with contextlib.suppress(FileNotFoundError):
            scanned[p] = p.read_bytes()
    assert sqlite in scanned
    # the recording is plain bytes on disk, so a missing key is a real absence
    assert any(ANSWER.encode() in data for data in scanned.values())

    leaks = [
        (str(p.relative_to(root)), needle)
        for root in (home, project)
        for p, data in scanned.items()
        if p.is_relative_to(root)
        for needle in dict.fromkeys((SECRET, header))
        if needle.encode() in data
    ]
    assert [] == leaks
