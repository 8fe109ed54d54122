"""What re-executed runs found, collected thread-safely while a replay or resume runs;
and which exceptions stop a run without being an outcome of it."""

from __future__ import annotations

import threading

import pykka

from actors.errors import Divergence, EndOfRecording, RunInterrupted
from actors.models.storable import safe_text
from eventlog.errors import StoreError, TaskWalError

#: Failures of a run's *environment*: the store (disk full, I/O error, locked past its
#: timeout, the writer stopped), a Task WAL that cannot be read or written, a commit or a
#: task manager's reply that did not come in time (``TimeoutError`` is an ``OSError``).
#: They are never recorded: the run stops as interrupted and a resume finishes it.
_ENVIRONMENT = (StoreError, TaskWalError, OSError, pykka.Timeout)


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


def is_replay_stop(e: BaseException) -> bool:
    """True for the exceptions that end a re-executed run on purpose."""
    return isinstance(e, Divergence | EndOfRecording)


def interruption(e: BaseException) -> RunInterrupted | None:
    """Return ``e`` as a :class:`RunInterrupted` if it is an environment failure, else None.

    Only for exceptions raised by the run's own code (recorder, task board, store reads):
    a tool's or a model's exceptions are outcomes and are recorded before they get here.
    """
    if isinstance(e, RunInterrupted):
        return e
    if isinstance(e, _ENVIRONMENT):
        return RunInterrupted(
            f"the run was interrupted by its environment ({safe_text(str(e)) or type(e).__name__});"
            " nothing of the failure was recorded"
        )
    return None
