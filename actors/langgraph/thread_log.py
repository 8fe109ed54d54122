"""What a LangGraph thread's events say: its checkpoints, channel values and writes.

A :class:`ThreadLog` folds a session's ``checkpoint_saved``, ``checkpoint_writes`` and
``checkpoints_removed`` events in ``seq`` order; the saver keeps one per thread it
touched and folds only the events it has not seen yet, so a read costs what was
written since the last one, not the whole history. Nothing here imports LangGraph: the
values stay serialised (a serde type name and its bytes). A value that cannot be rebuilt
(an increment whose base no event stores, one that is not a msgpack array) raises
:class:`~actors.errors.CheckpointDamaged` naming the thread, the seq and what is wrong.
"""

from __future__ import annotations

from collections import OrderedDict

from actors.errors import CheckpointDamaged
from actors.langgraph.linear import increment, rebuild
from eventlog.graph_events import (
    ChannelBlob,
    CheckpointSaved,
    CheckpointsRemoved,
    CheckpointWrites,
    Version,
)
from eventlog.records import StoredEvent

#: A serialised value: the serde's type name and its bytes.
Typed = tuple[str, bytes]
#: (checkpoint_ns, channel, version): a channel value is unique per namespace and version.
BlobKey = tuple[str, str, Version]
#: One stored pending write: task id, channel, serialised value, task path.
StoredWrite = tuple[str, str, Typed, str]

#: Most rebuilt values kept per thread (each up to the size of its channel's value).
_FULL_CACHE = 8


class ThreadLog:
    """The fold of one thread's events (one clew session)."""

    def __init__(self, session_id: str, created_at: str, thread_id: str | None = None) -> None:
        self.session_id = session_id
        #: The LangGraph thread id, for the errors (the session id when not given).
        self.thread_id = thread_id or session_id
        #: The session row's ``created_at``: a thread deleted and made again differs.
        self.created_at = created_at
        self.last_seq = 0
        #: checkpoint_ns → checkpoint_id → the event that saved it.
        self.checkpoints: dict[str, dict[str, CheckpointSaved]] = {}
        self.blobs: dict[BlobKey, ChannelBlob] = {}
        #: The seq of the event that stored each blob (an error names it).
        self.blob_seqs: dict[BlobKey, int] = {}
        #: (checkpoint_ns, channel) → the version stored last (the base of the next one).
        self.latest: dict[tuple[str, str], Version] = {}
        #: (checkpoint_ns, checkpoint_id) → (task_id, idx) → the write.
        self.writes: dict[tuple[str, str], dict[tuple[str, int], StoredWrite]] = {}
        self._full: OrderedDict[BlobKey, bytes] = OrderedDict()

    def apply(self, stored: StoredEvent) -> None:
        """Fold one event of the session (events of other types are ignored)."""
        self.last_seq = stored.seq
        event = stored.event
        if isinstance(event, CheckpointSaved):
            ns = event.checkpoint_ns
            self.checkpoints.setdefault(ns, {})[event.checkpoint_id] = event
            for blob in event.channels:
                self.blobs[key := (ns, blob.channel, blob.version)] = blob
                self.blob_seqs[key] = stored.seq
                self.latest[(ns, blob.channel)] = blob.version
        elif isinstance(event, CheckpointWrites):
            self._apply_writes(event)
        elif isinstance(event, CheckpointsRemoved):
            for gone in event.removed:
                self.checkpoints.get(gone.checkpoint_ns, {}).pop(gone.checkpoint_id, None)
                self.writes.pop((gone.checkpoint_ns, gone.checkpoint_id), None)

    def _apply_writes(self, event: CheckpointWrites) -> None:
        stored = self.writes.setdefault((event.checkpoint_ns, event.checkpoint_id), {})
        for w in event.writes:
            key = (event.task_id, w.idx)
            # A regular write is stored once per (task, idx); a special one (negative
            # idx: error, interrupt, resume…) is replaced by a later one.
            if w.idx >= 0 and key in stored:
                continue
            stored[key] = (event.task_id, w.channel, (w.type, w.data), event.task_path)

    def has_write(self, ns: str, checkpoint_id: str, task_id: str, idx: int) -> bool:
        """True when the regular write ``(task_id, idx)`` of the checkpoint is stored."""
        return (task_id, idx) in self.writes.get((ns, checkpoint_id), {})

    def value(self, ns: str, channel: str, version: Version) -> Typed | None:
        """Return the serialised value of ``channel`` at ``version``, or None if absent
        (never stored, or stored as ``empty``).

        Raises:
            CheckpointDamaged: the value is an increment that cannot be rebuilt.
        """
        key = (ns, channel, version)
        blob = self.blobs.get(key)
        if blob is None or blob.type == "empty":
            return None
        if blob.extends is None:
            return blob.type, blob.data
        return blob.type, self._full_bytes(key)

    def _full_bytes(self, key: BlobKey) -> bytes:
        """Rebuild the bytes of an increment: walk back to a whole value, then forward."""
        cached = self._full.get(key)
        if cached is not None:
            self._full.move_to_end(key)
            return cached
        ns, channel, _ = key
        increments: list[bytes] = []
        blob = self.blobs[key]
        base: bytes | None = None
        at = key
        while blob.extends is not None:
            increments.append(blob.data)
            prior = (ns, channel, blob.extends)
            base = self._full.get(prior)
            if base is not None:
                break
            older = self.blobs.get(prior)
            if older is None:
                raise self.damaged(
                    at,
                    f"it extends version {blob.extends}, which no event of the thread stores"
                    " (an event was removed)",
                )
            blob, at = older, prior
        if base is None:
            base = blob.data
        try:
            full = rebuild(base, increments[::-1])
        except ValueError as e:
            raise self.damaged(key, f"it cannot be rebuilt: {e}") from e
        self._full[key] = full
        if len(self._full) > _FULL_CACHE:
            self._full.popitem(last=False)
        return full

    def damaged(self, key: BlobKey, what: str) -> CheckpointDamaged:
        """Return the error saying the stored value ``key`` is damaged and how."""
        ns, channel, version = key
        where = f" in namespace {ns!r}" if ns else ""
        return CheckpointDamaged(
            f"LangGraph thread {self.thread_id!r} (session {self.session_id}): the value of"
            f" channel {channel!r}{where} at version {version}, stored at seq"
            f" {self.blob_seqs.get(key, '?')}, is damaged: {what}"
        )

    def encode(self, ns: str, channel: str, version: Version, typed: Typed) -> ChannelBlob:
        """Return the blob to store for ``channel``'s new value: the increment over the
        version stored last when the new value extends it, else the whole value."""
        kind, data = typed
        prev = self.latest.get((ns, channel))
        if prev is not None and kind == "msgpack":
            old = self.value(ns, channel, prev)
            if old is not None and old[0] == "msgpack":
                inc = increment(old[1], data)
                if inc is not None:
                    self._full[(ns, channel, version)] = data
                    return ChannelBlob(
                        channel=channel, version=version, type=kind, data=inc, extends=prev
                    )
        return ChannelBlob(channel=channel, version=version, type=kind, data=data)
