"""Model requests recorded by reference: exact rebuilds from the log, texts stored once,
a request's size independent of the conversation's length, and old recordings untouched."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pydantic
import pytest

from actors import Role, Runtime, ScriptedModel, Team, tool
from actors.models.protocol import request_hash
from actors.replay.requests import StoreRequests, content_hash
from eventlog.clock import ManualClock
from eventlog.codec import decode_event, encode_event
from eventlog.events import ContentStored, ModelRequested
from eventlog.records import StoredEvent

TURNS = 12


class EchoArgs(pydantic.BaseModel):
    text: str


@tool(EchoArgs, idempotent=True)
def echo(args: EchoArgs) -> str:
    """Return the text."""
    return args.text


def _model() -> ScriptedModel:
    """Router: no workers; the lead calls ``echo`` once, then answers, every run.

    A reply is chosen by the count of assistant messages in the request: run k's lead
    sees 3k earlier ones (plan, tool call, answer per run) and its run's plan."""
    lead: list[dict[str, Any]] = []
    for i in range(TURNS):
        lead += [
            {"text": "unused"},
            {"tool_calls": [{"name": "echo", "arguments": {"text": f"note {i}"}}]},
            {"text": f"answer {i}: " + "words " * 40},
        ]
    plan = {"primary_role": "lead", "workers": []}
    return ScriptedModel(
        {
            "rules": [
                {"role": "router", "replies": [{"json": plan}]},
                {"role": "lead", "replies": lead},
            ]
        }
    )


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, str]]:
    """One session of ``TURNS`` runs, each a tool turn and an answer, in two processes'
    worth of runtimes (the second opens the session the first recorded)."""
    tmp = tmp_path_factory.mktemp("chat")
    model = _model()
    with Runtime(tmp / "home", tmp / "proj", clock=ManualClock()) as rt:
        session = rt.new_session()
        sid = session.id
        for i in range(TURNS // 2):
            assert "completed" == session.run(f"question {i}", model=model, tools=[echo]).status
    rt = Runtime(tmp / "home", tmp / "proj", clock=ManualClock(start="2026-06-13T00:00:00+00:00"))
    try:
        session = rt.session(sid)
        for i in range(TURNS // 2, TURNS):
            assert "completed" == session.run(f"question {i}", model=model, tools=[echo]).status
        yield rt, sid
    finally:
        rt.close()


def _requested(rt: Runtime, sid: str) -> list[StoredEvent]:
    return [e for e in rt.store.iter_events(sid) if isinstance(e.event, ModelRequested)]


def test_every_request_is_recorded_by_reference_and_rebuilds_to_its_hash(
    chat: tuple[Runtime, str],
) -> None:
    rt, sid = chat
    log = StoreRequests(rt.store, sid)
    requested = _requested(rt, sid)
    assert len(requested) == 3 * TURNS  # a router call and two lead calls per run
    for stored in requested:
        ev = stored.event
        assert isinstance(ev, ModelRequested)
        assert ev.system_ref and ev.system == ""
        if ev.role == "lead":  # a conversation's call: its messages by reference
            assert (ev.messages, ev.tip is not None, ev.tools) == ([], True, ["echo"])
            assert ev.message_count is not None and ev.message_count >= 1
        else:  # the router's own short messages stay by value
            assert ev.message_count is None and ev.messages
        rebuilt = log.request(ev)
        assert ev.request_hash == request_hash(rebuilt), (stored.seq, ev.role)
        assert ev.message_count in (None, len(rebuilt.messages))
    assert rt.replay(sid).identical


def test_each_system_prompt_and_tool_set_is_stored_once_per_session(
    chat: tuple[Runtime, str],
) -> None:
    rt, sid = chat
    stored = [
        (e.run_id, e.event) for e in rt.store.iter_events(sid) if isinstance(e.event, ContentStored)
    ]
    assert all(run_id is None for run_id, _ in stored)  # session-level, never compared
    hashes = [ev.content_hash for _, ev in stored]
    assert len(hashes) == len(set(hashes))  # once, though two runtimes recorded the runs
    assert all(content_hash(ev.text) == ev.content_hash for _, ev in stored)
    refs = set()
    for e in _requested(rt, sid):
        assert isinstance(e.event, ModelRequested)
        refs |= {e.event.system_ref, e.event.tools_ref} - {""}
        # a text is in the log before the first request that refers to it
    assert refs == set(hashes)
    first_use = {
        r: min(
            e.seq
            for e in _requested(rt, sid)
            if r in (e.event.system_ref, e.event.tools_ref)  # type: ignore[union-attr]
        )
        for r in refs
    }
    seq_of = {e.event.content_hash: e.seq for e in rt.store.iter_events(sid)
              if isinstance(e.event, ContentStored)}  # fmt: skip
    assert all(seq_of[r] < first_use[r] for r in refs)


def test_a_request_s_size_does_not_grow_with_the_conversation(
    chat: tuple[Runtime, str],
) -> None:
    rt, sid = chat
    sizes = [
        len(encode_event(e.event))
        for e in _requested(rt, sid)
        if isinstance(e.event, ModelRequested) and e.event.role == "lead"
    ]
    log = StoreRequests(rt.store, sid)
    last = _requested(rt, sid)[-1].event
    assert isinstance(last, ModelRequested)
    by_value = len(msgspec.json.encode(log.request(last)))
    # the last request holds the whole conversation: recorded by value it would be large
    assert by_value > 10 * max(sizes)
    assert max(sizes) - min(sizes) < 40  # the ids and counts get longer, nothing else


def test_a_v1_request_decodes_as_its_by_value_form() -> None:
    v1 = (
        b'{"event_type":"model_requested","call_index":1,"model":"m","request_hash":"ab",'
        b'"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],'
        b'"tools":["t"],"system":"be brief"}'
    )
    ev = decode_event(v1)
    assert isinstance(ev, ModelRequested)
    assert (2, None, None, "be brief") == (
        ev.schema_version,
        ev.message_count,
        ev.tip,
        ev.system,
    )
    assert "hi" == ev.messages[0].content[0].text  # type: ignore[union-attr]


def test_a_changed_system_prompt_in_a_by_reference_request_shows_its_text(
    chat: tuple[Runtime, str],
) -> None:
    rt, sid = chat
    team = Team(roles=[Role("lead", instructions="Answer in French.")], primary="lead")
    report = rt.replay(sid, model=_model(), tools=[echo], team=team)
    first = report.first_divergence
    assert first is not None and first.event_type == "model_requested"
    assert "system" == first.field, report.summary()
    # the router is the first to see the new team: its prompt's text, as a unified diff
    assert first.diff[0].startswith("@@")
    assert "+The primary role, who writes the answer, is lead." in first.diff
