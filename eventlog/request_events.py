"""The events of a model request: ``model_requested`` and the texts it refers to.

Kept apart from :mod:`eventlog.events` (which re-exports them) for size only.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import msgspec

from eventlog.blocks import Message
from eventlog.event_base import Level, _Event

__all__ = ["ContentKind", "ContentStored", "ModelRequested"]


class ModelRequested(_Event, frozen=True, kw_only=True, tag="model_requested"):
    """A model call is about to be made. ``request_hash`` covers everything but secrets.

    Two forms (docs/events.md#model_requested). *By value* (v1, and calls whose messages
    are not a conversation's): ``messages`` and ``system`` hold the request's text.
    *By reference* (v2, runs of flow 3+): the request is recorded as what it was built
    from, so a long conversation's log grows linearly: ``tip`` and ``message_count``
    (the messages are the context of the path ending at node ``tip``), ``system_ref`` and
    ``tools_ref`` (content hashes of the system prompt and of the tool specs, whose text a
    ``content_stored`` event of the session holds once), and the sampling settings.
    """

    schema_version: int = 2
    call_index: int
    attempt: int = 1
    model: str
    role: str = ""
    phase: str = ""
    request_hash: str
    messages: list[Message] = msgspec.field(default_factory=list)
    tools: list[str] = msgspec.field(default_factory=list)
    #: The system prompt (covered by the hash too): a replay diff then shows the text.
    system: str = ""
    #: By reference: the node whose path the messages are the context of (None: by value).
    tip: str | None = None
    #: By reference: how many messages the request holds.
    message_count: int | None = None
    #: By reference: the content hash of the system prompt ("" for none).
    system_ref: str = ""
    #: By reference: the content hash of the tool specs, as the model saw them ("" for none).
    tools_ref: str = ""
    max_tokens: int | None = None
    temperature: float | None = None


ContentKind = Literal["system", "tools"]


class ContentStored(_Event, frozen=True, kw_only=True, tag="content_stored"):
    """A large repeated text (a system prompt, a set of tool specs) stored once per
    session, under its content hash: what ``model_requested`` (by reference) refers to.

    A session-level event (no run): written before the first request that refers to it,
    never compared by a replay (whether a run or an earlier one stored it depends on
    timing; the text under a hash never does). ``tools``: the specs as JSON.
    """

    LEVEL: ClassVar[Level] = "debug"
    content_hash: str
    kind: ContentKind
    text: str
