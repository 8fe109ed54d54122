"""The time seam: every timestamp written into an event comes from a ``Clock``."""

from __future__ import annotations

import datetime as _dt
import threading
from typing import Protocol


class Clock(Protocol):
    """Source of wall-clock timestamps written into events."""

    def now(self) -> str:
        """Return the current time as an ISO-8601 UTC string with microseconds."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> str:
        return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


class ManualClock:
    """A deterministic clock for tests: starts at ``start`` and ticks ``step_us`` per call."""

    def __init__(self, start: str = "2026-01-01T00:00:00+00:00", step_us: int = 1000) -> None:
        self._t = _dt.datetime.fromisoformat(start)
        self._step = _dt.timedelta(microseconds=step_us)
        self._lock = threading.Lock()

    def now(self) -> str:
        with self._lock:
            self._t += self._step
            return self._t.isoformat(timespec="microseconds")
