"""A live run's events on their way to the writer: buffered, then committed in groups.

A run's recorder hands every live event to its :class:`CommitBuffer`. The buffer commits
them together, in one group commit (:meth:`~eventlog.writer.Writer.submit_group`: one
transaction, one fsync at ``durability="full"``), when the recorder flushes it — right
before the run does something the log must precede (docs/replay-and-recovery.md, "How
many commits a turn makes") — or at once for the events a run waits, parks, stops or ends
with. A worker's tool turn is 2 commits instead of 7 (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from eventlog.artifact_plan import stored_forms
from eventlog.errors import ClewError
from eventlog.events import (
    Event,
    NodeAppended,
    RunCancelling,
    RunEnded,
    RunWaiting,
    ToolCallFinished,
)
from eventlog.records import AppendRequest, StoredEvent
from eventlog.writer import Writer

#: Events committed at once, with everything buffered before them: the run waits, parks,
#: stops or ends with them — nothing of the run may stay behind in the buffer.
COMMIT_NOW = (RunEnded, RunCancelling, RunWaiting)
#: Seconds a commit is waited for.
COMMIT_TIMEOUT = 120


class CommitBuffer:
    """The live events of one run not committed yet, in emit order.

    ``grouped=False`` commits each event on its own, before :meth:`append` returns (clew
    before issue 17; the log is the same either way, only the commits differ). A replay's
    recorder has no writer: it never appends, and flushing it does nothing.
    """

    def __init__(self, writer: Writer | None, session_id: str, *, grouped: bool = True) -> None:
        self._writer = writer
        self._session_id = session_id
        self._grouped = grouped
        self._requests: list[AppendRequest] = []
        #: What to call once the buffered events are committed (:meth:`append`).
        self._on_commit: list[Callable[[], None]] = []

    def __len__(self) -> int:
        return len(self._requests)

    def append(self, request: AppendRequest, on_commit: Callable[[], None] | None = None) -> Event:
        """Buffer ``request`` (or commit it, not grouped); return its event's stored form.
        ``on_commit`` is called once it is committed (not at all if the commit fails).

        Raises:
            ClewError: a commit failed (the store's error), or there is no writer.
        """
        if self._writer is None:  # pragma: no cover - a live recorder always has a writer
            raise ClewError("a recorder without a writer cannot append")
        event = request.event
        if not self._grouped:
            stored: list[StoredEvent] = self._writer.submit(request).get(timeout=COMMIT_TIMEOUT)
            if on_commit is not None:
                on_commit()
            return stored[-1].event
        self._requests.append(request)
        if on_commit is not None:
            self._on_commit.append(on_commit)
        if isinstance(event, COMMIT_NOW):
            self.flush()
        if isinstance(event, NodeAppended | ToolCallFinished):
            # What the writer will store: the store plans artifacts with this same pure
            # function and writes every planned artifact_created before the event
            # (eventlog.artifact_plan), so this is the committed form.
            threshold = self._writer.store.artifact_threshold
            return stored_forms(self._session_id, event, threshold)[0][-1]
        return event

    def flush(self) -> None:
        """Commit the buffered events in one group commit; return once it committed. The
        recorder calls it before anything the log must precede: a side effect, a wait,
        reading the run's own rows back.

        Raises:
            ClewError: the commit failed (the error a commit per event would have raised).
        """
        if not self._requests:
            return
        requests, self._requests = self._requests, []
        done, self._on_commit = self._on_commit, []
        assert self._writer is not None  # only append buffers, and it needs a writer
        self._writer.submit_group(requests).get(timeout=COMMIT_TIMEOUT)
        for then in done:
            then()

    @contextmanager
    def committing(self) -> Iterator[None]:
        """Flush when the block is left, by an exception too: what the run emitted before
        it failed is committed, then the exception goes on. If that flush fails, its
        error is raised instead (as the emit of a commit-per-event recorder would have)."""
        try:
            yield
        except BaseException:
            self.flush()
            raise
        self.flush()
