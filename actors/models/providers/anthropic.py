"""The Anthropic Messages API adapter.

Mapping (clew → wire): the system prompt, and the text of any ``system``
message, goes to the top-level ``system`` field; ``tool`` messages are user
turns; consecutive turns of one role are merged (the API wants them
alternating), with tool_result blocks first in a user turn as the API requires;
text → ``text`` blocks (empty ones dropped: the API refuses them), json and
artifact_ref → text; assistant tool_call → ``tool_use`` (id, name, input);
tool_result → ``tool_result`` (``tool_use_id``, text content, ``is_error``).

Mapping (wire → clew): ``text`` → text blocks, ``tool_use`` → tool_call blocks,
other block types (thinking, server tools) are dropped; usage
``input_tokens`` / ``output_tokens`` / ``cache_read_input_tokens`` /
``cache_creation_input_tokens`` → :class:`Usage`; ``stop_reason`` passes
through (``refusal`` → ``error``).

Streaming (``stream``): the body asks for ``"stream": true``; ``message_start`` brings
the model and the prompt's usage, ``content_block_start`` / ``_delta`` build each block
(text in pieces, a tool call's ``input`` as fragments of JSON), ``message_delta`` the stop
reason and the output usage; the blocks are mapped by the same ``response_from``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import msgspec

from actors.models.protocol import ModelRequest, ModelResponse, StreamItem, ToolSpec
from actors.models.providers.http import HttpModel, HttpOptions, error_detail
from actors.models.providers.mapping import block_text, optional_fields, tool_arguments
from actors.models.providers.sse import SseEvent, _StreamProblem, decode_event, stream_reply
from actors.models.windows import known_window
from eventlog.blocks import ContentBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.events import Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"

STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "model_context_window_exceeded": "max_tokens",
    "pause_turn": "end_turn",
    "refusal": "error",
}


class AnthropicModel(HttpModel):
    """A :class:`~actors.models.protocol.Model` speaking the Anthropic Messages API.

    Args:
        model: the model name (``claude-sonnet-4-5``).
        base_url: without ``/v1``; ``/v1/messages`` is appended.
        api_key: sent as ``x-api-key``; ``None`` only for a gateway that adds it.
        options: timeout, retry policy and seams.
        context_window: the model's context window in tokens (default: known for
            common models, see ``actors/models/windows.py``).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        options: HttpOptions | None = None,
        context_window: int | None = None,
    ) -> None:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        super().__init__(
            "anthropic",
            model,
            url=base_url.rstrip("/") + "/v1/messages",
            headers=headers,
            api_key=api_key,
            options=options,
        )
        #: The window clew budgets against (docs/context.md): given, else the model's known one.
        self.context_window = context_window or known_window(model)

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        return messages_payload(self.model, request)

    def _response(self, data: Any) -> ModelResponse:
        return response_from(self._convert(data, _Reply), self.model)

    def stream(self, request: ModelRequest) -> Iterator[StreamItem]:
        """Stream the reply: its text pieces as they come, then what ``complete`` returns.

        Nothing is sent until the first item is asked for.

        Raises:
            ModelError: as ``complete`` raises it before any text was yielded; after,
                ``error_type="StreamInterrupted"`` (the stream was cut or went bad).
        """
        payload = self._payload(request)
        payload["stream"] = True
        return stream_reply(self._http, payload, partial(EventReader, self.model), self._response)


# --- clew → wire ------------------------------------------------------------------------


def messages_payload(model: str, request: ModelRequest) -> dict[str, Any]:
    """Return the Messages API body for ``request``."""
    system = [request.system] if request.system else []
    turns: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "system":
            text = "\n".join(block_text(b) for b in message.content)
            if text:
                system.append(text)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = wire_blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            # stable sort: tool results first, the rest keeps its order
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    payload: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": turns}
    if system:
        payload["system"] = "\n\n".join(system)
    payload.update(optional_fields(request, _wire_tool))
    return payload


