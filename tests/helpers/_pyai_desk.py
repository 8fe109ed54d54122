"""A support-desk Pydantic AI agent for the ``actors.pydantic_ai`` tests, and its crash child.

The agent looks an order up (idempotent), refunds it (not idempotent: it appends to a
ledger file keyed by the call's ``idempotency_key``; in-doubt policy ``retry``) and
answers with a typed ``Reply``. Its model is a ``FunctionModel`` that appends one line per
request it is asked to a calls file, so a test counts the requests across processes.

As a script (``python _pyai_desk.py HOME SESSION WORKDIR``) it runs the agent in the
session with ``Runtime.from_env`` (so the ``CLEW_FAULT_*`` variables apply);
``DESK_KILL_IN_REFUND=1`` SIGKILLs the process inside the refund, after its ledger line;
``DESK_BASE_URL`` makes its model Pydantic AI's OpenAI model talking to that server;
``DESK_ITER=1`` drives the run node by node (``DurableAgent.iter``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, cast

from _framework_checks import Desk
from pydantic import BaseModel
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from actors.pydantic_ai import DurableAgent, ToolPolicy, tool_context

PROMPT = "Order A-17 arrived broken; please refund it."


class Reply(BaseModel):
    """The desk's typed answer."""

    answer: str
    refunded: float


def _ask(workdir: Path, instructions: str) -> Any:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        with (workdir / "calls.txt").open("a") as f:
            f.write(f"{len(messages)}\n")
        n = len(messages)
        if n == 1:
            call = ToolCallPart("lookup_order", {"order_id": "A-17"}, tool_call_id="call-1")
            return ModelResponse(parts=[TextPart("Looking it up."), call])
        if n == 3:
            args = {"order_id": "A-17", "amount": 42.5}
            return ModelResponse(parts=[ToolCallPart("issue_refund", args, tool_call_id="call-2")])
        out = {"answer": "Refunded 42.50 for A-17.", "refunded": 42.5}
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, out, tool_call_id="call-3")]
        )

    return model


def desk(
    workdir: Path,
    *,
    instructions: str = "You are a support desk.",
    kill: bool = False,
    lookup_doc: str = "Look an order up.",
    approval: bool = False,
    base_url: str | None = None,
) -> DurableAgent:
    """Return the durable support desk writing its ledger and calls under ``workdir``;
    ``base_url``: its model is Pydantic AI's OpenAI model talking to that server."""
    model: Any = FunctionModel(_ask(workdir, instructions))
    if base_url is not None:
        from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415 - openai extra
        from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

        provider = OpenAIProvider(base_url=base_url, api_key="sk-test")
        model = OpenAIChatModel("fake-gpt", provider=provider)
    agent = Agent(model, output_type=Reply, name="desk", instructions=instructions)

    def lookup_order(order_id: str) -> dict[str, Any]:
        return {"order_id": order_id, "total": 42.5, "status": "delivered"}

    lookup_order.__doc__ = lookup_doc
    agent.tool_plain(lookup_order)

    @agent.tool_plain(requires_approval=approval)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order (writes the ledger once per idempotency key)."""
        ctx = tool_context()
        ledger = workdir / "ledger.jsonl"
        seen = (
            {json.loads(line)["key"] for line in ledger.read_text().splitlines()}
            if ledger.exists()
            else set()
        )
        if ctx.idempotency_key not in seen:
            with ledger.open("a") as f:
                f.write(
                    json.dumps({"key": ctx.idempotency_key, "order": order_id, "amount": amount})
                    + "\n"
                )
                f.flush()
                os.fsync(f.fileno())
        if kill and ctx.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded {amount:.2f} for {order_id}"

    policies = {
        "lookup_order": ToolPolicy(idempotent=True),
        "issue_refund": ToolPolicy(in_doubt="retry"),
    }
    return DurableAgent(agent, tools=policies)


def openai_desk_reply(path: str, body: Any) -> Any:
    """Answer the desk's Chat Completions requests like a provider, by turn (streamed when
    asked): look the order up, refund it, then the typed answer (``final_result``)."""
    from fake_server import Reply as ServerReply  # noqa: PLC0415 - the test server's
    from fake_server import openai_reply  # noqa: PLC0415
    from sse_bodies import StreamedCall, openai_stream, sse_reply  # noqa: PLC0415

    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    name, args = [
        ("lookup_order", {"order_id": "A-17"}),
        ("issue_refund", {"order_id": "A-17", "amount": 42.5}),
        ("final_result", {"answer": "Refunded 42.50 for A-17.", "refunded": 42.5}),
    ][min(turn, 2)]
    if body.get("stream"):
        streamed = StreamedCall(id=f"call-{turn + 1}", name=name, fragments=[json.dumps(args)])
        return sse_reply(openai_stream(calls=[streamed], finish_reason="tool_calls"))
    call = {"id": f"call-{turn + 1}", "name": name, "arguments": json.dumps(args)}
    return ServerReply(body=openai_reply(None, tool_calls=[call], finish_reason="tool_calls"))


async def streamed(agent: DurableAgent, session: Any) -> Reply:
    """Run the desk with ``run_stream`` to its typed output."""
    async with agent.run_stream(PROMPT, session=session) as result:
        return cast(Reply, await result.get_output())


async def iterated(agent: DurableAgent, session: Any) -> Reply:
    """Run the desk node by node with ``iter`` to its typed output."""
    async with agent.iter(PROMPT, session=session) as run:
        async for _ in run:
            pass
    assert run.result is not None
    return cast(Reply, run.result.output)


#: The desk, for the checks every framework's run passes (``_framework_checks``).
DESK = Desk(
    make=desk,
    script=Path(__file__).resolve(),
    answer=Reply(answer="Refunded 42.50 for A-17.", refunded=42.5),
    prompt=PROMPT,
)


if __name__ == "__main__":
    from actors.runtime.runtime import Runtime

    home, sid, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    with Runtime.from_env(home=home, project_dir=str(work)) as rt:
        kill = os.environ.get("DESK_KILL_IN_REFUND") == "1"
        agent = desk(work, kill=kill, base_url=os.environ.get("DESK_BASE_URL"))
        if os.environ.get("DESK_STREAM") == "1":  # run_stream: each reply streamed
            print(asyncio.run(streamed(agent, rt.session(sid))).model_dump_json())
        elif os.environ.get("DESK_ITER") == "1":  # iter: node by node
            print(asyncio.run(iterated(agent, rt.session(sid))).model_dump_json())
        else:
            print(agent.run_sync(PROMPT, session=rt.session(sid)).output.model_dump_json())
