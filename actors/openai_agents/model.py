"""The recorded model: every model call of an Agents SDK run goes through clew's recorder.

:class:`RecordedModel` wraps the model of one agent of the run (the SDK's ``Model``: the
agent's own, or the one its ``RunConfig.model_provider`` resolves). A call —
``get_response`` or ``stream_response`` — is recorded as ``model_requested`` (durable
before the model is asked), its reply as ``model_responded`` and ``token_usage`` under
the agent's name as the role; on a resume or a replay the recorded reply is handed back
and the model is never asked again. A streamed call is one recorded call too: live, its
events go on to the SDK as they come (the stream ends once the reply is recorded, and the
SDK acts on a reply only then); a reply served from the recording is yielded as one
``response.completed`` event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.tool import Tool
from agents.usage import Usage
from openai.types.responses import Response, ResponseCompletedEvent, ResponseUsage
from openai.types.responses.response_prompt_param import ResponsePromptParam

from actors.openai_agents.messages import (
    clew_request,
    response_blocks,
    response_of,
    stop_reason,
    tool_specs,
    usage_of,
)
from actors.recording.framework_run import model_call

if TYPE_CHECKING:
    from actors.recording.bridge import Bridge
    from actors.recording.recorder import RunRecorder
    from eventlog.blocks import ContentBlock
    from eventlog.events import Usage as ClewUsage

#: A live model call: the response, and the stream's events (none for ``get_response``).
Ask = Callable[[], Coroutine[Any, Any, tuple[ModelResponse, list[TResponseStreamEvent]]]]


class RecordedModel(Model):
    """One agent's model whose every call is recorded (or served from the recording)."""

    def __init__(self, model: Model, bridge: Bridge, role: str, name: str) -> None:
        self.wrapped = model
        self._bridge = bridge
        #: The agent's name: the role its calls are recorded under.
        self.role = role
        #: The model's name in ``model_requested`` (what ``clew calls`` shows).
        self.name = name

    async def close(self) -> None:
        await self.wrapped.close()

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        call = _Call(system_instructions, input, model_settings, tools, output_schema,
                     handoffs, tracing, previous_response_id, conversation_id, prompt)  # fmt: skip

        async def ask() -> tuple[ModelResponse, list[TResponseStreamEvent]]:
            return await self.wrapped.get_response(*call.args, **call.ids), []

        response, _ = await self._recorded(call, ask)
        return response

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        #: The live stream's events, as they come (a reply from the recording: none).
        queue: asyncio.Queue[TResponseStreamEvent] = asyncio.Queue()

        call = _Call(system_instructions, input, model_settings, tools, output_schema,
                     handoffs, tracing, previous_response_id, conversation_id, prompt)  # fmt: skip

        async def ask() -> tuple[ModelResponse, list[TResponseStreamEvent]]:
            events: list[TResponseStreamEvent] = []
            stream = self.wrapped.stream_response(*call.args, **call.ids)
            async for event in stream:
                events.append(event)
                queue.put_nowait(event)
            return _completed(events), events

        recorded = asyncio.ensure_future(self._recorded(call, ask))
        # The events go on to the SDK as they come; the SDK acts on the reply (runs its
        # tools) only once this stream ends, which is after the reply is recorded.
        forwarded = 0
        while not recorded.done():
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({getter, recorded}, return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
                break
            forwarded += 1
            yield getter.result()
        while not queue.empty():
            forwarded += 1
            yield queue.get_nowait()
        response, _ = await recorded
        if not forwarded:
            yield _completed_event(response)

    async def _recorded(
        self, asked: _Call, ask: Ask
    ) -> tuple[ModelResponse, list[TResponseStreamEvent]]:
        bridge = self._bridge
        specs = tool_specs(asked.tools, asked.handoffs, asked.output_schema)
        request = clew_request(self.name, self.role, asked.system, asked.input, specs)
        #: The live stream's events (none when the reply comes from the recording).
        streamed: list[TResponseStreamEvent] = []

        def live() -> tuple[list[ContentBlock], str, ClewUsage]:
            response, events = bridge.on_loop(ask())
            streamed.extend(events)
            return response_blocks(response), stop_reason(response), usage_of(response)

        def call(rec: RunRecorder) -> ModelResponse:
            return response_of(model_call(rec, request, self.role, live).content)

        response = await bridge.recorded(call)
        return response, streamed


class _Ids(TypedDict):
    """The keyword arguments of a call of the SDK's ``Model``."""

    previous_response_id: str | None
    conversation_id: str | None
    prompt: ResponsePromptParam | None


@dataclass(frozen=True)
class _Call:
    """The arguments of one call of the SDK's ``Model`` (``get_response``, ``stream_response``)."""

    system: str | None
    input: str | list[TResponseInputItem]
    model_settings: ModelSettings
    tools: list[Tool]
    output_schema: AgentOutputSchemaBase | None
    handoffs: list[Handoff]
    tracing: ModelTracing
    previous_response_id: str | None
    conversation_id: str | None
    prompt: ResponsePromptParam | None

    @property
    def args(
        self,
    ) -> tuple[
        str | None,
        str | list[TResponseInputItem],
        ModelSettings,
        list[Tool],
        AgentOutputSchemaBase | None,
        list[Handoff],
        ModelTracing,
    ]:
        """The positional arguments, in the SDK's order."""
        return (self.system, self.input, self.model_settings, self.tools,
                self.output_schema, self.handoffs, self.tracing)  # fmt: skip

    @property
    def ids(self) -> _Ids:
        """The keyword arguments."""
        return _Ids(previous_response_id=self.previous_response_id,
                    conversation_id=self.conversation_id, prompt=self.prompt)  # fmt: skip


def _completed(events: list[TResponseStreamEvent]) -> ModelResponse:
    """Return the ``ModelResponse`` of a drained stream (its ``response.completed``), as
    the SDK's runner builds it."""
    for event in reversed(events):
        if isinstance(event, ResponseCompletedEvent):
            r = event.response
            u = r.usage
            usage = (
                Usage(
                    requests=1,
                    input_tokens=u.input_tokens,
                    output_tokens=u.output_tokens,
                    total_tokens=u.total_tokens,
                    input_tokens_details=u.input_tokens_details,
                    output_tokens_details=u.output_tokens_details,
                )
                if u is not None
                else Usage(requests=1)
            )
            return ModelResponse(output=list(r.output), usage=usage, response_id=r.id)
    raise ValueError("the model's stream ended without a response.completed event")


def _completed_event(response: ModelResponse) -> ResponseCompletedEvent:
    """Return a ``response.completed`` event holding a recorded ``response``."""
    u = response.usage
    usage = ResponseUsage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        total_tokens=u.total_tokens,
        input_tokens_details=u.input_tokens_details,
        output_tokens_details=u.output_tokens_details,
    )
    data: dict[str, Any] = {
        "id": response.response_id or "resp_recorded",
        "created_at": time.time(),
        "model": "recorded",
        "object": "response",
        "output": response.output,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }
    return ResponseCompletedEvent(
        type="response.completed", sequence_number=0, response=Response.model_construct(**data)
    )
