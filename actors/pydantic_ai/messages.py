"""Pydantic AI's messages in clew's terms: a request as a clew ``ModelRequest``, a response
as content blocks, and the exact response back from its recording.

A ``model_requested`` holds the request as clew renders any request (messages of text,
tool-call and tool-result blocks; the agent's instructions as the system prompt; the tool
specs the model was offered), so its hash, ``clew timeline`` and a replay's divergence report
read like a native run's. The fields Pydantic AI fills afresh on every run (timestamps,
its own run and conversation ids) are left out: they differ on a replay that asks the same.

A ``model_responded`` holds the reply's readable blocks followed by one JSON block, the
exact ``ModelResponse`` (:data:`RESPONSE_SUMMARY`): a resume or a replay hands the
framework that object back, field for field, never a re-parse of the readable blocks.

A run's ``message_history`` is recorded in its inputs as Pydantic AI's own JSON of the
messages (:func:`history_json`) and read back (:func:`history_of`) by every execution of
the run, the live one included, so each hands the framework the same conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_core import to_jsonable_python

from actors.errors import UsageError
from actors.models.protocol import ModelRequest, ToolSpec
from eventlog.blocks import (
    ContentBlock,
    JsonBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import Usage

#: The summary of the JSON block that holds a reply's exact ``ModelResponse``.
RESPONSE_SUMMARY: Final = "pydantic_ai.ModelResponse"
#: Fields Pydantic AI fills afresh on each run: never part of a recorded request.
_VOLATILE: Final = frozenset({"timestamp", "run_id", "conversation_id"})
#: Pydantic AI's finish reasons in clew's normalised stop reasons.
_STOP: Final = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_call": "tool_use",
    "content_filter": "error",
    "error": "error",
}


def jsonable(value: Any) -> Any:
    """Return ``value`` as JSON data (a pydantic model, a dataclass … as Pydantic dumps it)."""
    return to_jsonable_python(value)


def _steady(data: Any) -> Any:
    """Return JSON ``data`` without the fields a new run fills afresh (:data:`_VOLATILE`)."""
    if isinstance(data, dict):
        return {k: _steady(v) for k, v in data.items() if k not in _VOLATILE}
    if isinstance(data, list):
        return [_steady(v) for v in data]
    return data


def _user_text(content: Any) -> str:
    return content if isinstance(content, str) else str(_steady(jsonable(content)))


def _request_message(parts: Sequence[Any]) -> tuple[list[Message], list[str]]:
    """Return the clew messages of one ``ModelRequest``'s parts, and its system texts."""
    system: list[str] = []
    user: list[ContentBlock] = []
    tool: list[ContentBlock] = []
    for part in parts:
        if isinstance(part, SystemPromptPart):
            system.append(part.content)
        elif isinstance(part, UserPromptPart):
            user.append(TextBlock(text=_user_text(part.content)))
        elif isinstance(part, ToolReturnPart):
            result = JsonBlock(data=_steady(jsonable(part.content)))
            tool.append(ToolResultBlock(tool_call_id=part.tool_call_id, name=part.tool_name,
                                        content=[result]))  # fmt: skip
        elif isinstance(part, RetryPromptPart):
            text = TextBlock(text=part.model_response())
            if part.tool_name is None:
                user.append(text)
            else:
                tool.append(ToolResultBlock(tool_call_id=part.tool_call_id, name=part.tool_name,
                                            content=[text], is_error=True))  # fmt: skip
        else:
            user.append(JsonBlock(data=_steady(jsonable(part)), summary=type(part).__name__))
    messages = [Message(role="tool", content=tool)] if tool else []
    if user:
        messages.append(Message(role="user", content=user))
    return messages, system


def response_blocks(response: ModelResponse) -> list[ContentBlock]:
    """Return the blocks a ``model_responded`` records of ``response``: the readable ones,
    then the exact response (:data:`RESPONSE_SUMMARY`)."""
    return [*_readable(response), JsonBlock(data=_dump(response), summary=RESPONSE_SUMMARY)]


