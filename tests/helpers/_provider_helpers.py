"""Building and sending requests in the provider adapter tests."""

from __future__ import annotations

from typing import Any

from actors.models.protocol import Model, ModelRequest, ModelResponse
from eventlog.blocks import Message, TextBlock


def user(text: str) -> Message:
    """Return a user message of one text block."""
    return Message(role="user", content=[TextBlock(text=text)])


def ask(model: Model, *messages: Message, **fields: Any) -> ModelResponse:
    """Send ``messages`` (and any other request ``fields``) to ``model``; return its reply."""
    return model.complete(ModelRequest(model=model.name, messages=list(messages), **fields))
