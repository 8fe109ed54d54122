"""Large tool results: stored once as an artifact, referenced with a preview, paged by
``read_artifact``; the run replays and verifies."""

from __future__ import annotations

import hashlib
from typing import Any

import pydantic
import pytest
from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.models.tools import FunctionTool, ToolRegistry
from actors.orchestration.artifact_tool import READ_ARTIFACT, ReadArtifactArgs, ReadArtifactTool
from actors.orchestration.env import SessionEnv
from actors.runtime.runtime import Runtime
from eventlog.blocks import ArtifactRefBlock, TextBlock, ToolResultBlock
from eventlog.events import (
    ArtifactCreated,
    ModelRequested,
    NodeAppended,
    ToolCallFinished,
)
from eventlog.ids import artifact_id_for
from projections.verify import verify

LINE = "row {i:05d}: the quick brown fox jumps over the lazy dog\n"
BIG = "".join(LINE.format(i=i) for i in range(2000))  # ~112 KB: over the 16 KiB threshold


class NoArgs(pydantic.BaseModel):
    pass


def dump_tool() -> FunctionTool:
    return FunctionTool("dump", lambda args: BIG, NoArgs, description="Dump the table.")


def reader_model(*later: dict[str, Any]) -> Any:
    return scripted(
        route([worker("w1", "reader", "Read the table")]),
        rule("reader", {"tool_calls": [{"name": "dump"}]}, *later, {"text": "Read it."}),
    )


def test_a_large_tool_result_is_stored_once_and_the_prompt_gets_a_reference(
    rt: Runtime,
) -> None:
    s = run_session(rt, "Read the table.", reader_model(), tools=[dump_tool()])

    run_id = s.worker_run("w1")
    (created,) = s.of(ArtifactCreated, run_id)
    (finished,) = s.of(ToolCallFinished, run_id)
    (ref,) = finished.content
    assert isinstance(ref, ArtifactRefBlock)
    assert (created.artifact_id, finished.tool_call_id) == (ref.artifact_id, created.tool_call_id)
    (row,) = rt.store.read_artifacts(s.sid)
    assert (finished.tool_call_id, len(BIG)) == (row.tool_call_id, row.size_bytes)
    assert BIG.encode() == rt.store.artifacts.read(row.path)
    # The node and the next request carry the reference with a bounded preview.
    tool_nodes = [n for n in s.of(NodeAppended, run_id) if n.node.role == "tool"]
    (result,) = tool_nodes[0].node.content
    assert isinstance(result, ToolResultBlock) and [ref] == result.content
    second = s.requests(run_id)[1]
    assert BIG[:200] in ref.summary and len(ref.summary) < 1500
    (sent,) = second.messages[-1].content
    assert isinstance(sent, ToolResultBlock) and [ref] == sent.content
    # The database never holds the text: not in an event, not in a node row.
    raw = (rt.home / "sessions.sqlite").read_bytes()
    assert LINE.format(i=1999).encode() not in raw
    # Once its context holds the reference, the agent is offered read_artifact.
    assert READ_ARTIFACT not in s.of(ModelRequested, run_id)[0].tools
    assert READ_ARTIFACT in [t.name for t in second.tools]


def test_read_artifact_pages_through_a_result_by_offset(rt: Runtime) -> None:
    session = rt.new_session()
    art = artifact_id_for(session.id, hashlib.sha256(BIG.encode()).hexdigest())
    size = len(LINE.format(i=0))
    page = {"artifact_id": art, "offset": size, "length": size}
    model = reader_model({"tool_calls": [{"name": READ_ARTIFACT, "arguments": page}]})

    out = session.run("Read the table.", model=model, tools=[dump_tool()])

    assert "completed" == out.status
    events = rt.store.read_events(session.id)
    (read,) = [
        e.event
        for e in events
        if isinstance(e.event, ToolCallFinished) and e.event.tool_name == READ_ARTIFACT
    ]
    (text,) = read.content
    assert isinstance(text, TextBlock)
    head, body = text.text.split("\n", 1)
    assert LINE.format(i=1) == body
    assert f"bytes {size}–{2 * size} of {len(BIG)}; the next page starts" in head
    assert rt.replay(session.id).identical
    assert verify(rt.store, session.id).ok


def test_read_artifact_refuses_an_artifact_outside_the_agent_s_context(rt: Runtime) -> None:
    env = SessionEnv(
        session_id=rt.new_session().id,
        store=rt.store,
        writer=None,
        clock=rt.clock,
        models={},
        tools=ToolRegistry(),
        project_dir=rt.project_dir,
    )
    tool = ReadArtifactTool(env, frozenset({"art_mine"}))

    with pytest.raises(ValueError, match="no artifact 'art_other' is referenced in your context"):
        tool.call(ReadArtifactArgs(artifact_id="art_other"))
