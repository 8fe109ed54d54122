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
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.models.protocol import ModelRequest, ModelResponse, ToolSpec
from actors.models.providers.http import HttpModel, HttpOptions
from actors.models.providers.mapping import block_text, optional_fields, tool_arguments
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
