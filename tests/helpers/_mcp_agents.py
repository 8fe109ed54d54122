"""Agents of both framework integrations whose tools are a real MCP server's, and their
crash child.

The server is ``_mcp_server.py`` (``lookup``, annotated ``readOnlyHint``; ``append_note``,
not annotated, appending a line to ``WORKDIR/notes.txt``). Each framework's agent looks a
topic up, notes it, then answers in text; its fake model writes one line per call to
``WORKDIR/calls.txt`` and its answer says whether the note was taken or the model was
told otherwise (a ``ModelRetry``, an in-doubt call not run again).

As a script (``python _mcp_agents.py pai|sdk HOME SESSION WORKDIR``) it runs that agent in
the session with ``Runtime.from_env`` (so the ``CLEW_FAULT_*`` variables apply);
``MCP_KILL_IN=TOOL`` SIGKILLs the process inside that tool's call, once the server has
answered (``append_note``: appended the line) and before the outcome is recorded;
``MCP_IN_DOUBT`` is the agent's in-doubt policy.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

from _processes import child_env

from actors.models.tools import InDoubtPolicy

#: The MCP server of the tests.
SERVER = Path(__file__).with_name("_mcp_server.py")
PROMPT = "What is clew? Note it down."
#: The answer of a run whose note was taken.
NOTED = "clew: an event-sourced actor runtime (noted: 1 notes)"


def events_of(rt: Any, sid: str, kind: type) -> list[Any]:
    """The events of session ``sid`` of type ``kind``, in seq order."""
    return [e.event for e in rt.store.iter_events(sid) if isinstance(e.event, kind)]


def tool_results(rt: Any, sid: str, skip: str) -> dict[str, Any]:
    """Each finished tool call's JSON result by tool name, the ``skip`` tool left out."""
    from eventlog.blocks import JsonBlock  # noqa: PLC0415
    from eventlog.events import ToolCallFinished  # noqa: PLC0415

    out: dict[str, Any] = {}
    for f in events_of(rt, sid, ToolCallFinished):
        if f.tool_name == skip:
            continue
        (block,) = f.content
        assert isinstance(block, JsonBlock)
        out[f.tool_name] = block.data
    return out


def notes(workdir: Path) -> list[str]:
    """Return the lines the server appended to the notebook of ``workdir``."""
    path = workdir / "notes.txt"
    return path.read_text().splitlines() if path.exists() else []


def calls(workdir: Path) -> int:
    """Return how many calls the fake model was asked, in every process."""
    path = workdir / "calls.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _count(workdir: Path) -> None:
    with (workdir / "calls.txt").open("a") as f:
        f.write("call\n")


def _kill_in() -> str:
    return os.environ.get("MCP_KILL_IN", "")


def _in_doubt() -> InDoubtPolicy | None:
    return cast("InDoubtPolicy | None", os.environ.get("MCP_IN_DOUBT") or None)


# --- Pydantic AI --------------------------------------------------------------------------


