"""An Agents SDK agent with a real MCP server (``Agent(mcp_servers=[MCPServerStdio(...)])``,
tests/helpers/_mcp_server.py) run by clew's ``DurableRunner``: each MCP call recorded like a
function tool's, the server's ``readOnlyHint`` read as idempotent, its tool error recorded
as the SDK hands it to the model, each tool list recorded as a call of its own, a replay
identical without the server (the runner connects a server the application did not, when
a step goes live), and a process SIGKILLed inside a call resumed by the in-doubt policy."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from _mcp_agents import (
    NOTED,
    PROMPT,
    calls,
    events_of,
    free_port,
    http_server,
    killed,
    notes,
    sdk_runner,
    sdk_server,
    tool_results,
)

from actors.openai_agents.tools import LIST_TOOLS
from actors.runtime.runtime import Runtime
from actors.runtime.session import Session
from eventlog.events import ToolCallStarted, ToolFailed


def _check_replay(rt: Runtime, sid: str, workdir: Path, **options: Any) -> None:
    before, asked = notes(workdir), calls(workdir)
    # The server is not needed to replay: one that cannot start replays identically.
    server = sdk_server(workdir, command="/no/such/server")
    report = rt.replay(sid, agent=sdk_runner(workdir, server, **options))
    assert report.identical, report.summary()
    assert before == notes(workdir)  # no MCP tool was called again
    assert asked == calls(workdir)  # nor the model
    assert rt.verify(sid).ok


async def _run(workdir: Path, session: Session, **options: Any) -> Any:
    async with sdk_server(workdir) as server:  # connected by the application
        runner = sdk_runner(workdir, server, **options)
        return (await runner.run(PROMPT, session=session)).final_output


def test_the_mcp_servers_calls_are_recorded_and_a_replay_calls_no_tool(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        assert NOTED == asyncio.run(_run(tmp_path, session))
        every = events_of(rt, session.id, ToolCallStarted)
        started = [s for s in every if s.tool_name != LIST_TOOLS]
        assert 3 == len(every) - len(started)  # the tools listed before each model call
        assert [("lookup", True), ("append_note", False)] == [
            (s.tool_name, s.idempotent)
            for s in started  # readOnlyHint; no annotation
        ]
        assert {
            "lookup": {"type": "text", "text": "clew: an event-sourced actor runtime"},
            "append_note": {"type": "text", "text": "1 notes"},
        } == tool_results(rt, session.id, LIST_TOOLS)
        assert ["seen clew"] == notes(tmp_path)
        assert 3 == calls(tmp_path)
        _check_replay(rt, session.id, tmp_path)


def test_a_streamable_http_server_is_recorded_alike(tmp_path: Path) -> None:
    from agents.mcp import MCPServerStreamableHttp  # noqa: PLC0415 - after the skip

    port = free_port()
    proc = http_server(tmp_path, port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with Runtime(tmp_path / "home", tmp_path) as rt:
            session = rt.new_session()
            server = MCPServerStreamableHttp({"url": url}, name="kb")
            result = sdk_runner(tmp_path, server).run_sync(PROMPT, session=session)
            assert NOTED == result.final_output
            assert ["seen clew"] == notes(tmp_path)
            proc.terminate()  # the server is gone: the replay does not need it
            proc.wait(30)
            _check_replay(rt, session.id, tmp_path)
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_runner_connects_servers_the_application_did_not(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        server = sdk_server(tmp_path)
        result = sdk_runner(tmp_path, server).run_sync(PROMPT, session=session)
        assert NOTED == result.final_output
        assert server.session is None  # cleaned up with the run
        assert ["seen clew"] == notes(tmp_path)


def test_a_tool_error_of_the_server_is_recorded_as_the_sdk_tells_the_model(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        answer = asyncio.run(_run(tmp_path, session, topic="nothing"))
        assert "no entry for 'nothing'" in answer
        assert [] == events_of(rt, session.id, ToolFailed)  # an ``isError`` result is an output
        (result,) = tool_results(rt, session.id, LIST_TOOLS).values()
        assert "no entry for 'nothing'" in result["text"]
        assert [] == notes(tmp_path)
        _check_replay(rt, session.id, tmp_path, topic="nothing")


def test_a_kill_inside_the_note_resumes_without_noting_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    killed("sdk", home, sid, tmp_path, MCP_KILL_IN="append_note")
    assert ["seen clew"] == notes(tmp_path)  # the server noted it, the outcome was lost

    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=sdk_runner(tmp_path, sdk_server(tmp_path)))
        assert "completed" == outcome.status, outcome.error
        assert ["seen clew"] == notes(tmp_path)  # ``fail``: not run again, the model told
        (told,) = events_of(rt, sid, ToolFailed)
        assert ("append_note", "InDoubt") == (told.tool_name, told.error_type)
        assert told.message in str(outcome.output)
        assert 3 == calls(tmp_path)  # the third call is the resume's: none paid twice
        _check_replay(rt, sid, tmp_path)


def test_a_kill_inside_the_note_under_retry_notes_it_again_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    killed("sdk", home, sid, tmp_path, MCP_KILL_IN="append_note", MCP_IN_DOUBT="retry")

    with Runtime(home, tmp_path) as rt:
        runner = sdk_runner(tmp_path, sdk_server(tmp_path), in_doubt="retry")
        outcome = rt.resume(sid, agent=runner)
        assert "completed" == outcome.status, outcome.error
        assert "clew: an event-sourced actor runtime (noted: 2 notes)" == outcome.output
        assert ["seen clew", "seen clew"] == notes(tmp_path)  # at least once: no key
        _check_replay(rt, sid, tmp_path, in_doubt="retry")


def test_a_kill_inside_the_read_only_lookup_runs_it_again_on_resume(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    killed("sdk", home, sid, tmp_path, MCP_KILL_IN="lookup")

    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=sdk_runner(tmp_path, sdk_server(tmp_path)))
        assert "completed" == outcome.status, outcome.error
        assert NOTED == outcome.output  # idempotent: run again, whatever the policy
        assert ["seen clew"] == notes(tmp_path)
        assert [] == events_of(rt, sid, ToolFailed)
        _check_replay(rt, sid, tmp_path)
