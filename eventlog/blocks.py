"""Provider-neutral content blocks: a tagged union dispatched on ``type``.

A node's ``content`` and a model reply are lists of these blocks. They are the
only shape content takes inside clew; provider adapters map to and from them.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class TextBlock(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="text"):
    """Plain text."""

    text: str


class JsonBlock(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="json"):
    """A JSON value. Over the store's threshold it is turned into an artifact."""

    data: Any
    summary: str = ""


class ArtifactRefBlock(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="artifact_ref"
):
    """A pointer to an artifact; path/size live in the ``artifacts`` table only."""

    artifact_id: str
    summary: str = ""
    mime_type: str = "application/json"


class ToolCallBlock(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="tool_call"
):
    """A model's request to call a tool; ``id`` pairs it with its tool_result."""

    id: str
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


ResultPart = TextBlock | JsonBlock | ArtifactRefBlock


class ToolResultBlock(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="tool_result"
):
    """The outcome of a tool call. A failed tool still produces one, with ``is_error``."""

    tool_call_id: str
    name: str = ""
    content: list[ResultPart] = msgspec.field(default_factory=list)
    is_error: bool = False


ContentBlock = TextBlock | JsonBlock | ToolCallBlock | ToolResultBlock | ArtifactRefBlock

Role = Literal["user", "assistant", "tool", "system"]


class Message(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One provider-neutral chat message: a role and its content blocks."""

    role: Role
    content: list[ContentBlock]


def text_of(blocks: list[ContentBlock] | list[ResultPart]) -> str:
    """Return the concatenated text of the text blocks in ``blocks``."""
    return "".join(b.text for b in blocks if isinstance(b, TextBlock))
