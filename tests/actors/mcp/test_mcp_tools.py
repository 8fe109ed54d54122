"""MCP tools: a real MCP server (tests/helpers/_mcp_server.py, written with the SDK) over
stdio and streamable HTTP; its tools as clew tools in a real runtime session, recorded,
and replayed with the server gone."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _processes import child_env
from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.errors import McpToolFailed, McpUnavailable
from actors.mcp import StdioServer, mcp_tools
from actors.recording.inputs import RunInputs
from actors.runtime.runtime import Runtime
from eventlog.events import RunStarted, ToolCallFinished, ToolCallStarted, ToolFailed

if TYPE_CHECKING:
    from actors.mcp import McpTools

pytest.importorskip("mcp")

SERVER = Path(__file__).resolve().parents[2] / "helpers" / "_mcp_server.py"


def stdio_server(notes: Path) -> StdioServer:
    """The test server as a child over stdio, importing this checkout (``child_env``)."""
    env = child_env(NOTES_FILE=str(notes))
    return StdioServer(sys.executable, [str(SERVER)], env=env)


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "notes.txt"


@pytest.fixture(scope="module")
def tools(notes: Path) -> Iterator[McpTools]:
    """One server for the module's tests (starting one costs seconds on a busy machine)."""
    with mcp_tools(stdio_server(notes), start_timeout_s=120) as ts:
        yield ts


def test_the_servers_tools_become_clew_tools_with_their_schemas(tools: McpTools) -> None:
    by_name = {t.name: t for t in tools}

    assert ["append_note", "lookup"] == sorted(by_name)
    lookup, append = by_name["lookup"], by_name["append_note"]
    assert "Look a topic up in a tiny encyclopedia." == lookup.description
    assert ["topic"] == lookup.spec.parameters["required"]
    assert "string" == lookup.spec.parameters["properties"]["topic"]["type"]
    assert {"text", "times"} == set(append.spec.parameters["properties"])
    assert (True, False) == (lookup.idempotent, append.idempotent)  # readOnlyHint, none


def test_a_call_returns_the_text_and_an_error_result_is_a_tool_error(
    tools: McpTools,
) -> None:
    assert "mcp: the model context protocol" == tools.call("lookup", {"topic": "mcp"})
    with pytest.raises(McpToolFailed, match="no entry for 'nothing'"):
        tools.call("lookup", {"topic": "nothing"})
    with pytest.raises(McpToolFailed, match="topic"):  # the server checks the schema
        tools.call("lookup", {})


