"""The storage writer: a pykka actor owning the only write connection, with group commit.

Producers call :meth:`Writer.submit` from any thread. The request goes into a FIFO
queue and the actor is woken only if it sleeps (at most one wake-up is outstanding). When it wakes,
the actor drains *everything* queued into one transaction (up to
``max_batch``), commits, and only then resolves each caller's future. One
producer's requests are committed in its submission order, so ``run_seq`` is the
owning actor's program order.

:meth:`Writer.submit_group` queues several requests as one item: they reach the store in
one ``append_batch`` call, so in one transaction and one fsync, never split across two
commits (a run's recorder hands the events of a turn over this way, issue 17).
"""

from __future__ import annotations

import _thread
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pykka

from eventlog.errors import ClewError, ReadOnlyStore, StoreError
from eventlog.logs import get_logger
from eventlog.records import AppendRequest, StoredEvent
from eventlog.store import DeletesSessions, EventStore, KeepsColdFiles, SessionDeletion

log = get_logger("clew.writer")

#: Called after each commit with (events committed so far in total, this batch's events).
CommitHook = Callable[[int, list[StoredEvent]], None]
#: Called after each commit with the batch's stored events, in ``seq`` order per session.
CommitListener = Callable[[list[StoredEvent]], None]


class Wake(msgspec.Struct, frozen=True, tag="wake"):
    """Producer → writer actor: requests are queued; drain them."""


class Flush(msgspec.Struct, frozen=True, tag="flush"):
    """Writer handle → actor: drain, and reply once everything queued before is committed."""


class DeleteSession(msgspec.Struct, frozen=True, tag="delete_session"):
    """Writer handle → actor: commit what is queued, then delete the session for good."""

    session_id: str
    deleted_at: str = ""
    task_wals: int = 0


class MoveToCold(msgspec.Struct, frozen=True, tag="move_to_cold"):
    """Writer handle → actor: commit what is queued, then move an archived session's
    tables to its cold file (a store without cold files: nothing)."""

    session_id: str


#: Every message the writer actor accepts.
WriterMessage = Wake | Flush | DeleteSession | MoveToCold
_WAKE = Wake()
_FLUSH = Flush()


class CommitFuture:
    """The result of one submitted request (or group), available once its transaction
    committed.

    Lighter than a ``pykka.ThreadingFuture`` (which owns a queue per future): a future is
    a raw lock, taken when it is made and released when it settles, so waiting and waking
    are one C call each and a commit wakes only the callers it concerns. It replaced a
    condition shared by every future of a writer (``threading.Condition`` is Python code:
    ``wait`` allocates a lock and ``notify_all`` wakes every waiter, settled or not): a
    sequential append went from 85 to 64 Python calls (docs/performance.md, issue 17).
    """

    __slots__ = ("_done", "_error", "_lock", "_parts", "_value")

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()
        self._done = False
        self._value: list[StoredEvent] | None = None
        self._error: BaseException | None = None
        #: A group's outcome per request, in submission order (None for a single request).
        self._parts: list[list[StoredEvent] | BaseException] | None = None

    def get(self, timeout: float | None = None) -> list[StoredEvent]:
        """Wait for the commit; return the stored events or raise the request's error.

        Raises:
            TimeoutError: not committed within ``timeout`` seconds.
        """
        if not self._done:
            lock = self._lock
            if not lock.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
                raise TimeoutError("the storage writer did not commit in time")
            lock.release()  # open again: another thread may be waiting on this future too
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value

    def done(self) -> bool:
        """True once the request committed or failed."""
        return self._done

    def results(self, timeout: float | None = None) -> list[list[StoredEvent] | BaseException]:
        """Wait for the commit; return each request's outcome, in submission order: its
        stored events (``artifact_created`` first, as :meth:`submit` gives them) or its
        error. A single request's future gives a list of one.

        Raises:
            TimeoutError: not committed within ``timeout`` seconds.
        """
        try:
            value = self.get(timeout)
        except TimeoutError:
            raise
        except BaseException as e:
            if self._parts is None:
                return [e]
        if self._parts is None:
            return [value]
        return list(self._parts)

    def settle_group(self, results: Sequence[list[StoredEvent] | BaseException]) -> None:
        """Record the outcomes of a group's requests: the future gives their stored events
        in order, or raises the first request's error (the group's other requests are
        isolated from it, as in any batch)."""
        self._parts = list(results)
        error = next((r for r in results if isinstance(r, BaseException)), None)
        if error is not None:
            self.settle(error)
        else:
            self.settle([ev for r in results if isinstance(r, list) for ev in r])

    def settle(self, result: list[StoredEvent] | BaseException) -> None:
        """Record the request's outcome and wake whoever waits for it."""
        if isinstance(result, BaseException):
            self._error = result
        else:
            self._value = result
        self._done = True
        self._lock.release()


