"""The events of a LangGraph thread kept in clew (``actors.langgraph.ClewSaver``).

A LangGraph thread is a clew session; each checkpoint LangGraph saves is one
``checkpoint_saved``, each batch of a task's pending writes one ``checkpoint_writes``,
and checkpoints dropped by ``delete_for_runs`` or ``prune`` one ``checkpoints_removed``.
Values stay in LangGraph's own serialisation (``serde.dumps_typed``: a type name and its
bytes), so clew never interprets them. A channel value that extends the value stored
before it (``add_messages``: the old list plus new items) is stored as the increment:
``ChannelBlob.extends`` names the version it extends, and ``data`` holds only the new
items (docs/langgraph.md, "Linear storage").

Kept apart from :mod:`eventlog.events` (which imports them into ``Event``) because
nothing but the LangGraph saver writes them.
"""

from __future__ import annotations

import msgspec

from eventlog.event_base import _Event

#: A LangGraph channel version: LangGraph's savers use strings, its tests ints or floats.
Version = str | int | float


class ChannelBlob(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One channel's value at one version, serialised by the graph's serde.

    ``type`` is ``empty`` for a channel that has no value at this version. With
    ``extends`` set, ``data`` is a msgpack array of the items appended to the value of
    version ``extends`` of the same channel and namespace.
    """

    channel: str
    version: Version
    type: str
    data: bytes = b""
    extends: Version | None = None


class PendingWriteBlob(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One pending write of a task: its index (negative for the special channels)."""

    idx: int
    channel: str
    type: str
    data: bytes


class CheckpointSaved(_Event, frozen=True, kw_only=True, tag="checkpoint_saved"):
    """LangGraph saved a checkpoint of the thread (``put``).

    ``checkpoint`` is the serialised checkpoint without its channel values; ``channels``
    holds the values of the channels whose version is new in it (the others are in
    earlier ``checkpoint_saved`` events of the same namespace). ``metadata`` is the
    serialised metadata; ``step``, ``source`` and ``run_id`` repeat what a reader of the
    log wants to see without decoding it.
    """

    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str
    parent_checkpoint_id: str | None = None
    checkpoint_type: str
    checkpoint: bytes
    metadata_type: str
    metadata: bytes
    channels: list[ChannelBlob] = msgspec.field(default_factory=list)
    step: int | None = None
    source: str = ""
    run_id: str | None = None


class CheckpointWrites(_Event, frozen=True, kw_only=True, tag="checkpoint_writes"):
    """A task's pending writes against one checkpoint (``put_writes``)."""

    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str
    task_id: str
    task_path: str = ""
    writes: list[PendingWriteBlob] = msgspec.field(default_factory=list)


class RemovedCheckpoint(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One checkpoint a removal drops."""

    checkpoint_ns: str = ""
    checkpoint_id: str


class CheckpointsRemoved(_Event, frozen=True, kw_only=True, tag="checkpoints_removed"):
    """Checkpoints of the thread (and their pending writes) are gone from LangGraph's view:
    ``delete_for_runs`` (``reason`` names the runs) or ``prune`` with ``keep_latest``.

    Their channel values stay in the log, where later values may extend them; deleting
    the thread (``delete_thread``) removes everything.
    """

    thread_id: str
    removed: list[RemovedCheckpoint]
    reason: str = ""


GraphEvent = CheckpointSaved | CheckpointWrites | CheckpointsRemoved

#: The classes :mod:`eventlog.events` adds to ``Event`` and ``EVENT_TYPES``.
GRAPH_EVENTS: tuple[type[CheckpointSaved], type[CheckpointWrites], type[CheckpointsRemoved]] = (
    CheckpointSaved,
    CheckpointWrites,
    CheckpointsRemoved,
)

__all__ = [
    "GRAPH_EVENTS",
    "ChannelBlob",
    "CheckpointSaved",
    "CheckpointWrites",
    "CheckpointsRemoved",
    "GraphEvent",
    "PendingWriteBlob",
    "RemovedCheckpoint",
    "Version",
]
