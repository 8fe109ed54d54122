"""What both wire formats share: blocks as text, tool arguments, end reasons, optional fields."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from actors.models.protocol import ModelRequest, ToolSpec
from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    JsonBlock,
    ResultPart,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import EndReason

RAW_ARGUMENTS_KEY = "_raw_arguments"
"""Key holding tool arguments that were not a JSON object, kept verbatim for the tool to refuse."""


def end_reason_for(stop_reason: str) -> EndReason:
    """Return the run end reason a reply with ``stop_reason`` leads to.

    ``max_tokens`` → ``max_output_tokens_recovery`` (the reply was cut off),
    ``error`` (a content filter or refusal) → ``failed``, anything else →
    ``completed``.
    """
    if stop_reason == "max_tokens":
        return "max_output_tokens_recovery"
    if stop_reason == "error":
        return "failed"
    return "completed"


def json_text(data: Any) -> str:
    """Return ``data`` as compact JSON text (what a json block looks like on the wire)."""
    return msgspec.json.encode(data).decode()


def block_text(block: ContentBlock | ResultPart) -> str:
    """Return the text a block is sent as where the wire format has no slot for it."""
    match block:
        case TextBlock(text=text):
            return text
        case JsonBlock(data=data):
            return json_text(data)
        case ArtifactRefBlock(artifact_id=artifact_id, summary=summary):
            return f"[artifact {artifact_id}: {summary}]"
        case ToolCallBlock(id=call_id, name=name, arguments=arguments):
            return f"[tool call {call_id}: {name} {json_text(arguments)}]"
        case ToolResultBlock(tool_call_id=call_id, content=content, is_error=is_error):
            state = "error" if is_error else "result"
            return f"[tool {state} {call_id}: {joined_text(content)}]"
    raise AssertionError(f"unknown block {block!r}")  # pragma: no cover


def joined_text(blocks: Sequence[ContentBlock | ResultPart]) -> str:
    """Return the text of ``blocks``, one block per line."""
    return "\n".join(block_text(b) for b in blocks)


def tool_arguments(raw: Any) -> dict[str, Any]:
    """Return tool-call arguments as an object, whatever shape the provider sent.

    OpenAI-compatible servers send a JSON *string*; some local servers send an
    object. Arguments that are not a JSON object (models do emit broken JSON) are
    kept under ``_raw_arguments`` so the tool fails with a visible error the model
    can correct, instead of the whole call failing.
    """
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            decoded = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return {RAW_ARGUMENTS_KEY: raw}
        if isinstance(decoded, dict):
            return decoded
    return {RAW_ARGUMENTS_KEY: raw if isinstance(raw, str) else json_text(raw)}


def optional_fields(
    request: ModelRequest, wire_tool: Callable[[ToolSpec, dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """Return the body fields a request sends only when set: ``temperature`` and ``tools``.

    Args:
        wire_tool: the provider's shape of one tool, given the tool and its JSON schema
            (an empty object schema for a tool without parameters: both APIs want one).
    """
    fields: dict[str, Any] = {}
    if request.temperature is not None:
        fields["temperature"] = request.temperature
    if request.tools:
        fields["tools"] = [
            wire_tool(tool, tool.parameters or {"type": "object", "properties": {}})
            for tool in request.tools
        ]
    return fields
