"""The timeline: a session's events ordered by ``seq`` (never by ``created_at``)."""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable

from eventlog.records import StoredEvent
from projections.folding import ComparedByValue, fold, fold_all

#: ``fold`` is :func:`projections.folding.fold`, exported here like every projection's.
__all__ = ["Timeline", "fold", "rebuild"]


class Timeline(ComparedByValue):
    """Events by seq, filterable by run, agent, type and level.

    Folding an event whose seq is already present is a no-op, so the timeline is
    idempotent; an event older than the newest one is inserted at its place.
    """

    __slots__ = ("_events", "_seqs")
    _COMPARED = ("_events",)

    def __init__(self) -> None:
        self._events: list[StoredEvent] = []
        self._seqs: list[int] = []

    def apply(self, stored: StoredEvent) -> None:
        """Fold one event into the timeline."""
        seqs = self._seqs
        seq = stored.seq
        if not seqs or seq > seqs[-1]:
            seqs.append(seq)
            self._events.append(stored)
            return
        i = bisect.bisect_left(seqs, seq)
        if i < len(seqs) and seqs[i] == seq:
            return
        seqs.insert(i, seq)
        self._events.insert(i, stored)

    def __len__(self) -> int:
        return len(self._events)

    @property
    def events(self) -> list[StoredEvent]:
        """Every event, in seq order."""
        return list(self._events)

    def filter(
        self,
        *,
        run_id: str | None = None,
        agent_id: str | None = None,
        event_types: Collection[str] | None = None,
        levels: Collection[str] | None = None,
        after_seq: int = 0,
    ) -> list[StoredEvent]:
        """Return the events matching every given filter, in seq order."""
        start = bisect.bisect_right(self._seqs, after_seq)
        return [
            e
            for e in self._events[start:]
            if (run_id is None or e.run_id == run_id)
            and (agent_id is None or e.agent_id == agent_id)
            and (event_types is None or e.event_type in event_types)
            and (levels is None or e.level in levels)
        ]

    def run(self, run_id: str) -> list[StoredEvent]:
        """Return one run's events in run_seq order (the order its owner wrote them)."""
        events = [e for e in self._events if e.run_id == run_id]
        events.sort(key=lambda e: e.run_seq or 0)
        return events


def rebuild(events: Iterable[StoredEvent]) -> Timeline:
    """Fold ``events`` into a new timeline."""
    return fold_all(Timeline(), events)