def pai_agent(
    workdir: Path,
    *,
    topic: str = "clew",
    url: str | None = None,
    kill: str = "",
    in_doubt: InDoubtPolicy | None = None,
    tool_error_behavior: str = "retry",
    command: str = sys.executable,
) -> Any:
    """Return a ``DurableAgent`` whose toolset is the MCP server (over stdio, started by
    ``command``, or at ``url``); its ``FunctionModel`` looks ``topic`` up, notes what it
    found, answers."""
    from fastmcp.client.transports import StdioTransport  # noqa: PLC0415 - the mcp extra
    from pydantic_ai import Agent, ModelResponse, TextPart, ToolCallPart  # noqa: PLC0415
    from pydantic_ai.mcp import MCPToolset  # noqa: PLC0415
    from pydantic_ai.messages import RetryPromptPart, ToolReturnPart  # noqa: PLC0415
    from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: PLC0415

    from actors.pydantic_ai import DurableAgent  # noqa: PLC0415

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        _count(workdir)
        parts = list(messages[-1].parts)
        said = [p for p in parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
        if len(messages) == 1:
            call = ToolCallPart("lookup", {"topic": topic}, tool_call_id="call-1")
            return ModelResponse(parts=[call])
        last = said[-1]
        if isinstance(last, RetryPromptPart) or last.outcome != "success":
            # a retry (Pydantic AI 2 tells it as a ``retried`` return), a ``ToolFailed``
            return ModelResponse(parts=[TextPart(f"{last.tool_name} failed: {last.content}")])
        if last.tool_name == "lookup":
            args = {"text": f"seen {topic}"}
            call = ToolCallPart("append_note", args, tool_call_id="call-2")
            return ModelResponse(parts=[call])
        found = next(
            p.content
            for m in messages
            for p in m.parts
            if isinstance(p, ToolReturnPart) and p.tool_name == "lookup"
        )
        return ModelResponse(parts=[TextPart(f"{found} (noted: {last.content})")])

    async def process(ctx: Any, call_tool: Any, name: str, args: dict[str, Any]) -> Any:
        result = await call_tool(name, args)
        if name == kill:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    env = child_env(NOTES_FILE=str(workdir / "notes.txt"))
    server: Any = url or StdioTransport(command=command, args=[str(SERVER)], env=env)
    toolset = MCPToolset(
        server,
        id="kb",
        process_tool_call=process,
        tool_error_behavior=tool_error_behavior,
    )
    agent = Agent(FunctionModel(model), toolsets=[toolset], name="kb")
    return DurableAgent(agent, in_doubt_policy=in_doubt)


# --- the OpenAI Agents SDK ----------------------------------------------------------------


def sdk_server(workdir: Path, command: str = sys.executable) -> Any:
    """Return the SDK's ``MCPServerStdio`` of the test server, started by ``command`` (not
    connected)."""
    from agents.mcp import MCPServerStdio  # noqa: PLC0415 - the openai-agents extra

    env = child_env(NOTES_FILE=str(workdir / "notes.txt"))
    params = {"command": command, "args": [str(SERVER)], "env": env}
    return MCPServerStdio(params, name="kb", client_session_timeout_seconds=60)


def sdk_runner(
    workdir: Path,
    server: Any,
    *,
    topic: str = "clew",
    kill: str = "",
    in_doubt: InDoubtPolicy | None = None,
) -> Any:
    """Return a ``DurableRunner`` whose agent's MCP server is ``server``; its fake model
    looks ``topic`` up, notes what it found, answers (``kill``: SIGKILL inside that tool's
    call, after the server answered)."""
    from agents import Agent, RunConfig  # noqa: PLC0415 - the openai-agents extra

    from actors.openai_agents import DurableRunner  # noqa: PLC0415

    if kill:
        call_tool = server.call_tool

        async def killing(name: str, arguments: Any, *args: Any, **kwargs: Any) -> Any:
            result = await call_tool(name, arguments, *args, **kwargs)
            if name == kill:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        server.call_tool = killing
    agent = Agent(name="kb", instructions="Look it up.", model=_sdk_model_class()(workdir, topic),
                  mcp_servers=[server])  # fmt: skip
    return DurableRunner(
        agent, in_doubt_policy=in_doubt, run_config=RunConfig(tracing_disabled=True)
    )


def _sdk_model_class() -> type:
    from agents.items import ModelResponse  # noqa: PLC0415 - the openai-agents extra
    from agents.models.interface import Model  # noqa: PLC0415
    from agents.testing import assistant_message, function_call  # noqa: PLC0415
    from agents.usage import Usage  # noqa: PLC0415

    class _SdkModel(Model):  # type: ignore[misc]
        """A fake SDK model: look the topic up, note it, answer; each call counted."""

        def __init__(self, workdir: Path, topic: str) -> None:
            self.workdir = workdir
            self.topic = topic

        async def get_response(
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> ModelResponse:
            _count(self.workdir)
            items = [] if isinstance(input, str) else [i for i in input if isinstance(i, dict)]
            outputs = {
                i["call_id"]: _output_text(i["output"])
                for i in items
                if i.get("type") == "function_call_output"
            }
            usage = Usage(requests=1, input_tokens=5, output_tokens=1, total_tokens=6)
            if not outputs:
                topic = {"topic": self.topic}
                output = [function_call("lookup", topic, call_id="call-1")]
            elif "call-2" not in outputs and "error" not in outputs["call-1"].lower():
                note = {"text": f"seen {self.topic}"}
                output = [function_call("append_note", note, call_id="call-2")]
            else:
                text = f"{outputs['call-1']} (noted: {outputs.get('call-2', '-')})"
                output = [assistant_message(text, item_id="msg-1")]
            return ModelResponse(output=output, usage=usage, response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return _SdkModel


def _output_text(output: Any) -> str:
    """The text of a function call's output item (a string, or a text content dict)."""
    if isinstance(output, dict):
        return str(output.get("text", ""))
    if isinstance(output, list):
        return "".join(str(o.get("text", "")) for o in output if isinstance(o, dict))
    return str(output)


# --- a streamable-HTTP server ---------------------------------------------------------------


def free_port() -> int:
    """Return a loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http_server(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    """Start the server over streamable HTTP on ``port``; return once it listens."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        env=child_env(NOTES_FILE=str(workdir / "notes.txt")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the HTTP MCP server exited")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the HTTP MCP server did not listen")


# --- the crash child ------------------------------------------------------------------------


def killed(framework: str, home: Path, sid: str, workdir: Path, **env: str) -> None:
    """Run ``framework``'s agent (``pai``, ``sdk``) on session ``sid`` in a child process
    with ``env``, and check it was SIGKILLed."""
    child = subprocess.run(
        [sys.executable, __file__, framework, str(home), sid, str(workdir)],
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert -9 == child.returncode, child.stdout + child.stderr


async def _sdk_run(workdir: Path, session: Any) -> Any:
    async with sdk_server(workdir) as server:
        runner = sdk_runner(workdir, server, kill=_kill_in(), in_doubt=_in_doubt())
        return (await runner.run(PROMPT, session=session)).final_output


if __name__ == "__main__":
    from actors.runtime.runtime import Runtime

    framework, home, sid, work = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
    with Runtime.from_env(home=home, project_dir=str(work)) as rt:
        if framework == "pai":
            agent = pai_agent(work, kill=_kill_in(), in_doubt=_in_doubt())
            print(agent.run_sync(PROMPT, session=rt.session(sid)).output)
        else:
            print(asyncio.run(_sdk_run(work, rt.session(sid))))
