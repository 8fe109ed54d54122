"""The Agents SDK's items in clew's terms: a model call as a clew ``ModelRequest``, a reply
as content blocks, and the exact reply back from its recording.

A ``model_requested`` holds the call as clew renders any request (the input items as
messages of text, tool-call and tool-result blocks; the agent's instructions as the
system prompt; the function tools, handoffs and output schema the model was offered as
tool specs), so its hash, ``clew timeline`` and a replay's divergence report read like a
native run's. A ``model_responded`` holds the reply's readable blocks followed by one JSON
block, the exact ``ModelResponse`` (:data:`RESPONSE_SUMMARY`): a resume or a replay hands
the SDK that object back, field for field, never a re-parse of the readable blocks.

A run's input given as a list of items is recorded in its inputs as JSON
(:func:`run_input`): the items as given, a pydantic one as it dumps itself
(``model_dump(mode="json", exclude_unset=True)``, as the OpenAI client sends it); the
text of its last user message is the run's prompt.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse
from agents.tool import FunctionTool, Tool
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from actors.errors import UsageError
from actors.models.protocol import ModelRequest, ToolSpec
from eventlog.blocks import (
    ContentBlock,
    JsonBlock,
    Message,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import Usage

#: The summary of the JSON block that holds a reply's exact ``ModelResponse``.
RESPONSE_SUMMARY: Final = "openai_agents.ModelResponse"
#: The tool spec name under which a request records its output schema.
OUTPUT_SPEC: Final = "output_schema"

_RESPONSE: Final = TypeAdapter(ModelResponse)
#: The SDK's message roles in clew's (a ``developer`` message is a system message).
_ROLES: Final[dict[str, Role]] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


def jsonable(value: Any) -> Any:
    """Return ``value`` as JSON data (a pydantic model, a dataclass … as Pydantic dumps it)."""
    return to_jsonable_python(value, fallback=str)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _arguments(raw: Any) -> dict[str, Any]:
    """Return a function call's arguments (a JSON string) as a dict."""
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_value": parsed}


def _message_of(item: dict[str, Any]) -> Message:
    """Return the clew message of one input item (a message, a call, a call's output)."""
    kind = item.get("type")
    if kind == "function_call":
        call = ToolCallBlock(
            id=str(item.get("call_id", "")),
            name=str(item.get("name", "")),
            arguments=_arguments(item.get("arguments")),
        )
        return Message(role="assistant", content=[call])
    if kind == "function_call_output":
        output = item.get("output")
        block: TextBlock | JsonBlock = (
            TextBlock(text=output) if isinstance(output, str) else JsonBlock(data=output)
        )
        result = ToolResultBlock(tool_call_id=str(item.get("call_id", "")), content=[block])
        return Message(role="tool", content=[result])
    role = _ROLES.get(str(item.get("role")))
    if kind in (None, "message") and role is not None:
        return Message(role=role, content=[TextBlock(text=_text(item.get("content")))])
    return Message(role="user", content=[JsonBlock(data=item, summary=str(kind or "item"))])


def input_messages(items: str | Sequence[Any]) -> list[Message]:
    """Return the clew messages of a model call's input (a string, or input items)."""
    if isinstance(items, str):
        return [Message(role="user", content=[TextBlock(text=items)])]
    return [_message_of(jsonable(item)) for item in items]


def run_input(given: str | Sequence[Any]) -> tuple[str, list[Any] | None]:
    """Return a run's prompt and the input items its inputs record (None: the input is a
    string, the prompt itself).

    The items are recorded whole, as JSON (the SDK is given them again, live as on a
    resume); the prompt is the text of the last user message among them: the turn the
    model answers, the run's user node.

    Raises:
        UsageError: the input is not a string or a list of items; the list is empty,
            holds a value JSON cannot hold (a resume could not give it back), or no user
            message with text (nothing is written).
    """
    if isinstance(given, str):
        return given, None
    if not isinstance(given, Sequence):
        raise UsageError(
            f"the input must be a string or a list of items, not {type(given).__name__}"
        )
    items = [_item_json(item, i) for i, item in enumerate(given)]
    if not items:
        raise UsageError("the input list is empty: give a string or at least one item")
    users = [item for item in items if _ROLES.get(str(item.get("role"))) == "user"
             and item.get("type") in (None, "message")]  # fmt: skip
    prompt = _text(users[-1].get("content")) if users else ""
    if not prompt.strip():
        raise UsageError(
            "the input list holds no user message with text: its last one is the run's prompt"
        )
    return prompt, items


