"""Which checkpoints a ``list`` returns, and which a removal drops (no LangGraph import).

``list`` yields newest first (by checkpoint id, which LangGraph makes sortable), across
the thread's namespaces unless the config names one. ``delete_for_runs`` drops the
checkpoints whose metadata names one of the runs; ``prune(keep_latest)`` all but each
namespace's newest.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from actors.langgraph.thread_log import ThreadLog
from eventlog.events import Event
from eventlog.graph_events import (
    CheckpointSaved,
    CheckpointsRemoved,
    CheckpointWrites,
    RemovedCheckpoint,
)
from eventlog.records import StoredEvent


def _configurable(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not config:
        return {}
    found = config.get("configurable") or {}
    assert isinstance(found, Mapping)
    return found


@dataclass
class ListQuery:
    """The selection of one ``list`` call and how many it may still yield."""

    thread_id: str | None
    ns: str | None
    checkpoint_id: str | None
    before_id: str | None
    limit: int | None
    remaining: int

    @classmethod
    def of(
        cls, config: Mapping[str, Any] | None, before: Mapping[str, Any] | None, limit: int | None
    ) -> ListQuery:
        """Read the selection from ``list``'s arguments."""
        conf = _configurable(config)
        tid, ns, cid = conf.get("thread_id"), conf.get("checkpoint_ns"), conf.get("checkpoint_id")
        bid = _configurable(before).get("checkpoint_id")
        return cls(
            thread_id=str(tid) if tid is not None else None,
            ns=str(ns) if ns is not None else None,
            checkpoint_id=str(cid) if cid else None,
            before_id=str(bid) if bid else None,
            limit=limit,
            remaining=limit if limit is not None else -1,
        )

    def candidates(self, log: ThreadLog) -> Iterator[CheckpointSaved]:
        """The thread's checkpoints this query selects (metadata aside), newest first."""
        events = [
            event
            for ns, saved in log.checkpoints.items()
            if self.ns is None or ns == self.ns
            for event in saved.values()
        ]
        for event in sorted(events, key=lambda e: e.checkpoint_id, reverse=True):
            if self.checkpoint_id and event.checkpoint_id != self.checkpoint_id:
                continue
            if self.before_id and event.checkpoint_id >= self.before_id:
                continue
            yield event

    def done(self) -> bool:
        """True when the limit is reached."""
        return self.limit is not None and self.remaining <= 0

    def count_one(self) -> bool:
        """Count one yielded checkpoint; True when the limit is reached."""
        if self.limit is None:
            return False
        self.remaining -= 1
        return self.remaining <= 0


def removal_for_runs(
    log: ThreadLog, thread_id: str, run_ids: set[str]
) -> CheckpointsRemoved | None:
    """The removal of the thread's checkpoints saved by one of ``run_ids``, or None."""
    gone = [
        RemovedCheckpoint(checkpoint_ns=ns, checkpoint_id=cid)
        for ns, saved in log.checkpoints.items()
        for cid, event in saved.items()
        if event.run_id is not None and event.run_id in run_ids
    ]
    if not gone:
        return None
    reason = "delete_for_runs " + " ".join(sorted(run_ids))
    return CheckpointsRemoved(thread_id=thread_id, removed=gone, reason=reason)


def removal_keep_latest(log: ThreadLog, thread_id: str) -> CheckpointsRemoved | None:
    """The removal of all but each namespace's newest checkpoint, or None."""
    gone = [
        RemovedCheckpoint(checkpoint_ns=ns, checkpoint_id=cid)
        for ns, saved in log.checkpoints.items()
        if saved
        for cid in sorted(saved)[:-1]
    ]
    if not gone:
        return None
    return CheckpointsRemoved(thread_id=thread_id, removed=gone, reason="prune keep_latest")


def copied(events: list[StoredEvent], target_thread_id: str) -> list[Event]:
    """The thread's LangGraph events, re-addressed to ``target_thread_id``, in seq order."""
    out: list[Event] = []
    for stored in events:
        event = stored.event
        if isinstance(event, CheckpointSaved | CheckpointWrites | CheckpointsRemoved):
            out.append(msgspec.structs.replace(event, thread_id=target_thread_id))
    return out
