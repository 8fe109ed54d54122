"""Hand-built nodes and stored events for the projection tests (no store, no writer)."""

from __future__ import annotations

from typing import Any

from eventlog.blocks import ContentBlock, TextBlock
from eventlog.events import Event, Node, event_type_of, level_of
from eventlog.records import StoredEvent


def node(
    node_id: str,
    parent: str | None,
    role: str = "user",
    *blocks: ContentBlock,
    node_type: str = "message",
) -> Node:
    """Return a node of agent ``a`` holding ``blocks`` (default: one text block of its id)."""
    return Node(
        node_id=node_id,
        parent_id=parent,
        agent_id="a",
        role=role,  # type: ignore[arg-type]
        node_type=node_type,  # type: ignore[arg-type]
        content=list(blocks) or [TextBlock(text=node_id)],
    )


def stored_event(seq: int, event: Event, **envelope: Any) -> StoredEvent:
    """Return ``event`` stored at ``seq``, its type and level derived as the store does.

    ``envelope`` overrides the plain defaults: event id ``s#<seq>``, agent ``a``, no run,
    no run_seq / node_id / tool_call_id, created at ``t<seq>``.
    """
    fields: dict[str, Any] = {
        "event_id": f"s#{seq}",
        "run_seq": None,
        "agent_id": "a",
        "run_id": None,
        "level": level_of(event),
        "node_id": None,
        "tool_call_id": None,
        "created_at": f"t{seq}",
    }
    return StoredEvent(seq=seq, event_type=event_type_of(event), event=event, **(fields | envelope))
