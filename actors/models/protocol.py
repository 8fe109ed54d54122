"""The model seam: a provider-neutral request/response and the ``Model`` protocol.

Every call goes through the runtime's recorder, which writes ``model_requested``
(with :func:`request_hash`) before the call and ``model_responded`` /
``model_failed`` after it. Adapters (scripted, OpenAI-compatible, Anthropic)
only map these shapes to and from their wire formats.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import msgspec

from eventlog.blocks import ContentBlock, Message
from eventlog.codec import encode
from eventlog.events import Usage
from eventlog.ids import stable_hash


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a model is told about a tool: name, description, JSON schema of arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)


class ModelSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Sampling settings of one role's model calls; ``None`` keeps the request's default.

    Unset (``None``) fields fall back: a role's to the role it extends, then to the
    request defaults (``max_tokens`` 4096, no ``temperature``).
    """

    max_tokens: int | None = None
    temperature: float | None = None

    def over(self, base: ModelSettings) -> ModelSettings:
        """Return these settings with every unset field taken from ``base``."""
        return ModelSettings(
            max_tokens=self.max_tokens if self.max_tokens is not None else base.max_tokens,
            temperature=self.temperature if self.temperature is not None else base.temperature,
        )


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One model call, provider-neutral. Holds no secrets (keys live in the adapter)."""

    model: str
    messages: list[Message]
    system: str = ""
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    role: str = ""
    phase: str = ""
    max_tokens: int = 4096
    temperature: float | None = None


class ModelResponse(msgspec.Struct, frozen=True, kw_only=True):
    """A model's reply: content blocks (text, tool_call, …), usage, and why it stopped.

    ``stop_reason`` is normalised: ``end_turn``, ``tool_use``, ``max_tokens``,
    ``stop_sequence`` or ``error``.
    """

    content: list[ContentBlock]
    usage: Usage = Usage()
    stop_reason: str = "end_turn"
    model: str = ""


@runtime_checkable
class Model(Protocol):
    """A model client. ``name`` is the spec string recorded in events (``openai:gpt-4o``)."""

    name: str

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request``.

        Raises:
            ModelError: the call failed (after the adapter's own retries, if any).
        """
        ...


def request_hash(request: ModelRequest) -> str:
    """Return the stable hash of ``request``: same prompt, tools and settings → same hash."""
    return stable_hash(encode(request), 24)
