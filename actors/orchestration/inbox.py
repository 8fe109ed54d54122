"""Where workers deliver their results; the Brain takes them in arrival or recorded order."""

from __future__ import annotations

import threading
from collections import deque

import msgspec

from eventlog.packets import WorkerResult


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker actor hands back: its result, and whether a replay stopped it or an
    environment failure interrupted it (then ``interrupted`` says why)."""

    result: WorkerResult
    replay_stopped: bool = False
    interrupted: str | None = None
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

    def take(self, task_id: str | None = None, timeout: float | None = None) -> Delivery:
        """Return the first arrived delivery (or the one for ``task_id``), waiting for it.

        No timeout by default: a worker may legitimately run for a long time (many
        turns of a slow model), and every worker delivers exactly once — its
        ``on_failure`` delivers a failed result if it crashes.
        """
        with self._cond:
            while True:
                for d in self._arrived:
                    if task_id is None or d.result.task_id == task_id:
                        self._arrived.remove(d)
                        return d
                if not self._cond.wait(timeout):
                    raise TimeoutError(f"no worker result for {task_id or 'any task'}")