def _item_json(item: Any, index: int) -> dict[str, Any]:
    """Return input item ``index`` as the JSON its run records.

    Raises:
        UsageError: it is not an item (a mapping, a pydantic model), or holds a value
            JSON cannot hold exactly.
    """
    data = _json_of(item, f"input item {index}")
    if not isinstance(data, dict):
        what = type(item).__name__
        raise UsageError(f"input item {index} is not an input item (a mapping) but a {what}")
    try:
        same = msgspec.json.decode(msgspec.json.encode(data)) == data
    except (msgspec.EncodeError, UnicodeEncodeError, OverflowError, TypeError) as e:
        same, why = False, f": {e}"
    else:
        why = " exactly (a float NaN or infinity?)"
    if not same:
        raise UsageError(
            f"input item {index} cannot be recorded, so a resume could not give it back: "
            f"JSON cannot hold it{why}"
        )
    return data


def _json_of(value: Any, where: str) -> Any:
    """Return ``value`` as JSON data: pydantic models dumped, mappings and sequences
    walked; a value of any other type raises :class:`UsageError` naming ``where``."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_unset=True)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise UsageError(f"{where} cannot be recorded: a key {key!r} is not a string")
            out[key] = _json_of(v, f"{where}[{key!r}]")
        return out
    if isinstance(value, list | tuple):
        return [_json_of(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise UsageError(
        f"{where} cannot be recorded, so a resume could not give it back:"
        f" a {type(value).__name__} is not JSON"
    )


def tool_specs(
    tools: Sequence[Tool], handoffs: Sequence[Handoff], output: AgentOutputSchemaBase | None
) -> list[ToolSpec]:
    """Return what the model was offered as tool specs: function tools, handoffs (as the
    SDK offers them: tools named ``transfer_to_…``), then the output schema."""
    specs = [
        ToolSpec(name=t.name, description=t.description, parameters=t.params_json_schema)
        if isinstance(t, FunctionTool)
        else ToolSpec(name=getattr(t, "name", type(t).__name__), description=type(t).__name__)
        for t in tools
    ]
    specs += [
        ToolSpec(name=h.tool_name, description=h.tool_description, parameters=h.input_json_schema)
        for h in handoffs
    ]
    if output is not None and not output.is_plain_text():
        specs.append(
            ToolSpec(name=OUTPUT_SPEC, description=output.name(), parameters=output.json_schema())
        )
    return specs


def clew_request(
    model: str,
    role: str,
    system: str | None,
    items: str | Sequence[Any],
    specs: list[ToolSpec],
) -> ModelRequest:
    """Return the clew form of one model call (what its hash covers)."""
    return ModelRequest(
        model=model,
        messages=input_messages(items),
        system=system or "",
        tools=specs,
        role=role,
        phase="agent",
    )


def response_blocks(response: ModelResponse) -> list[ContentBlock]:
    """Return the blocks a ``model_responded`` records of ``response``: the readable ones,
    then the exact response (:data:`RESPONSE_SUMMARY`)."""
    blocks: list[ContentBlock] = []
    for item in response.output:
        data = jsonable(item)
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "message":
            blocks.append(TextBlock(text=_text(data.get("content"))))
        elif kind == "function_call":
            blocks.append(
                ToolCallBlock(
                    id=str(data.get("call_id", "")),
                    name=str(data["name"]),
                    arguments=_arguments(data.get("arguments")),
                )
            )
        else:
            blocks.append(JsonBlock(data=data, summary=str(kind or type(item).__name__)))
    blocks.append(
        JsonBlock(data=_RESPONSE.dump_python(response, mode="json"), summary=RESPONSE_SUMMARY)
    )
    return blocks


def response_of(content: Sequence[ContentBlock]) -> ModelResponse:
    """Return the exact ``ModelResponse`` a recorded ``model_responded`` holds.

    Raises:
        ValueError: the content holds no response (not recorded by this integration).
    """
    for block in reversed(content):
        if isinstance(block, JsonBlock) and block.summary == RESPONSE_SUMMARY:
            return _RESPONSE.validate_python(block.data)
    raise ValueError("the recorded reply holds no Agents SDK response")


def stop_reason(response: ModelResponse) -> str:
    """Return clew's stop reason for ``response``: ``tool_use`` when it calls a tool."""
    calls = any(getattr(item, "type", "") == "function_call" for item in response.output)
    return "tool_use" if calls else "end_turn"


def usage_of(response: ModelResponse) -> Usage:
    """Return clew's usage of one response."""
    u = response.usage
    cached = getattr(u.input_tokens_details, "cached_tokens", 0) or 0
    return Usage(
        input_tokens=u.input_tokens, output_tokens=u.output_tokens, cache_read_tokens=cached
    )
