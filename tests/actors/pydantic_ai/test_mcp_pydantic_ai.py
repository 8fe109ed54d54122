"""A Pydantic AI agent whose toolset is a real MCP server (``MCPToolset`` over stdio and
streamable HTTP: tests/helpers/_mcp_server.py) run as a durable clew run: each MCP call
recorded like a function tool's and each tool list as a call of its own, the server's
``readOnlyHint`` read as idempotent, its tool errors recorded as the framework sees them,
a replay identical without the server, and a process SIGKILLed inside the non-idempotent
call resumed by the in-doubt policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("fastmcp")  # pydantic_ai.mcp's client (pydantic-ai-slim[mcp])

from _mcp_agents import (
    NOTED,
    PROMPT,
    calls,
    events_of,
    free_port,
    http_server,
    killed,
    notes,
    pai_agent,
    tool_results,
)

from actors.pydantic_ai.toolset import LIST_TOOLS
from actors.runtime.runtime import Runtime
from eventlog.blocks import JsonBlock
from eventlog.events import ToolCallFinished, ToolCallStarted, ToolFailed


def _check_recorded(rt: Runtime, sid: str, workdir: Path) -> None:
    every = events_of(rt, sid, ToolCallStarted)
    started = [s for s in every if s.tool_name != LIST_TOOLS]
    assert 3 == len(every) - len(started)  # the tools listed before each model request
    assert [("lookup", True), ("append_note", False)] == [
        (s.tool_name, s.idempotent)
        for s in started  # readOnlyHint; no annotation
    ]
    assert {"topic": "clew"} == started[0].arguments
    assert {
        "lookup": "clew: an event-sourced actor runtime",
        "append_note": "1 notes",
    } == tool_results(rt, sid, LIST_TOOLS)
    assert ["seen clew"] == notes(workdir)
    assert 3 == calls(workdir)


def _check_replay(rt: Runtime, sid: str, workdir: Path, agent: Any) -> None:
    before, asked = notes(workdir), calls(workdir)
    report = rt.replay(sid, agent=agent)
    assert report.identical, report.summary()
    assert before == notes(workdir)  # no MCP tool was called again
    assert asked == calls(workdir)  # nor the model
    assert rt.verify(sid).ok


def test_an_mcp_toolsets_calls_are_recorded_and_replay_calls_no_tool(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        result = pai_agent(tmp_path).run_sync(PROMPT, session=session)
        assert NOTED == result.output
        _check_recorded(rt, session.id, tmp_path)
        (listed, *_) = (e for e in events_of(rt, session.id, ToolCallFinished))
        assert LIST_TOOLS == listed.tool_name
        (definitions,) = listed.content
        assert isinstance(definitions, JsonBlock)
        annotations = {d["name"]: d["metadata"]["annotations"] for d in definitions.data}
        assert {"readOnlyHint": True} == {
            k: v for k, v in (annotations["lookup"] or {}).items() if v is not None
        }
        _check_replay(rt, session.id, tmp_path, pai_agent(tmp_path))
        # The server is not needed to replay: one that cannot start replays identically.
        _check_replay(rt, session.id, tmp_path, pai_agent(tmp_path, command="/no/such/server"))


def test_a_streamable_http_mcp_server_is_recorded_alike(tmp_path: Path) -> None:
    port = free_port()
    server = http_server(tmp_path, port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with Runtime(tmp_path / "home", tmp_path) as rt:
            session = rt.new_session()
            assert NOTED == pai_agent(tmp_path, url=url).run_sync(PROMPT, session=session).output
            _check_recorded(rt, session.id, tmp_path)
            _check_replay(rt, session.id, tmp_path, pai_agent(tmp_path, url=url))
    finally:
        server.terminate()
        server.wait(30)


def test_a_tool_error_of_the_server_is_recorded_as_the_model_retry_it_is(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        agent = pai_agent(tmp_path, topic="nothing")
        answer = agent.run_sync(PROMPT, session=session).output
        assert answer.startswith("lookup failed: ") and "no entry for 'nothing'" in answer
        (failed,) = events_of(rt, session.id, ToolFailed)
        assert ("lookup", "ModelRetry") == (failed.tool_name, failed.error_type)
        assert "no entry for 'nothing'" in failed.message
        assert [] == notes(tmp_path)
        _check_replay(rt, session.id, tmp_path, pai_agent(tmp_path, topic="nothing"))


def test_a_failed_tool_error_is_told_to_the_model_live_and_on_replay(tmp_path: Path) -> None:
    # tool_error_behavior="failed": Pydantic AI's ToolFailed, a failed result the model
    # sees (no retry prompt), not an error that ends the run.
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        agent = pai_agent(tmp_path, topic="nothing", tool_error_behavior="failed")
        answer = agent.run_sync(PROMPT, session=session).output
        assert "no entry for 'nothing'" in answer
        (failed,) = events_of(rt, session.id, ToolFailed)
        assert ("lookup", "ToolFailed") == (failed.tool_name, failed.error_type)
        again = pai_agent(tmp_path, topic="nothing", tool_error_behavior="failed")
        _check_replay(rt, session.id, tmp_path, again)


def test_a_kill_inside_the_note_resumes_without_noting_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    killed("pai", home, sid, tmp_path, MCP_KILL_IN="append_note")
    assert ["seen clew"] == notes(tmp_path)  # the server noted it, the outcome was lost

    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=pai_agent(tmp_path))  # in doubt: ``fail``
        assert "completed" == outcome.status, outcome.error
        assert str(outcome.output).startswith("append_note failed:")
        assert ["seen clew"] == notes(tmp_path)  # not run again
        (told,) = events_of(rt, sid, ToolFailed)
        assert ("append_note", "InDoubt") == (told.tool_name, told.error_type)
        assert 3 == calls(tmp_path)  # the third call is the resume's: none paid twice
        _check_replay(rt, sid, tmp_path, pai_agent(tmp_path))


def test_a_kill_inside_the_note_under_retry_notes_it_again_once(tmp_path: Path) -> None:
    # ``retry`` runs the call again (attempt 2): the server has no idempotency key to
    # deduplicate by, so the note is there twice: at least once, the documented outcome.
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    killed("pai", home, sid, tmp_path, MCP_KILL_IN="append_note", MCP_IN_DOUBT="retry")

    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=pai_agent(tmp_path, in_doubt="retry"))
        assert "completed" == outcome.status, outcome.error
        assert "clew: an event-sourced actor runtime (noted: 2 notes)" == outcome.output
        assert ["seen clew", "seen clew"] == notes(tmp_path)
        types = [e.event_type for e in rt.store.iter_events(sid)]
        assert 1 == types.count("in_doubt_resolved")
        _check_replay(rt, sid, tmp_path, pai_agent(tmp_path, in_doubt="retry"))


def test_a_kill_inside_the_read_only_lookup_runs_it_again_on_resume(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    killed("pai", home, sid, tmp_path, MCP_KILL_IN="lookup")

    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=pai_agent(tmp_path))  # in doubt: idempotent
        assert "completed" == outcome.status, outcome.error
        assert NOTED == outcome.output  # run again, whatever the in-doubt policy
        assert ["seen clew"] == notes(tmp_path)
        assert [] == events_of(rt, sid, ToolFailed)
        _check_replay(rt, sid, tmp_path, pai_agent(tmp_path))


def test_a_kill_before_the_tools_are_listed_lists_them_on_resume(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    killed("pai", home, sid, tmp_path, CLEW_FAULT_KILL_BEFORE_TOOL="1")

    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=pai_agent(tmp_path))
        assert "completed" == outcome.status, outcome.error
        assert NOTED == outcome.output
        _check_recorded(rt, sid, tmp_path)
        _check_replay(rt, sid, tmp_path, pai_agent(tmp_path))
