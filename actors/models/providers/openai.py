"""The OpenAI Chat Completions adapter: OpenAI itself, Ollama, vLLM, llama.cpp, LM Studio.

Mapping (clew → wire): the system prompt is the first ``system`` message; text,
json (as JSON text) and artifact_ref (as ``[artifact <id>: <summary>]``) blocks
become the message's string content; assistant tool_call blocks become
``tool_calls`` with their ids and JSON-string arguments; each tool_result block
becomes a ``role: tool`` message with its ``tool_call_id`` (an error result's
text starts with ``ERROR: `` — the wire format has no flag for it).

Mapping (wire → clew): ``content`` → a text block, ``tool_calls`` → tool_call
blocks (arguments parsed), a legacy ``function_call`` (older OpenAI-compatible servers)
→ one tool_call block, usage → :class:`Usage` with disjoint buckets
(``input_tokens`` excludes the cached prompt tokens, which are
``cache_read_tokens``), ``finish_reason`` → the normalised stop reason. A choice with no
``message`` (Azure OpenAI's content filter: ``finish_reason: "content_filter"``) is an
empty reply with stop reason ``error`` and its usage kept — the tokens were billed.

Streaming (``stream``): the body asks for ``"stream": true`` and
``stream_options.include_usage``; the chunks' ``delta`` s are gathered — text, tool-call
names, ids and argument fragments by ``index``, the finish reason, the usage chunk — into
the completion a non-streamed call returns, and mapped by the same ``response_from``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import msgspec

from actors.models.protocol import ModelRequest, ModelResponse, StreamItem, ToolSpec
from actors.models.providers.http import HttpModel, HttpOptions, error_detail
from actors.models.providers.mapping import (
    joined_text,
    json_text,
    optional_fields,
    tool_arguments,
)
from actors.models.providers.sse import SseEvent, _StreamProblem, decode_event, stream_reply
from actors.models.windows import known_window
from eventlog.blocks import ContentBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.events import Usage
from eventlog.ids import stable_hash

DEFAULT_BASE_URL = "https://api.openai.com/v1"
ERROR_PREFIX = "ERROR: "

FINISH_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "error",
}


class OpenAIChatModel(HttpModel):
    """A :class:`~actors.models.protocol.Model` speaking the Chat Completions protocol.

    Args:
        model: the provider's model name (``gpt-4o-mini``, ``llama3.2:3b``).
        base_url: up to and including ``/v1``; ``/chat/completions`` is appended.
        api_key: sent as ``Authorization: Bearer``; ``None`` for local servers.
        options: timeout, retry policy and seams.
        context_window: the model's context window in tokens (default: known for
            common models, see ``actors/models/windows.py``).
        max_tokens_param: the body field carrying ``max_tokens``; OpenAI's
            reasoning models want ``max_completion_tokens``.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        options: HttpOptions | None = None,
        context_window: int | None = None,
        max_tokens_param: str = "max_tokens",
    ) -> None:
        self._max_tokens_param = max_tokens_param
        super().__init__(
            "openai",
            model,
            url=base_url.rstrip("/") + "/chat/completions",
            headers={"authorization": f"Bearer {api_key}"} if api_key else {},
            api_key=api_key,
            options=options,
        )
        #: The window clew budgets against (docs/context.md): given, else the model's known one.
        self.context_window = context_window or known_window(model)

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        return chat_payload(self.model, request, self._max_tokens_param)

    def _response(self, data: Any) -> ModelResponse:
        completion = self._convert(data, _Completion)
        if not completion.choices:
            raise self._http.unexpected(data, "no choices")
        return response_from(completion, self.model)

    def stream(self, request: ModelRequest) -> Iterator[StreamItem]:
        """Stream the reply: its text pieces as they come, then what ``complete`` returns.

        Nothing is sent until the first item is asked for.

        Raises:
            ModelError: as ``complete`` raises it before any text was yielded; after,
                ``error_type="StreamInterrupted"`` (the stream was cut or went bad).
        """
        payload = self._payload(request)
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
        return stream_reply(self._http, payload, partial(ChunkReader, self.model), self._response)


