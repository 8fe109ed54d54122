"""Where a run waits for a person: the recorder's durable waits (a mixin of
:class:`~actors.replay.recorder.RunRecorder`, apart for size only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from actors.errors import EndOfRecording, RunParked
from eventlog.events import Event, RunResumed, RunWaiting
from eventlog.records import StoredEvent

E = TypeVar("E")


class RecorderWaits:
    """The recorder's wait points; the state and the emitting are the recorder's."""

    run_id: str
    compared: int
    _cursor: int
    _live_allowed: bool

    if TYPE_CHECKING:

        @property
        def replaying(self) -> bool: ...

        def peek(self) -> StoredEvent | None: ...

        def emit(self, event: Event) -> Event: ...

        def flush(self) -> None: ...

    def take_recorded(self, kind: type[E], match: Callable[[E], bool]) -> E | None:
        """Replaying: consume and return the next recorded event if it is a ``kind`` that
        ``match``es — a fact another process wrote into this run (a person's decision) —
        else None. Live: None."""
        rec = self.peek()
        if rec is not None and isinstance(rec.event, kind) and match(rec.event):
            self._cursor += 1
            self.compared += 1
            return rec.event
        return None

    def wait_point(self, waiting: RunWaiting, pending: list[Any]) -> None:
        """A point where the run may park for a person.

        Replaying a recorded ``run_waiting`` here: consume it and return (the caller then
        looks for the decision). Live: record ``waiting`` and raise :class:`RunParked`.

        Raises:
            RunParked: the run parks here (live).
            EndOfRecording: a replay-only run whose recording ends before the wait.
        """
        if self.take_recorded(RunWaiting, lambda _: True) is not None:
            return
        if not self.replaying and not self._live_allowed:
            raise EndOfRecording(f"run {self.run_id}: recording ends before its wait")
        self.emit(waiting)
        raise RunParked(waiting.reason, pending, waiting.question)

    def go_on(self, decided: bool, pending: list[Any], question: str = "") -> None:
        """After a recorded wait: record ``run_resumed`` when it was decided, else park
        again without recording anything (the run is still waiting).

        Raises:
            RunParked: nothing was decided (a replay of a waiting session ends here).
        """
        if not decided:
            self.flush()
            raise RunParked("still waiting", pending, question)
        self.emit(RunResumed(run_id=self.run_id))
