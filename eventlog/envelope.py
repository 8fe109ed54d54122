"""The envelope columns an event fills in its row: ``event_type``, ``level``,
``node_id``, ``tool_call_id`` — the same for every backend's append."""

from __future__ import annotations

from eventlog.events import (
    ActiveNodeSwitched,
    ArtifactCreated,
    Event,
    InDoubtResolved,
    NodeAppended,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    event_type_of,
    level_of,
)

_TOOL_CALL_EVENTS = (ToolCallStarted, ToolCallFinished, ToolFailed, InDoubtResolved)
#: Events whose ``tool_call_id`` column is filled: the tool call events, and an artifact
#: holding a tool's result.
_TOOL_ID_EVENTS = (*_TOOL_CALL_EVENTS, ArtifactCreated)
_NODE_EVENTS = (NodeAppended, ActiveNodeSwitched, ArtifactCreated)
#: Per event class: (event_type, level, may carry node_id, may carry tool_call_id). Looked
#: up once per event instead of re-deriving the tag and running isinstance chains.
_TYPE_INFO: dict[type, tuple[str, str, bool, bool]] = {}


def type_info(event: Event) -> tuple[str, str, bool, bool]:
    """Return ``(event_type, level, may carry node_id, may carry tool_call_id)``."""
    cls = type(event)
    info = _TYPE_INFO.get(cls)
    if info is None:
        info = (
            event_type_of(event),
            level_of(event),
            cls in _NODE_EVENTS,
            issubclass(cls, _TOOL_ID_EVENTS),
        )
        _TYPE_INFO[cls] = info
    return info


def node_id_of(event: Event) -> str | None:
    """Return the ``node_id`` column of ``event``'s row (the node it adds or names)."""
    if isinstance(event, NodeAppended):
        return event.node.node_id
    if isinstance(event, ActiveNodeSwitched):
        return event.to_node_id
    if isinstance(event, ArtifactCreated):
        return event.node_id
    return None


def tool_call_id_of(event: Event) -> str | None:
    """Return the ``tool_call_id`` column of ``event``'s row."""
    if isinstance(event, _TOOL_ID_EVENTS):
        return event.tool_call_id
    return None