# --- clew → wire ------------------------------------------------------------------------


def chat_payload(model: str, request: ModelRequest, max_tokens_param: str) -> dict[str, Any]:
    """Return the Chat Completions body for ``request``."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        messages.extend(wire_messages(message))
    payload: dict[str, Any] = {
        "model": model,
        "messages": messages,
        max_tokens_param: request.max_tokens,
    }
    payload.update(optional_fields(request, _wire_tool))
    return payload


def _wire_tool(tool: ToolSpec, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": schema},
    }


def wire_messages(message: Message) -> list[dict[str, Any]]:
    """Return the wire messages for one clew message (tool results become their own)."""
    out: list[dict[str, Any]] = []
    rest: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            text = joined_text(block.content)
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": block.tool_call_id,
                    "content": ERROR_PREFIX + text if block.is_error else text,
                }
            )
        else:
            rest.append(block)
    if message.role == "assistant":
        calls = [b for b in rest if isinstance(b, ToolCallBlock)]
        texts = [b for b in rest if not isinstance(b, ToolCallBlock)]
        if calls or texts:
            wire: dict[str, Any] = {
                "role": "assistant",
                "content": joined_text(texts) if texts else None,
            }
            if calls:
                wire["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json_text(call.arguments)},
                    }
                    for call in calls
                ]
            out.append(wire)
    elif rest:
        out.append(
            {"role": "system" if message.role == "system" else "user", "content": joined_text(rest)}
        )
    return out


# --- wire → clew ------------------------------------------------------------------------


class _Function(msgspec.Struct):
    name: str = ""
    arguments: Any = None


class _ToolCall(msgspec.Struct):
    id: str | None = None
    function: _Function = msgspec.field(default_factory=_Function)


class _Message(msgspec.Struct):
    content: str | list[Any] | None = None
    tool_calls: list[_ToolCall] | None = None
    refusal: str | None = None
    #: The legacy single call (before ``tool_calls``); it has no id.
    function_call: _Function | None = None


class _Choice(msgspec.Struct):
    # Absent when a content filter stopped the completion (Azure OpenAI).
    message: _Message = msgspec.field(default_factory=_Message)
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None


class _Completion(msgspec.Struct):
    choices: list[_Choice]
    id: str | None = None
    usage: _Usage | None = None
    model: str | None = None


def _content_text(content: str | list[Any] | None) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    # some gateways answer with a list of parts: [{"type": "text", "text": "…"}]
    return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))


def response_from(completion: _Completion, model: str) -> ModelResponse:
    """Map the first choice of a completion to a :class:`ModelResponse`."""
    choice = completion.choices[0]
    message = choice.message
    blocks: list[ContentBlock] = []
    text = _content_text(message.content) or (message.refusal or "")
    if text:
        blocks.append(TextBlock(text=text))
    calls = list(message.tool_calls or [])
    if not calls and message.function_call is not None:
        calls.append(_ToolCall(function=message.function_call))
    for index, call in enumerate(calls):
        blocks.append(
            ToolCallBlock(
                id=call.id or _fallback_call_id(completion.id, call, index),
                name=call.function.name,
                arguments=tool_arguments(call.function.arguments),
            )
        )
    stop_reason = FINISH_REASONS.get(choice.finish_reason or "", "end_turn")
    # Some local servers say "stop" even when they return tool calls.
    if calls and stop_reason == "end_turn":
        stop_reason = "tool_use"
    return ModelResponse(
        content=blocks,
        usage=_usage(completion.usage),
        stop_reason=stop_reason,
        model=completion.model or model,
    )


def _fallback_call_id(completion_id: str | None, call: _ToolCall, index: int) -> str:
    """Return a stable id for a tool call the server sent without one."""
    seed = msgspec.json.encode([completion_id, index, call.function.name, call.function.arguments])
    return f"call_{stable_hash(seed, 16)}"


def _usage(usage: _Usage | None) -> Usage:
    if usage is None:
        return Usage()
    prompt = usage.prompt_tokens or 0
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details else 0
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
    )


# --- streamed: chat.completion.chunk → the same completion --------------------------


class _DeltaFunction(msgspec.Struct):
    name: str | None = None
    arguments: Any = None


class _DeltaCall(msgspec.Struct):
    index: int = 0
    id: str | None = None
    function: _DeltaFunction | None = None


class _Delta(msgspec.Struct):
    content: str | list[Any] | None = None
    refusal: str | None = None
    tool_calls: list[_DeltaCall] | None = None


class _ChunkChoice(msgspec.Struct):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct):
    choices: list[_ChunkChoice] | None = None
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    error: Any = None


class _CallParts:
    """One tool call as its deltas arrive: id and name once, arguments in fragments."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.fragments: list[str] = []
        self.whole: Any = None  # a server that sends the arguments as an object

    def take(self, delta: _DeltaCall) -> None:
        self.id = self.id or delta.id
        function = delta.function or _DeltaFunction()
        self.name = self.name or function.name or ""
        if isinstance(function.arguments, str):
            self.fragments.append(function.arguments)
        elif function.arguments is not None:
            self.whole = function.arguments

    def call(self) -> _ToolCall:
        arguments = self.whole if self.whole is not None else "".join(self.fragments)
        return _ToolCall(id=self.id, function=_Function(name=self.name, arguments=arguments))