class _WakeFlag:
    """Whether a wake-up of the writer actor is outstanding: a plain attribute read without
    a lock on the fast path, set under ``lock`` (cheaper than ``threading.Event``, whose
    ``set``/``clear`` take a condition each)."""

    __slots__ = ("lock", "pending")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending = False


#: A queued request, or a group of them (one tuple, never split across transactions).
Item = tuple[AppendRequest | tuple[AppendRequest, ...], CommitFuture]


def _size(item: Item) -> int:
    requests = item[0]
    return len(requests) if isinstance(requests, tuple) else 1


class _Listeners:
    """The commit listeners of one writer: copy-on-write, so notifying takes no lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active: tuple[CommitListener, ...] = ()

    def add(self, listener: CommitListener) -> Callable[[], None]:
        with self._lock:
            self.active = (*self.active, listener)

        def remove() -> None:
            with self._lock:
                self.active = tuple(x for x in self.active if x is not listener)

        return remove

    def notify(self, committed: list[StoredEvent]) -> None:
        for listener in self.active:
            try:
                listener(committed)
            except Exception as e:  # a watcher's bug must never stop the writer
                log.error("commit_listener_failed", error=repr(e))


class _WriterActor(pykka.ThreadingActor):
    """The actor body; use :class:`Writer` rather than this class."""

    #: A writer its owner never stops must not keep the interpreter alive. No caller
    #: learns of a commit before it happened, so dying with the process loses nothing
    #: acknowledged (the runtime also stops open writers at exit).
    use_daemon_thread = True

    def __init__(
        self,
        store: EventStore,
        pending: queue.SimpleQueue[Item],
        wake_flag: _WakeFlag,
        max_batch: int,
        after_commit: CommitHook | None,
        listeners: _Listeners,
    ) -> None:
        super().__init__()
        self._listeners = listeners
        self._store = store
        self._pending = pending
        self._wake_flag = wake_flag
        self._max_batch = max_batch
        self._after_commit = after_commit
        self._committed = 0
        #: An item taken from the queue that did not fit the previous batch.
        self._carry: Item | None = None

    def on_receive(self, message: WriterMessage) -> int | bool | SessionDeletion:
        match message:
            case MoveToCold(session_id=sid):
                self._wake_flag.pending = False
                self._drain()
                return isinstance(self._store, KeepsColdFiles) and self._store.move_to_cold(sid)
            case DeleteSession(session_id=sid, deleted_at=at, task_wals=wals):
                # Everything queued before the deletion commits first (or fails with it).
                self._wake_flag.pending = False
                self._drain()
                if not isinstance(self._store, DeletesSessions):
                    raise StoreError("this store cannot delete sessions")
                return self._store.delete_session(sid, deleted_at=at, task_wals=wals)
            case Wake() | Flush():
                # Clear the flag *before* draining: a producer that enqueues after this
                # point either sees the flag clear (and wakes us again) or is drained now.
                self._wake_flag.pending = False
                self._drain()
                return self._committed
        raise StoreError(f"writer: unknown message {message!r}")

    def on_stop(self) -> None:
        self._wake_flag.pending = False
        self._drain()
        self._store.close()

    def on_failure(self, *args: Any) -> None:
        self._fail_pending(StoreError("the storage writer crashed"))
        self._store.close()

    def _fail_pending(self, error: ClewError) -> None:
        batch: list[Item] = [self._carry] if self._carry is not None else []
        self._carry = None
        while True:
            try:
                batch.append(self._pending.get_nowait())
            except queue.Empty:
                break
        self._settle(batch, [error] * sum(map(_size, batch)))

    def _settle(
        self, batch: list[Item], results: Sequence[list[StoredEvent] | BaseException]
    ) -> None:
        """Settle every future of ``batch``, newest first: a producer pipelining requests
        waits on its oldest, so it wakes once per batch, when its newer ones are settled.

        ``results`` holds one outcome per request, a group's requests side by side."""
        end = len(results)
        for requests, fut in reversed(batch):
            if isinstance(requests, tuple):
                start = end - len(requests)
                fut.settle_group(results[start:end])
                end = start
            else:
                end -= 1
                fut.settle(results[end])

    def _take_batch(self) -> tuple[list[Item], list[AppendRequest]]:
        """Take up to ``max_batch`` requests from the queue; a group is never split (one
        larger than ``max_batch`` makes a batch of its own)."""
        batch: list[Item] = []
        requests: list[AppendRequest] = []
        while len(requests) < self._max_batch:
            item = self._carry
            if item is not None:
                self._carry = None
            else:
                try:
                    item = self._pending.get_nowait()
                except queue.Empty:
                    break
            queued = item[0]
            if not isinstance(queued, tuple):
                requests.append(queued)
            elif batch and len(requests) + len(queued) > self._max_batch:
                self._carry = item  # the next batch starts with it
                break
            else:
                requests.extend(queued)
            batch.append(item)
        return batch, requests

    def _drain(self) -> None:
        while True:
            batch, requests = self._take_batch()
            if not batch:
                return
            try:
                results = self._store.append_batch(requests)
            except Exception as e:
                # append_batch settles every failure it expects into the results; getting
                # here means the write connection is in an unknown state. The drained
                # batch is no longer in the queue, so on_failure would not fail it: fail
                # it now (its callers would otherwise wait for their timeout), then crash.
                failed = StoreError(f"the storage writer failed: {e!r}")
                self._settle(batch, [failed] * len(requests))
                raise
            committed = [ev for result in results if isinstance(result, list) for ev in result]
            self._committed += len(committed)
            if self._after_commit is not None and committed:
                # Runs after COMMIT returned and before any caller learns of it: the
                # crash tests kill the process here ("right after the k-th commit").
                self._after_commit(self._committed, committed)
            if committed and self._listeners.active:
                # Before the callers learn of the commit: a run's watcher sees an event
                # before the run goes on, so it never sees a later one first.
                self._listeners.notify(committed)
            self._settle(batch, results)


