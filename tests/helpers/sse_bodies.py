"""Server-sent event bodies as both providers stream them, and their unstreamed twins.

Each builder returns the stream as a list of events (bytes), so a test can serve it
whole, cut it after some events, or stall between them (``fake_server.Reply.parts``).
Tool-call arguments and text come in the fragments the test chooses; ``*_whole`` gives
the equivalent non-streamed body, which ``complete`` must map to the same response.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fake_server import Reply, anthropic_reply, openai_reply

SSE_TYPE = "text/event-stream"
DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True)
class StreamedCall:
    """A tool call as it streams: its arguments' JSON text cut into ``fragments``."""

    id: str | None
    name: str
    fragments: Sequence[str] = ()

    @property
    def arguments(self) -> str:
        return "".join(self.fragments)


@dataclass(frozen=True)
class StreamedText:
    """A text block as it streams (Anthropic: one content block)."""

    pieces: Sequence[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def sse_event(data: Any, event: str | None = None) -> bytes:
    """Return one event: ``event:`` (when named) and one ``data:`` line of JSON."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def sse_reply(events: Sequence[bytes], **fields: Any) -> Reply:
    """Return a 200 reply streaming ``events``, one write each."""
    return Reply(content_type=SSE_TYPE, parts=tuple(events), **fields)


# --- OpenAI Chat Completions ------------------------------------------------------------


def openai_chunk(
    delta: dict[str, Any], finish_reason: str | None = None, model: str = "fake-gpt"
) -> bytes:
    return sse_event(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
    )


def openai_stream(
    pieces: Sequence[str] = (),
    *,
    calls: Sequence[StreamedCall] = (),
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "fake-gpt",
) -> list[bytes]:
    """Return a Chat Completions stream: role, text pieces, tool calls, finish, usage, [DONE]."""
    events = [openai_chunk({"role": "assistant", "content": ""}, model=model)]
    events += [openai_chunk({"content": piece}, model=model) for piece in pieces]
    for index, call in enumerate(calls):
        head: dict[str, Any] = {"index": index, "type": "function"}
        if call.id is not None:
            head["id"] = call.id
        head["function"] = {"name": call.name, "arguments": ""}
        events.append(openai_chunk({"tool_calls": [head]}, model=model))
        events += [
            openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": f}}]})
            for f in call.fragments
        ]
    events.append(openai_chunk({}, finish_reason, model=model))
    usage = usage or {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    events.append(sse_event({"id": "chatcmpl-1", "model": model, "choices": [], "usage": usage}))
    events.append(DONE)
    return events


def openai_whole(
    pieces: Sequence[str] = (),
    *,
    calls: Sequence[StreamedCall] = (),
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "fake-gpt",
) -> dict[str, Any]:
    """Return the non-streamed body of what :func:`openai_stream` streams."""
    wire_calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
    body = openai_reply(
        "".join(pieces),
        tool_calls=wire_calls or None,
        finish_reason=finish_reason,
        usage=usage,
        model=model,
    )
    for call in body["choices"][0]["message"].get("tool_calls", []):
        if call["id"] is None:
            del call["id"]
    return body


# --- Anthropic Messages -----------------------------------------------------------------


def anthropic_stream(
    *blocks: StreamedText | StreamedCall,
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
    model: str = "fake-claude",
) -> list[bytes]:
    """Return a Messages stream: message_start, the blocks in pieces, message_delta, stop."""
    usage = usage or {"input_tokens": 10, "output_tokens": 2}
    first = {k: v for k, v in usage.items() if k != "output_tokens"} | {"output_tokens": 1}
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
    }
    message |= {"content": [], "stop_reason": None, "stop_sequence": None, "usage": first}
    events = [sse_event({"type": "message_start", "message": message}, "message_start")]
    events.append(sse_event({"type": "ping"}, "ping"))
    for index, block in enumerate(blocks):
        events += _anthropic_block(index, block)
    end = {"stop_reason": stop_reason, "stop_sequence": None}
    delta = {
        "type": "message_delta",
        "delta": end,
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    events.append(sse_event(delta, "message_delta"))
    events.append(sse_event({"type": "message_stop"}, "message_stop"))
    return events


def _anthropic_block(index: int, block: StreamedText | StreamedCall) -> list[bytes]:
    def delta(body: dict[str, Any]) -> bytes:
        event = {"type": "content_block_delta", "index": index, "delta": body}
        return sse_event(event, "content_block_delta")

    if isinstance(block, StreamedText):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [delta({"type": "text_delta", "text": p}) for p in block.pieces]
    else:
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        deltas = [delta({"type": "input_json_delta", "partial_json": f}) for f in block.fragments]
    opened = {"type": "content_block_start", "index": index, "content_block": start}
    closed = {"type": "content_block_stop", "index": index}
    return [
        sse_event(opened, "content_block_start"),
        *deltas,
        sse_event(closed, "content_block_stop"),
    ]


def anthropic_whole(
    *blocks: StreamedText | StreamedCall,
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
    model: str = "fake-claude",
) -> dict[str, Any]:
    """Return the non-streamed body of what :func:`anthropic_stream` streams."""
    wire = [
        {"type": "text", "text": b.text}
        if isinstance(b, StreamedText)
        else {
            "type": "tool_use",
            "id": b.id,
            "name": b.name,
            "input": json.loads(b.arguments or "{}"),
        }
        for b in blocks
    ]
    return anthropic_reply(*wire, stop_reason=stop_reason, usage=usage, model=model)