class ChunkReader:
    """Gather a Chat Completions stream (first choice) into the completion it streams."""

    def __init__(self, model: str) -> None:
        self.done = False
        self._model = model
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _CallParts] = {}
        self._choice = False
        self._finish: str | None = None
        self._id: str | None = None
        self._served: str | None = None
        self._usage: _Usage | None = None

    def feed(self, event: SseEvent) -> str:
        """Take one event; return the text it adds (a refusal's text, when there is none)."""
        if event.data.strip() == "[DONE]":
            self.done = True
            return ""
        if event.event == "error":
            raise _StreamProblem(
                "with an error event", error_detail(event.data.encode()), retryable=True
            )
        chunk: _Chunk = decode_event(event, _Chunk)
        if chunk.error is not None:
            raise _StreamProblem(
                "with an error event", error_detail(event.data.encode()), retryable=True
            )
        self._id = self._id or chunk.id
        self._served = chunk.model or self._served
        self._usage = chunk.usage or self._usage
        return "".join(self._take(choice) for choice in chunk.choices or () if choice.index == 0)

    def _take(self, choice: _ChunkChoice) -> str:
        self._choice = True
        self._finish = choice.finish_reason or self._finish
        delta = choice.delta or _Delta()
        for call in delta.tool_calls or ():
            self._calls.setdefault(call.index, _CallParts()).take(call)
        text = _content_text(delta.content)
        self._text.append(text)
        self._refusal.append(delta.refusal or "")
        if text or any(self._text):
            return text
        return delta.refusal or ""

    def response(self) -> ModelResponse:
        """Return what ``complete`` returns for the same completion unstreamed."""
        if not self.done and self._finish is None:
            raise _StreamProblem("ended before [DONE]", retryable=True)
        if not self._choice:
            raise _StreamProblem("with no choices")
        calls = [self._calls[index].call() for index in sorted(self._calls)]
        message = _Message(
            content="".join(self._text),
            tool_calls=calls or None,
            refusal="".join(self._refusal) or None,
        )
        choice = _Choice(message=message, finish_reason=self._finish)
        completion = _Completion(
            choices=[choice], id=self._id, usage=self._usage, model=self._served
        )
        return response_from(completion, self._model)
