"""The base every event derives from, apart so that :mod:`eventlog.graph_events` can
derive from it too (:mod:`eventlog.events` imports both)."""

from __future__ import annotations

from typing import ClassVar, Literal

import msgspec

Level = Literal["debug", "info", "warning", "error"]


class _Event(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="event_type"):
    """Base of every event; ``LEVEL`` is the row's ``level`` column."""

    LEVEL: ClassVar[Level] = "info"
    schema_version: int = 1
