"""The agent loop: one model/tool cycle, shared by the Brain and the workers.

Ask the model (through the fallback chain), append the assistant node, run the
tool calls it asked for (each through the recorder), append the tool node, repeat
until the model stops asking for tools or ``max_turns`` is reached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic

from actors.models.protocol import Model, ModelRequest, request_hash
from actors.models.storable import check_storable, safe_text
from actors.models.tools import Tool, ToolRegistry, error_type_of, invoke, output_blocks, timeout_of
from actors.orchestration.env import SessionEnv
from actors.replay.recorder import RunRecorder
from eventlog.blocks import ContentBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.errors import ModelError
from eventlog.events import (
    EndReason,
    ModelFailed,
    ModelRequested,
    Node,
    NodeAppended,
    NodeRole,
    NodeType,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Usage,
)


class Conversation:
    """One agent's branch inside a run: appends nodes and keeps the model messages."""

    def __init__(
        self,
        rec: RunRecorder,
        *,
        parent_id: str | None,
        history: list[Message] | None = None,
        activate: bool,
    ) -> None:
        self.rec = rec
        self.tip = parent_id
        self.messages: list[Message] = list(history or [])
        self.activate = activate

    def append(
        self,
        role: NodeRole,
        content: list[ContentBlock],
        node_type: NodeType = "message",
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Append a node after the tip; return its id."""
        node = Node(
            node_id=self.rec.next_id("n"),
            parent_id=self.tip,
            agent_id=self.rec.agent_id,
            run_id=self.rec.run_id,
            role=role,
            node_type=node_type,
            content=content,
            metadata=metadata or {},
        )
        stored = self.rec.emit(NodeAppended(node=node, activate=self.activate))
        assert isinstance(stored.event, NodeAppended)
        self.tip = node.node_id
        msg_role = role if role in ("user", "assistant", "tool", "system") else "user"
        self.messages.append(Message(role=msg_role, content=list(stored.event.node.content)))
        return node.node_id


@dataclass
class LoopResult:
    """How an agent loop ended."""

    content: list[ContentBlock]
    turns: int
    usage: Usage
    end_reason: EndReason
    final_node_id: str | None


def add_usage(a: Usage, b: Usage) -> Usage:
    """Return the sum of two usages."""
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
    )


def call_model(
    env: SessionEnv,
    rec: RunRecorder,
    *,
    role: str,
    phase: str,
    messages: list[Message],
    system: str = "",
    tools: ToolRegistry | None = None,
    task_id: str | None = None,
) -> tuple[list[ContentBlock], str, Usage]:
    """Call the model chain for ``role``; every candidate is recorded; return the reply.

    Raises:
        ModelError: every candidate failed (each one recorded as ``model_failed``).
    """
    rec.call_index += 1
    index = rec.call_index
    chain = env.chain(role)
    specs = tools.specs() if tools is not None else []
    last: ModelError | None = None
    for i, model in enumerate(chain):
        request = ModelRequest(
            model=model.name,
            messages=list(messages),
            system=system,
            tools=specs,
            role=role,
            phase=phase,
        )
        requested = ModelRequested(
            call_index=index,
            attempt=i + 1,
            model=model.name,
            role=role,
            phase=phase,
            request_hash=request_hash(request),
            messages=request.messages,
            tools=[s.name for s in specs],
            system=system,
        )
        try:
            responded = rec.model_call(requested, _live_call(model, request))
        except ModelError as e:
            last = e
            rec.emit(_failed(requested, e, will_fallback=i < len(chain) - 1))
            continue
        rec.emit(
            TokenUsage(
                model=model.name,
                role=role,
                phase=phase,
                task_id=task_id,
                call_index=index,
                usage=responded.usage,
            )
        )
        return responded.content, responded.stop_reason, responded.usage
    assert last is not None
    raise last


def _live_call(
    model: Model, request: ModelRequest
) -> Callable[[], tuple[list[ContentBlock], str, Usage]]:
    """Return the call the recorder makes when the model must really be asked."""

    def live() -> tuple[list[ContentBlock], str, Usage]:
        try:
            response = model.complete(request)
            # A reply the log cannot hold (a lone surrogate…) is a failed candidate, not
            # a store failure: recorded as model_failed, so a replay reproduces it.
            check_storable((response.content, response.stop_reason), "the model's reply")
        except ModelError:
            raise
        except BaseException as e:
            # A client bug (KeyError on a provider body…) is a failed candidate too:
            # recorded as model_failed, so the chain falls back and a replay reproduces it.
            # Any BaseException: one escaping a worker actor would stop every actor.
            name = safe_text(type(e).__name__)
            raise ModelError(f"{name}: {safe_text(str(e))}", error_type=name) from e
        return response.content, response.stop_reason, response.usage

    return live


def _failed(requested: ModelRequested, e: ModelError, *, will_fallback: bool) -> ModelFailed:
    return ModelFailed(
        call_index=requested.call_index,
        attempt=requested.attempt,
        model=requested.model,
        error_type=safe_text(e.error_type),
        message=safe_text(str(e)),
        status=e.status,
        will_fallback=will_fallback,
    )


def run_tool(
    env: SessionEnv, rec: RunRecorder, tools: ToolRegistry, call: ToolCallBlock
) -> ToolResultBlock:
    """Run one tool call through the recorder; always return a tool_result block."""
    t = tools.get(call.name)
    started = ToolCallStarted(
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=dict(call.arguments),
        idempotent=bool(t and t.idempotent),
    )
    timeout = env.settings.tool_timeout_s
    outcome = rec.tool_call(
        started, lambda: _execute(t, call, timeout), env.settings.in_doubt_policy
    )
    if isinstance(outcome, ToolFailed):
        return ToolResultBlock(
            tool_call_id=call.id,
            name=call.name,
            is_error=True,
            content=[TextBlock(text=f"{outcome.error_type}: {outcome.message}")],
        )
    parts = [b for b in outcome.content if not isinstance(b, ToolCallBlock | ToolResultBlock)]
    return ToolResultBlock(
        tool_call_id=call.id,
        name=call.name,
        content=parts,
        is_error=outcome.is_error,
    )


def _execute(
    t: Tool | None, call: ToolCallBlock, timeout: float | None
) -> ToolCallFinished | ToolFailed:
    """Validate the arguments and run the tool live; every failure is a ``ToolFailed``."""

    def failed(error_type: str, message: str) -> ToolFailed:
        return ToolFailed(
            tool_call_id=call.id,
            tool_name=call.name,
            error_type=safe_text(error_type),
            message=safe_text(message),
        )

    if t is None:
        return failed("UnknownTool", f"no tool named {call.name!r}")
    try:
        args = t.args_model.model_validate(call.arguments)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(arguments)"
        return failed("ValidationError", f"invalid arguments at {loc}: {first['msg']}")
    try:
        output = invoke(t, args, timeout=timeout_of(t, timeout))
    except Exception as e:
        return failed(error_type_of(e), str(e) or repr(e))
    return ToolCallFinished(
        tool_call_id=call.id, tool_name=call.name, content=output_blocks(output)
    )


def agent_loop(
    env: SessionEnv,
    conv: Conversation,
    *,
    role: str,
    phase: str,
    system: str,
    tools: ToolRegistry,
    task_id: str | None,
    max_turns: int,
) -> LoopResult:
    """Run the model/tool cycle on ``conv`` until the model stops calling tools."""
    usage = Usage()
    content: list[ContentBlock] = []
    for turn in range(1, max_turns + 1):
        content, stop_reason, u = call_model(
            env,
            conv.rec,
            role=role,
            phase=phase,
            messages=conv.messages,
            system=system,
            tools=tools if len(tools) else None,
            task_id=task_id,
        )
        usage = add_usage(usage, u)
        conv.append("assistant", content)
        calls = [b for b in content if isinstance(b, ToolCallBlock)]
        if not calls:
            reason: EndReason = (
                "max_output_tokens_recovery" if stop_reason == "max_tokens" else "completed"
            )
            return LoopResult(content, turn, usage, reason, conv.tip)
        results: list[ContentBlock] = [run_tool(env, conv.rec, tools, c) for c in calls]
        conv.append("tool", results)
    return LoopResult(content, max_turns, usage, "max_turns", conv.tip)
