"""The recorded model: every request of a Pydantic AI run goes through clew's recorder.

:class:`RecordedModel` wraps the agent's model (Pydantic AI's ``WrapperModel``, as the
durable-execution wrappers do). A request is recorded as ``model_requested`` (durable
before the model is asked), its reply as ``model_responded`` and ``token_usage``; on a
resume or a replay the recorded reply is handed back and the model is never asked again.
A streamed request is one recorded call too: live, the stream is drained inside the
call; the framework then streams the completed response.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import (
    CompletedStreamedResponse,
    Model,
    ModelRequestParameters,
    StreamedResponse,
)
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

from actors.pydantic_ai.messages import (
    clew_request,
    response_blocks,
    response_of,
    stop_reason,
    usage_of,
)
from actors.recording.framework_run import model_call

if TYPE_CHECKING:
    from actors.recording.bridge import Bridge
    from actors.recording.recorder import RunRecorder
    from eventlog.blocks import ContentBlock
    from eventlog.events import Usage


class RecordedModel(WrapperModel):
    """A model whose every request is recorded (or served from the recording)."""

    def __init__(self, model: Model, bridge: Bridge) -> None:
        super().__init__(model)
        self._bridge = bridge

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        async def ask() -> ModelResponse:
            return await self.wrapped.request(messages, model_settings, model_request_parameters)

        return await self._recorded(messages, model_request_parameters, ask)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        async def ask() -> ModelResponse:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as streamed:
                async for _ in streamed:
                    pass
            return streamed.get()

        response = await self._recorded(messages, model_request_parameters, ask)
        yield CompletedStreamedResponse(response, model_request_parameters=model_request_parameters)

    async def _recorded(
        self,
        messages: list[ModelMessage],
        parameters: ModelRequestParameters,
        ask: Any,
    ) -> ModelResponse:
        bridge = self._bridge
        request = clew_request(self.wrapped.model_name, bridge.role, messages, parameters)

        def live() -> tuple[list[ContentBlock], str, Usage]:
            response: ModelResponse = bridge.on_loop(ask())
            return response_blocks(response), stop_reason(response), usage_of(response)

        def call(rec: RunRecorder) -> ModelResponse:
            return response_of(model_call(rec, request, bridge.role, live).content)

        return await bridge.recorded(call)
