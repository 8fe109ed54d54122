"""What re-executed runs found, collected thread-safely while a replay or resume runs."""

from __future__ import annotations

import threading

from actors.errors import Divergence


class ReplayLog:
    """Collects, thread-safely, what re-executed runs found (divergences, ends, counts)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Set at the first divergence: a resume's other runs stop before going live.
        self.abort = threading.Event()
        self.divergences: dict[str, Divergence] = {}
        self.ended_early: set[str] = set()
        self.compared: dict[str, int] = {}
        self.executed: list[str] = []

    def started(self, run_id: str) -> None:
        with self._lock:
            self.executed.append(run_id)

    def diverged(self, run_id: str, d: Divergence) -> None:
        with self._lock:
            self.divergences.setdefault(run_id, d)
        self.abort.set()

    def ended(self, run_id: str) -> None:
        with self._lock:
            self.ended_early.add(run_id)

    def stopped(self, run_id: str, e: Exception) -> None:
        """Note why a re-executed run stopped: a divergence, or the recording's end."""
        if isinstance(e, Divergence):
            self.diverged(run_id, e)
        else:
            self.ended(run_id)

    def count(self, run_id: str, n: int) -> None:
        with self._lock:
            self.compared[run_id] = n