def test_a_session_records_the_calls_and_replays_without_the_server(
    tmp_path: Path, notes: Path
) -> None:
    notes.unlink(missing_ok=True)
    model = scripted(
        route([worker("w1", "researcher", "Look up clew, note it")]),
        rule(
            "researcher",
            {
                "tool_calls": [
                    {"name": "lookup", "arguments": {"topic": "clew"}},
                    {"name": "append_note", "arguments": {"text": "seen clew", "times": 2}},
                    {"name": "lookup", "arguments": {"topic": "nothing"}},
                ]
            },
            {"text": "clew is an event-sourced actor runtime"},
        ),
    )
    home, project = tmp_path / "home", tmp_path / "project"
    with mcp_tools(stdio_server(notes), start_timeout_s=120) as ts, Runtime(home, project) as rt:
        done = run_session(rt, "What is clew?", model, tools=ts)  # asserts replay + verify
    assert "completed" == done.outcome.status
    (brain,) = [r for r in done.of(RunStarted) if r.run_id == done.brain_run]
    recorded = {t.name: t for t in RunInputs.from_metadata(brain.metadata).tools}
    assert {t.name: t.spec.parameters for t in ts} == {
        n: recorded[n].parameters for n in ts.names()
    }
    assert (True, False) == (recorded["lookup"].idempotent, recorded["append_note"].idempotent)
    started = done.of(ToolCallStarted)
    assert [("lookup", True), ("append_note", False), ("lookup", True)] == [
        (s.tool_name, s.idempotent) for s in started
    ]
    finished = {f.tool_name: f for f in done.of(ToolCallFinished) if not f.is_error}
    assert "clew: an event-sourced actor runtime" == finished["lookup"].content[0].text  # type: ignore[union-attr]
    assert "2 notes" == finished["append_note"].content[0].text  # type: ignore[union-attr]
    (failed,) = done.of(ToolFailed)
    assert ("McpToolFailed", True) == (
        failed.error_type,
        "no entry for 'nothing'" in failed.message,
    )
    assert ["seen clew", "seen clew"] == notes.read_text().splitlines()

    # The server is gone (its process ended with the tool set): a new runtime replays.
    with Runtime(home, project) as again:
        report = again.replay(done.sid)
        assert report.identical, report.summary()
        assert again.verify(done.sid).ok
    assert ["seen clew", "seen clew"] == notes.read_text().splitlines()  # never ran again


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_listening(port: int, proc: subprocess.Popen[bytes], limit_s: float = 120.0) -> None:
    """Until the server accepts connections (or exits: then fail with its output)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the HTTP MCP server exited: {proc.communicate()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"the HTTP MCP server did not listen within {limit_s:g} s")


def test_a_streamable_http_server_s_tools_are_called_over_http_until_it_stops(
    tmp_path: Path,
) -> None:
    port = free_port()
    notes = tmp_path / "notes.txt"
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        env=child_env(NOTES_FILE=str(notes)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, proc)
        with mcp_tools(f"http://127.0.0.1:{port}/mcp", start_timeout_s=60, prefix="kb_") as ts:
            assert ["kb_lookup", "kb_append_note"] == ts.names()
            assert [True, False] == [t.idempotent for t in ts]
            assert "clew: an event-sourced actor runtime" == ts.call("lookup", {"topic": "clew"})
            assert "1 notes" == ts[1].call(ts[1].args_model.model_validate({"text": "x"}))
            proc.terminate()  # the server goes away: a call fails at once, no hang
            proc.wait(30)
            with pytest.raises(McpToolFailed, match="failed 'lookup'"):
                ts.call("lookup", {"topic": "clew"})
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_command_that_does_not_exist_is_refused_in_one_line() -> None:
    with pytest.raises(McpUnavailable) as caught:
        mcp_tools(StdioServer("/no/such/mcp-server", ["--x"]), start_timeout_s=30)

    message = str(caught.value)
    assert "/no/such/mcp-server --x" in message and "\n" not in message


def test_a_server_that_exits_at_once_is_refused() -> None:
    with pytest.raises(McpUnavailable, match=r"is unavailable|did not start"):
        mcp_tools(StdioServer(sys.executable, ["-c", "pass"]), start_timeout_s=30)


def test_an_unreachable_url_is_refused_within_the_start_timeout() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
    with pytest.raises(McpUnavailable) as caught:
        mcp_tools(url, start_timeout_s=10)

    assert url in str(caught.value) and "\n" not in str(caught.value)


def test_a_closed_tool_set_refuses_calls(notes: Path) -> None:
    ts = mcp_tools(stdio_server(notes), start_timeout_s=120)
    ts.close()
    ts.close()  # twice is fine

    with pytest.raises(McpToolFailed, match="closed"):
        ts.call("lookup", {"topic": "clew"})


def test_a_server_that_never_answers_is_refused_at_the_start_timeout() -> None:
    silent = StdioServer(sys.executable, ["-c", "import time; time.sleep(600)"], label="silent")

    with pytest.raises(McpUnavailable, match=r"'silent' did not start .* within 3 s"):
        mcp_tools(silent, start_timeout_s=3)


def test_idempotent_iff_annotated_read_only_or_idempotent() -> None:
    from mcp import types  # noqa: PLC0415 - the optional extra

    from actors.mcp.tools import is_idempotent  # noqa: PLC0415 - imports the SDK

    def listed(**hints: bool) -> types.Tool:
        notes = types.ToolAnnotations(**hints) if hints else None
        return types.Tool(name="t", inputSchema={"type": "object"}, annotations=notes)

    assert is_idempotent(listed(readOnlyHint=True))
    assert is_idempotent(listed(idempotentHint=True))
    assert is_idempotent(listed(readOnlyHint=False, idempotentHint=True))
    assert not is_idempotent(listed())
    assert not is_idempotent(listed(readOnlyHint=False, destructiveHint=False))
    assert not is_idempotent(listed(openWorldHint=True))


def test_the_output_of_a_result_without_text() -> None:
    from mcp import types  # noqa: PLC0415 - the optional extra

    from actors.mcp.tools import output_of  # noqa: PLC0415 - imports the SDK

    text = types.TextContent(type="text", text="a")
    image = types.ImageContent(type="image", data="AAAA", mimeType="image/png")

    assert "a\nb" == output_of(
        "t", types.CallToolResult(content=[text, text.model_copy(update={"text": "b"})])
    )
    assert {"n": 1} == output_of("t", types.CallToolResult(content=[], structuredContent={"n": 1}))
    assert "" == output_of("t", types.CallToolResult(content=[]))
    (block,) = output_of("t", types.CallToolResult(content=[image]))  # type: ignore[misc]
    assert {"type": "image", "data": "AAAA", "mimeType": "image/png"} == block
    with pytest.raises(McpToolFailed, match="reported an error"):
        output_of("t", types.CallToolResult(content=[], isError=True))


def test_an_image_beside_text_in_a_result_is_kept_after_the_text() -> None:
    from mcp import types  # noqa: PLC0415 - the optional extra

    from actors.mcp.tools import output_of  # noqa: PLC0415 - imports the SDK
    from eventlog.blocks import JsonBlock, TextBlock  # noqa: PLC0415

    text = types.TextContent(type="text", text="the chart:")
    image = types.ImageContent(type="image", data="AAAA", mimeType="image/png")

    blocks = output_of("chart", types.CallToolResult(content=[text, image]))

    image_json = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    assert [TextBlock(text="the chart:"), JsonBlock(data=image_json)] == blocks


def test_a_tool_that_requires_task_augmentation_is_not_offered() -> None:
    from mcp import types  # noqa: PLC0415 - the optional extra

    from actors.mcp.tools import needs_tasks  # noqa: PLC0415 - imports the SDK

    def listed(support: str | None) -> types.Tool:
        execution = types.ToolExecution(taskSupport=support) if support else None
        return types.Tool(name="t", inputSchema={"type": "object"}, execution=execution)

    assert needs_tasks(listed("required"))
    assert not needs_tasks(listed("optional"))
    assert not needs_tasks(listed("forbidden"))
    assert not needs_tasks(listed(None))
