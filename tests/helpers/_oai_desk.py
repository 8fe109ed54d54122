"""A support-desk Agents SDK agent for the ``actors.openai_agents`` tests, and its crash child.

The desk looks an order up (idempotent), refunds it (not idempotent: it appends to a
ledger file keyed by the call's ``idempotency_key``; in-doubt policy ``retry``) and
answers with a typed ``Reply`` (``output_type``). Its model is :class:`DeskModel`, a fake
SDK ``Model`` choosing its reply by the number of tool outputs in the input and writing
one line per call to a calls file, so a test counts the calls across processes; with a
``base_url`` it is the SDK's Chat Completions model talking to that (loopback) server.

As a script (``python _oai_desk.py HOME SESSION WORKDIR``) it runs the desk in the
session with ``Runtime.from_env`` (so the ``CLEW_FAULT_*`` variables apply).
``DESK_KILL_IN_REFUND=1`` / ``DESK_KILL_IN_LOOKUP=1`` SIGKILL the process inside that
tool (the refund after its ledger line); ``DESK_STREAM=1`` runs it streamed, and
``DESK_KILL_IN_STREAM=N`` SIGKILLs it inside the N-th streamed reply of the fake model;
``DESK_BASE_URL`` points the model at a server.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from _framework_checks import Desk
from agents import Agent, RunConfig, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage
from openai.types.responses import Response, ResponseCompletedEvent, ResponseCreatedEvent
from pydantic import BaseModel

from actors.openai_agents import DurableRunner, ToolPolicy, tool_context

PROMPT = "Order A-17 arrived broken; please refund it."
ANSWER = {"answer": "Refunded 42.50 for A-17.", "refunded": 42.5}


class Reply(BaseModel):
    """The desk's typed answer."""

    answer: str
    refunded: float


def _turn(items: Any) -> int:
    if isinstance(items, str):
        return 0
    return sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")


def _output(turn: int) -> list[Any]:
    if turn == 0:
        return [function_call("lookup_order", {"order_id": "A-17"}, call_id="call-1")]
    if turn == 1:
        args = {"order_id": "A-17", "amount": 42.5}
        return [function_call("issue_refund", args, call_id="call-2")]
    return [assistant_message(json.dumps(ANSWER), item_id="msg-3")]


def _response(output: list[Any]) -> Response:
    return Response.model_construct(
        id="resp-fake",
        created_at=time.time(),
        model="fake",
        object="response",
        output=output,
        parallel_tool_calls=False,
        tool_choice="auto",
        tools=[],
        usage=None,
    )


class DeskModel(Model):
    """A fake SDK model: look the order up, refund it, answer; each call counted in a file.

    ``kill_in_stream``: SIGKILL the process inside the n-th streamed reply."""

    def __init__(self, workdir: Path, kill_in_stream: int = 0) -> None:
        self._workdir = workdir
        self._kill_in_stream = kill_in_stream
        self._streamed = 0

    def _count(self, turn: int) -> None:
        with (self._workdir / "calls.txt").open("a") as f:
            f.write(f"{turn}\n")

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        turn = _turn(input)
        self._count(turn)
        usage = Usage(requests=1, input_tokens=10, output_tokens=2, total_tokens=12)
        return ModelResponse(output=_output(turn), usage=usage, response_id=None)

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        turn = _turn(input)
        self._count(turn)
        self._streamed += 1
        output = _output(turn)
        yield ResponseCreatedEvent(
            type="response.created", sequence_number=0, response=_response([])
        )
        if self._streamed == self._kill_in_stream:
            os.kill(os.getpid(), signal.SIGKILL)
        await asyncio.sleep(0)
        yield ResponseCompletedEvent(
            type="response.completed", sequence_number=1, response=_response(output)
        )


def _ledger_write(workdir: Path, key: str, order_id: str, amount: float) -> None:
    path = workdir / "ledger.jsonl"
    seen = {json.loads(x)["key"] for x in path.read_text().splitlines()} if path.exists() else set()
    if key in seen:
        return
    with path.open("a") as f:
        f.write(json.dumps({"key": key, "order": order_id, "amount": amount}) + "\n")
        f.flush()
        os.fsync(f.fileno())