def _readable(response: ModelResponse) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            blocks.append(TextBlock(text=part.content))
        elif isinstance(part, ToolCallPart):
            blocks.append(ToolCallBlock(id=part.tool_call_id, name=part.tool_name,
                                        arguments=part.args_as_dict()))  # fmt: skip
        else:
            blocks.append(JsonBlock(data=_steady(jsonable(part)), summary=type(part).__name__))
    return blocks


def _dump(response: ModelResponse) -> Any:
    return ModelMessagesTypeAdapter.dump_python([response], mode="json")[0]


def response_of(content: Sequence[ContentBlock]) -> ModelResponse:
    """Return the exact ``ModelResponse`` a recorded ``model_responded`` holds.

    Raises:
        ValueError: the content holds no response (not recorded by this integration).
    """
    for block in reversed(content):
        if isinstance(block, JsonBlock) and block.summary == RESPONSE_SUMMARY:
            (message,) = ModelMessagesTypeAdapter.validate_python([block.data])
            assert isinstance(message, ModelResponse)
            return message
    raise ValueError("the recorded reply holds no Pydantic AI response")


def history_json(history: Sequence[ModelMessage] | None) -> Any:
    """Return a run's ``message_history`` as the JSON its inputs record; None: none (or
    an empty one).

    Raises:
        UsageError: the history is not Pydantic AI messages, or holds a value JSON cannot
            hold (a resume could not give it back).
    """
    if not history:
        return None
    try:
        messages = ModelMessagesTypeAdapter.validate_python(list(history))
        return ModelMessagesTypeAdapter.dump_python(messages, mode="json", warnings="error")
    except (TypeError, ValueError) as e:  # not a list; pydantic validation, serialisation
        raise UsageError(
            f"message_history cannot be recorded, so a resume could not give it back: {e}"
        ) from e


def history_of(data: Any) -> list[ModelMessage]:
    """Return the messages of a ``message_history`` recorded by :func:`history_json`."""
    messages: list[ModelMessage] = ModelMessagesTypeAdapter.validate_python(data)
    return messages


def history_messages(messages: Sequence[ModelMessage]) -> tuple[list[Message], str]:
    """Return the clew messages of a Pydantic AI conversation, and its system prompt (the
    system prompt parts and the last request's instructions)."""
    out: list[Message] = []
    system: list[str] = []
    instructions = ""
    for message in messages:
        if isinstance(message, ModelResponse):
            out.append(Message(role="assistant", content=_readable(message)))
            continue
        converted, texts = _request_message(message.parts)
        out.extend(converted)
        system.extend(texts)
        instructions = message.instructions or instructions
    return out, "\n\n".join([*system, instructions] if instructions else system)


def clew_request(
    model: str,
    role: str,
    messages: Sequence[ModelMessage],
    parameters: ModelRequestParameters,
) -> ModelRequest:
    """Return the clew form of one Pydantic AI model request (what its hash covers)."""
    converted, system = history_messages(messages)
    tools = [
        ToolSpec(name=t.name, description=t.description or "", parameters=t.parameters_json_schema)
        for t in [*parameters.function_tools, *parameters.output_tools]
    ]
    return ModelRequest(model=model, messages=converted, system=system, tools=tools,
                        role=role, phase="agent")  # fmt: skip


def stop_reason(response: ModelResponse) -> str:
    """Return clew's stop reason for ``response``."""
    if response.finish_reason is not None:
        return _STOP.get(response.finish_reason, "end_turn")
    calls = any(isinstance(p, ToolCallPart) for p in response.parts)
    return "tool_use" if calls else "end_turn"


def usage_of(response: ModelResponse) -> Usage:
    """Return clew's usage of one response."""
    u = response.usage
    return Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_read_tokens=u.cache_read_tokens,
        cache_write_tokens=u.cache_write_tokens,
    )