def _wire_tool(tool: ToolSpec, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


def wire_blocks(message: Message) -> list[dict[str, Any]]:
    """Return the wire content blocks of one clew message."""
    out: list[dict[str, Any]] = []
    for block in message.content:
        match block:
            case ToolCallBlock(id=call_id, name=name, arguments=arguments) if (
                message.role == "assistant"
            ):
                out.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
            case ToolResultBlock(tool_call_id=call_id, content=parts, is_error=is_error) if (
                message.role != "assistant"
            ):
                wire: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
                texts = [{"type": "text", "text": t} for t in map(block_text, parts) if t]
                if texts:
                    wire["content"] = texts
                if is_error:
                    wire["is_error"] = True
                out.append(wire)
            case _:
                text = block_text(block)
                if text:
                    out.append({"type": "text", "text": text})
    return out


# --- wire → clew ------------------------------------------------------------------------


class _Block(msgspec.Struct):
    type: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: Any = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class _Reply(msgspec.Struct):
    content: list[_Block]
    stop_reason: str | None = None
    usage: _Usage | None = None
    model: str | None = None


def response_from(reply: _Reply, model: str) -> ModelResponse:
    """Map a Messages API reply to a :class:`ModelResponse`."""
    blocks: list[ContentBlock] = []
    for block in reply.content:
        if block.type == "text" and block.text:
            blocks.append(TextBlock(text=block.text))
        elif block.type == "tool_use":
            blocks.append(
                ToolCallBlock(id=block.id, name=block.name, arguments=tool_arguments(block.input))
            )
    usage = reply.usage or _Usage()
    return ModelResponse(
        content=blocks,
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        stop_reason=STOP_REASONS.get(reply.stop_reason or "", "end_turn"),
        model=reply.model or model,
    )


# --- streamed: message events → the same message ------------------------------------


class _Delta(msgspec.Struct):
    type: str = ""
    text: str = ""
    partial_json: str = ""
    stop_reason: str | None = None


class _Start(msgspec.Struct):
    model: str | None = None
    usage: _Usage | None = None


class _Event(msgspec.Struct):
    type: str
    index: int = 0
    message: _Start | None = None
    content_block: _Block | None = None
    delta: _Delta | None = None
    usage: _Usage | None = None


class EventReader:
    """Gather a Messages API event stream into the message it streams."""

    def __init__(self, model: str) -> None:
        self.done = False
        self._model = model
        self._served: str | None = None
        self._usage = _Usage()
        self._stop: str | None = None
        self._blocks: dict[int, _Block] = {}
        self._parts: dict[int, list[str]] = {}

    def feed(self, event: SseEvent) -> str:
        """Take one event; return the text it adds."""
        if event.event == "error":
            raise _StreamProblem(
                "with an error event", error_detail(event.data.encode()), retryable=True
            )
        wire: _Event = decode_event(event, _Event)
        match wire.type:
            case "message_start" if wire.message is not None:
                self._served = wire.message.model
                self._add_usage(wire.message.usage)
            case "content_block_start" if wire.content_block is not None:
                self._blocks[wire.index] = block = wire.content_block
                self._parts[wire.index] = [block.text]
                return block.text if block.type == "text" else ""
            case "content_block_delta" if wire.delta is not None:
                return self._add_delta(wire.index, wire.delta)
            case "message_delta":
                self._stop = (wire.delta.stop_reason if wire.delta else None) or self._stop
                self._add_usage(wire.usage)
            case "message_stop":
                self.done = True
            case "error":
                raise _StreamProblem(
                    "with an error event", error_detail(event.data.encode()), retryable=True
                )
        return ""  # ping, content_block_stop, and types this adapter does not know yet

    def _add_delta(self, index: int, delta: _Delta) -> str:
        block = self._blocks.get(index)
        if block is None:
            raise _StreamProblem(f"with a delta for block {index}, which never started")
        if delta.type == "text_delta" and block.type == "text":
            self._parts[index].append(delta.text)
            return delta.text
        if delta.type == "input_json_delta" and block.type == "tool_use":
            self._parts[index].append(delta.partial_json)
        return ""  # thinking and signature deltas: their blocks are dropped

    def _add_usage(self, usage: _Usage | None) -> None:
        """Merge ``usage`` in: ``message_delta`` counts are cumulative, so the latest wins."""
        if usage is None:
            return
        mine = msgspec.structs.asdict(self._usage)
        mine.update((k, v) for k, v in msgspec.structs.asdict(usage).items() if v is not None)
        self._usage = _Usage(**mine)

    def response(self) -> ModelResponse:
        """Return what ``complete`` returns for the same message unstreamed."""
        if not self.done:
            raise _StreamProblem("ended before message_stop", retryable=True)
        content: list[_Block] = []
        for index in sorted(self._blocks):
            block, parts = self._blocks[index], self._parts[index]
            if block.type == "text":
                block = _Block(type="text", text="".join(parts))
            elif block.type == "tool_use" and any(parts):
                block = _Block(type="tool_use", id=block.id, name=block.name, input="".join(parts))
            content.append(block)
        reply = _Reply(
            content=content, stop_reason=self._stop, usage=self._usage, model=self._served
        )
        return response_from(reply, self._model)