def desk(
    workdir: Path,
    *,
    instructions: str = "You are a support desk.",
    approval: bool = False,
    base_url: str | None = None,
    kill_in: str = "",
    kill_in_stream: int = 0,
    lookup_doc: str = "Look an order up.",
) -> DurableRunner:
    """Return the durable support desk writing its ledger and calls under ``workdir``.

    ``kill_in``: the tool (``refund``, ``lookup``) that SIGKILLs the process on its first
    attempt; ``base_url``: the model is the SDK's Chat Completions model on that server.
    """
    model: Any = DeskModel(workdir, kill_in_stream)
    if base_url is not None:
        from agents import OpenAIChatCompletionsModel  # noqa: PLC0415 - only the loopback's
        from openai import AsyncOpenAI  # noqa: PLC0415

        client = AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
        model = OpenAIChatCompletionsModel(model="fake-gpt", openai_client=client)

    def lookup_order(order_id: str) -> dict[str, Any]:
        if kill_in == "lookup" and tool_context().attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return {"order_id": order_id, "total": 42.5, "status": "delivered"}

    lookup_order.__doc__ = lookup_doc

    @function_tool(needs_approval=approval)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order (writes the ledger once per idempotency key)."""
        ctx = tool_context()
        _ledger_write(workdir, ctx.idempotency_key, order_id, amount)
        if kill_in == "refund" and ctx.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded {amount:.2f} for {order_id}"

    agent = Agent(
        name="desk",
        instructions=instructions,
        model=model,
        output_type=Reply,
        tools=[function_tool(lookup_order), issue_refund],
    )
    policies = {
        "lookup_order": ToolPolicy(idempotent=True),
        "issue_refund": ToolPolicy(in_doubt="retry"),
    }
    return DurableRunner(agent, tools=policies, run_config=RunConfig(tracing_disabled=True))


def cli_desk() -> DurableRunner:
    """The desk of ``DESK_WORKDIR`` (``DESK_APPROVAL=1``: its refund needs approval), for
    ``clew resume --agent _oai_desk:cli_desk``."""
    env = os.environ
    return desk(Path(env["DESK_WORKDIR"]), approval=env.get("DESK_APPROVAL") == "1",
                base_url=env.get("DESK_BASE_URL"))  # fmt: skip


def openai_desk_reply(path: str, body: Any) -> Any:
    """Answer the desk's Chat Completions requests like a provider, by turn (streamed when
    asked): look the order up, refund it, then the typed answer."""
    from fake_server import Reply as ServerReply  # noqa: PLC0415 - the test server's
    from fake_server import openai_reply  # noqa: PLC0415
    from sse_bodies import StreamedCall, openai_stream, sse_reply  # noqa: PLC0415

    turn = sum(1 for m in body["messages"] if m["role"] == "tool")
    stream = bool(body.get("stream"))
    if turn >= 2:
        text = json.dumps(ANSWER)
        if stream:
            return sse_reply(openai_stream([text[:10], text[10:]]))
        return ServerReply(body=openai_reply(text))
    name, args = [
        ("lookup_order", {"order_id": "A-17"}),
        ("issue_refund", {"order_id": "A-17", "amount": 42.5}),
    ][turn]
    call_id = f"call-{turn + 1}"
    if stream:
        call = StreamedCall(id=call_id, name=name, fragments=[json.dumps(args)])
        return sse_reply(openai_stream(calls=[call], finish_reason="tool_calls"))
    call = {"id": call_id, "name": name, "arguments": json.dumps(args)}
    return ServerReply(body=openai_reply(None, tool_calls=[call], finish_reason="tool_calls"))


async def _streamed(runner: DurableRunner, session: Any) -> Any:
    async with runner.run_streamed(PROMPT, session=session) as streamed:
        async for _ in streamed.stream_events():
            pass
    return streamed.final_output


#: The desk, for the checks every framework's run passes (``_framework_checks``).
DESK = Desk(make=desk, script=Path(__file__).resolve(), answer=Reply(**ANSWER), prompt=PROMPT)


if __name__ == "__main__":
    from actors.runtime.runtime import Runtime

    home, sid, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    env = os.environ
    kill = "refund" if env.get("DESK_KILL_IN_REFUND") == "1" else ""
    kill = "lookup" if env.get("DESK_KILL_IN_LOOKUP") == "1" else kill
    runner = desk(
        work,
        base_url=env.get("DESK_BASE_URL"),
        kill_in=kill,
        kill_in_stream=int(env.get("DESK_KILL_IN_STREAM", "0")),
    )
    with Runtime.from_env(home=home, project_dir=str(work)) as rt:
        session = rt.session(sid)
        if env.get("DESK_STREAM") == "1":
            output = asyncio.run(_streamed(runner, session))
        else:
            output = runner.run_sync(PROMPT, session=session).final_output
        print(output.model_dump_json())
