"""Where workers deliver their results; the Brain takes them in arrival or recorded order."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, overload

import msgspec

from actors.models.calls import CancelScope
from eventlog.packets import WorkerResult


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker actor hands back: its result, and whether a replay stopped it or an
    environment failure interrupted it (then ``interrupted`` says why); ``waiting``
    holds what a parked worker waits for (its run stays open, ``waiting``)."""

    result: WorkerResult
    replay_stopped: bool = False
    interrupted: str | None = None
    waiting: list[Any] | None = None
    #: The worker's last node (where a later worker of its role may continue its tree).
    tip: str | None = None


class ResultInbox:
    """Where workers deliver results; the Brain takes them in arrival or recorded order."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._arrived: deque[Delivery] = deque()

    def put(self, delivery: Delivery) -> None:
        with self._cond:
            self._arrived.append(delivery)
            self._cond.notify_all()

    @overload
    def take(self, task_id: str | None = None, timeout: float | None = None) -> Delivery: ...

    @overload
    def take(
        self, task_id: str | None, timeout: float | None = None, *, cancel: CancelScope
    ) -> Delivery | None: ...

    def take(
        self,
        task_id: str | None = None,
        timeout: float | None = None,
        *,
        cancel: CancelScope | None = None,
    ) -> Delivery | None:
        """Return the first arrived delivery (or the one for ``task_id``), waiting for it;
        None if ``cancel`` is cancelled first.

        No timeout by default: a worker may legitimately run for a long time (many
        turns of a slow model), and every worker delivers exactly once — its
        ``on_failure`` delivers a failed result if it crashes.
        """
        remove = cancel.on_cancel(self._wake) if cancel is not None else None
        try:
            with self._cond:
                while True:
                    for d in self._arrived:
                        if task_id is None or d.result.task_id == task_id:
                            self._arrived.remove(d)
                            return d
                    if cancel is not None and cancel.cancelled:
                        return None
                    if not self._cond.wait(timeout):
                        raise TimeoutError(f"no worker result for {task_id or 'any task'}")
        finally:
            if remove is not None:
                remove()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()