class Writer:
    """Handle to the storage writer actor. Thread-safe; share one per store."""

    def __init__(
        self,
        store: EventStore,
        *,
        max_batch: int = 2000,
        after_commit: CommitHook | None = None,
        read_only: bool = False,
    ) -> None:
        """Start the writer actor on ``store``.

        Args:
            max_batch: most requests per transaction; bounds a commit's latency.
            after_commit: test/fault-injection seam, see :data:`CommitHook`.
            read_only: start no actor; every submit is refused with ``ReadOnlyStore``
                (the handle of a store opened read-only).
        """
        self.store = store
        self._pending: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self._wake_flag = _WakeFlag()
        self._read_only = read_only
        self._ref: pykka.ActorRef[Any] | None = None
        self._listeners = _Listeners()
        if not read_only:
            self._ref = _WriterActor.start(
                store,
                self._pending,
                self._wake_flag,
                max_batch,
                after_commit,
                self._listeners,
            )
        self._stopped = read_only

    def subscribe(self, listener: CommitListener) -> Callable[[], None]:
        """Call ``listener`` after every commit with the committed events; return the
        function that unsubscribes it.

        The listener runs on the writer's thread, after the commit and before any caller
        learns of it: it must be quick (put the events on a queue) and never block. An
        exception from it is logged and ignored. With no listener, a commit costs nothing
        more.
        """
        return self._listeners.add(listener)

    def submit(self, request: AppendRequest) -> CommitFuture:
        """Queue ``request``; the future resolves with its stored events after the commit."""
        return self._queue(request)

    def submit_group(self, requests: Sequence[AppendRequest]) -> CommitFuture:
        """Queue ``requests`` as one group: they reach the store in one ``append_batch``
        call, so they commit in one transaction (one fsync), in this order, possibly with
        other producers' requests but never split across two commits.

        The future resolves with the stored events of every request, in order (each
        request's ``artifact_created`` before its event); if a request failed, it raises
        that request's error, and :meth:`CommitFuture.results` gives each request's
        outcome. A failing request is isolated as in any batch: the others commit.
        """
        if not requests:
            fut = CommitFuture()
            fut.settle_group([])
            return fut
        return self._queue(tuple(requests))

    def _queue(self, requests: AppendRequest | tuple[AppendRequest, ...]) -> CommitFuture:
        fut = CommitFuture()
        if self._stopped:
            if self._read_only:
                raise ReadOnlyStore("the store is open read-only: writing is refused")
            raise StoreError("the storage writer is stopped")
        self._pending.put((requests, fut))
        # Lock-free fast path: a set flag means the actor has yet to clear it, and it
        # clears it *before* draining, so this request will be drained. Taking the lock
        # on every submit made 8 producers queue on it (~10% of the 8-producer profile).
        flag = self._wake_flag
        if flag.pending:
            return fut
        with flag.lock:
            if flag.pending:
                return fut
            flag.pending = True
        assert self._ref is not None  # set unless read-only, and read-only is stopped
        try:
            self._ref.tell(_WAKE)
        except pykka.ActorDeadError as e:
            raise StoreError("the storage writer is stopped") from e
        return fut

    def append(self, request: AppendRequest, timeout: float | None = 60.0) -> StoredEvent:
        """Append one event and wait for its commit; return the stored ``request.event`` row.

        Raises:
            ClewError: the append failed (the error of the store, translated).
        """
        stored: list[StoredEvent] = self.submit(request).get(timeout=timeout)
        return stored[-1]

    def flush(self, timeout: float | None = 60.0) -> None:
        """Wait until everything submitted before this call has committed."""
        if self._stopped or self._ref is None:
            return
        self._ref.ask(_FLUSH, timeout=timeout)

    def delete_session(
        self,
        session_id: str,
        timeout: float | None = 60.0,
        *,
        deleted_at: str = "",
        task_wals: int = 0,
    ) -> SessionDeletion:
        """Delete the session for good, on the writer's connection, after everything
        submitted before this call has committed; return what was removed (also recorded
        in the store's ``deleted_sessions``, at ``deleted_at``: the caller's clock).

        This is the one deletion entry point (``ClewSaver.delete_thread`` uses it; a
        ``clew delete`` builds its checks and audit on it).

        Raises:
            ReadOnlyStore: the store is open read-only.
            UnknownSession: no such session.
            StoreError: the writer is stopped, or the store cannot delete sessions.
        """
        if self._read_only:
            raise ReadOnlyStore("the store is open read-only: deleting a session is refused")
        if self._stopped or self._ref is None:
            raise StoreError("the storage writer is stopped")
        try:
            deletion = self._ref.ask(
                DeleteSession(session_id, deleted_at=deleted_at, task_wals=task_wals),
                timeout=timeout,
            )
        except pykka.ActorDeadError as e:
            raise StoreError("the storage writer is stopped") from e
        assert isinstance(deletion, SessionDeletion)
        return deletion

    def move_to_cold(self, session_id: str, timeout: float | None = 60.0) -> bool:
        """Move an archived session's tables to its cold file (SQLite), on the writer's
        connection, after everything submitted before this call has committed; return
        False when there was nothing to move (cold already, or a store without them).

        Raises:
            ReadOnlyStore: the store is open read-only.
            StoreError: the writer is stopped, or the move failed.
        """
        if self._read_only:
            raise ReadOnlyStore("the store is open read-only: moving a session is refused")
        if self._stopped or self._ref is None:
            raise StoreError("the storage writer is stopped")
        try:
            moved = self._ref.ask(MoveToCold(session_id), timeout=timeout)
        except pykka.ActorDeadError as e:
            raise StoreError("the storage writer is stopped") from e
        return bool(moved)

    def stop(self) -> None:
        """Commit what is queued, close the write connection, stop the actor."""
        if self._stopped or self._ref is None:
            self._stopped = True
            return
        self._stopped = True
        try:
            self._ref.stop(timeout=60)
        except pykka.ActorDeadError:
            log.warning("writer_already_dead")
