"""A main run in progress: watch it, stream it, await it, cancel it.

:meth:`Session.start` checks and locks (raising at once what ``run`` would raise before
writing anything), then runs the main run on a thread of its own and returns a
:class:`RunHandle`. ``Session.run`` is ``start(...).result()``.

The stream is fed by the writer's commit listener: every event of the session committed
from the run's start, in ``seq`` order, reaches the stream before the run goes on — so
the stream is the run's log, with no gap — interleaved with the ephemeral
:class:`TextDelta` pieces of streaming models once someone watches.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import AsyncGenerator, Generator
from typing import Final

from actors.models.protocol import TextDelta
from actors.orchestration.main_run import RunOutcome
from actors.runtime import aio, control
from actors.runtime.runs import PreparedRun, execute_prepared
from eventlog.ids import session_of
from eventlog.logs import get_logger
from eventlog.records import StoredEvent

log = get_logger("clew.run")

#: What a run's stream yields: committed events and text pieces.
StreamItem = StoredEvent | TextDelta

#: After Ctrl-C, how long ``result()``/``stream()`` wait for the run to record its
#: cancellation before the ``KeyboardInterrupt`` goes on (a second Ctrl-C stops waiting).
INTERRUPT_WAIT_S: Final = 10.0

_END: Final = object()


class RunHandle:
    """One main run in progress (or finished). Thread-safe; one consumer of ``stream``."""

    def __init__(self, prepared: PreparedRun, *, watch: bool = True) -> None:
        self.session_id: str = prepared.session_id
        #: The main run's id (``<session>:brain:r<n>``).
        self.run_id: str = prepared.request.run_id
        self._prepared = prepared
        self._engine = prepared.engine
        self._scope = prepared.env.cancel
        self._done = threading.Event()
        self._outcome: RunOutcome | None = None
        self._error: BaseException | None = None
        self._items: queue.SimpleQueue[object] | None = queue.SimpleQueue() if watch else None
        self._unsubscribe = (
            self._engine.writer.subscribe(self._on_commit) if watch else (lambda: None)
        )
        # A request an earlier run did not pick up is not for this one.
        control.clear(self._engine.home, self.session_id)
        self._thread = threading.Thread(
            target=self._main, name=f"clew-run-{self.session_id}", daemon=True
        )
        self._engine.runs.add(self)
        self._thread.start()
        threading.Thread(
            target=self._poll_requests, name=f"clew-control-{self.session_id}", daemon=True
        ).start()

    def __repr__(self) -> str:
        state = "done" if self._done.is_set() else "running"
        return f"RunHandle({self.run_id!r}, {state})"

    # --- the run's thread ----------------------------------------------------------------

    def _main(self) -> None:
        try:
            self._outcome = execute_prepared(self._prepared)
        except BaseException as e:  # handed to whoever awaits the result
            self._error = e
        finally:
            self._unsubscribe()
            if self._items is not None:
                self._items.put(_END)
            self._engine.runs.discard(self)
            self._done.set()

    def _on_commit(self, events: list[StoredEvent]) -> None:
        assert self._items is not None
        sid = self.session_id
        for ev in events:
            if session_of(ev.event_id) == sid:
                self._items.put(ev)

    def _on_delta(self, delta: TextDelta) -> None:
        assert self._items is not None
        self._items.put(delta)

    def _poll_requests(self) -> None:
        """Pick up a cancel request from another process (``clew cancel``)."""
        home = self._engine.home
        while not self._done.wait(control.POLL_S):
            reason = control.take_cancel_request(home, self.session_id)
            if reason is not None:
                self._scope.cancel(reason, "external")

    # --- the public API ------------------------------------------------------------------

    def done(self) -> bool:
        """True once the run ended (whatever its outcome)."""
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        """True once the run was asked to stop (it may still be winding down)."""
        return self._scope.cancelled

    def cancel(self, reason: str = "cancelled by the caller") -> bool:
        """Ask the run to stop; return False if it already was (or has ended).

        The run stops at its next safe point — between steps, or at once in a model
        call, while a running tool is asked to stop (``ToolContext.cancelled``) and has
        a grace second to return — and ends with ``run_ended(status="cancelled")``.
        """
        return self._cancel(reason, "handle")

    def _cancel(self, reason: str, source: str) -> bool:
        if self._done.is_set():
            return False
        log.info("run_cancel_requested", session_id=self.session_id, reason=reason, source=source)
        return self._scope.cancel(reason, source)

    def result(self, timeout: float | None = None) -> RunOutcome:
        """Wait for the run to end; return its outcome.

        Ctrl-C while waiting cancels the run (recorded as cancelled, source
        ``interrupt``), waits for that to be recorded, and raises ``KeyboardInterrupt``.

        Raises:
            TimeoutError: the run did not end within ``timeout`` seconds (it goes on).
            ClewError: what the run raised (a store failure …).
        """
        try:
            if not self._done.wait(timeout):
                raise TimeoutError(f"run {self.run_id} did not end within {timeout:g} s")
        except KeyboardInterrupt:
            self._interrupted()
            raise
        if self._error is not None:
            raise self._error
        assert self._outcome is not None
        return self._outcome

    def stream(self) -> Generator[StreamItem, None, None]:
        """Yield the run's committed events (``StoredEvent``, in ``seq`` order, none
        missing) interleaved with ``TextDelta`` pieces of streaming models; end when the
        run ends. Events committed before the call are yielded first; pieces flow from
        the call on. One consumer only.

        Raises:
            RuntimeError: the run was started without watching (``Session.run``).
        """
        items = self._items
        if items is None:
            raise RuntimeError("this run was started without a stream (use Session.start)")
        self._prepared.env.on_delta = self._on_delta
        try:
            while (item := items.get()) is not _END:
                yield item  # type: ignore[misc]
        except KeyboardInterrupt:
            self._interrupted()
            raise
        finally:
            self._prepared.env.on_delta = None

    async def aresult(self) -> RunOutcome:
        """Await the run's end without blocking the event loop; return its outcome.

        Cancelling the awaiting task cancels the run (recorded) before the
        ``CancelledError`` goes on.
        """
        return await aio.aresult(self)

    def astream(self) -> AsyncGenerator[StreamItem, None]:
        """``async`` twin of :meth:`stream`: closing it early stops watching (the run
        goes on); cancelling the task iterating it cancels the run (recorded)."""
        return aio.astream(self)

    def stop(self, reason: str, wait: float) -> None:
        """Cancel the run and wait up to ``wait`` seconds for it to end (closing)."""
        self._cancel(reason, "handle")
        self._done.wait(wait)

    def _interrupted(self) -> None:
        """Ctrl-C in the thread waiting for the run: cancel it and wait for the record."""
        self._cancel("interrupted (Ctrl-C)", "interrupt")
        self._done.wait(INTERRUPT_WAIT_S)
