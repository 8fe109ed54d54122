"""The crash-test seam: SIGKILL this process after the k-th commit, before the k-th tool,
inside the commit that writes the k-th event, or between the two steps of the k-th move of
an archived session to its cold file.

Read from ``CLEW_FAULT_KILL_AFTER_EVENTS`` / ``CLEW_FAULT_KILL_BEFORE_TOOL`` /
``CLEW_FAULT_KILL_INSIDE_COMMIT`` / ``CLEW_FAULT_KILL_BEFORE_COLD_RECORD`` once, at the
``Runtime.from_env`` edge. The crash sweeps
and ``clew demo`` use it to kill a run at a chosen point and prove that ``clew resume``
finishes it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping

import msgspec

from actors.errors import UsageError
from eventlog.errors import quoted
from eventlog.records import StoredEvent
from eventlog.writer import CommitHook

FAULT_VARIABLES = (
    "CLEW_FAULT_KILL_AFTER_EVENTS",
    "CLEW_FAULT_KILL_BEFORE_TOOL",
    "CLEW_FAULT_KILL_INSIDE_COMMIT",
)
#: The kill between the two steps of a move to a cold file (SQLite), apart from the three
#: kills of a run above.
COLD_FAULT_VARIABLE = "CLEW_FAULT_KILL_BEFORE_COLD_RECORD"


class FaultPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Crash-test seam: SIGKILL this process after the k-th committed event, before the k-th
    tool, or inside the transaction writing the k-th event row (SQLite: a group commit is
    then half written and never committed), or once the k-th cold file is written and
    before the main file records it (SQLite: :mod:`eventlog.sqlite.cold`)."""

    kill_after_events: int | None = None
    kill_before_tool: int | None = None
    kill_inside_commit: int | None = None
    kill_before_cold_record: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FaultPlan:
        """Read the fault variables.

        Raises:
            UsageError: a variable is set but is not a positive whole number.
        """
        after, before, inside = (_count(env, name) for name in FAULT_VARIABLES)
        cold = _count(env, COLD_FAULT_VARIABLE)
        return cls(
            kill_after_events=after,
            kill_before_tool=before,
            kill_inside_commit=inside,
            kill_before_cold_record=cold,
        )

    def commit_hook(self) -> CommitHook | None:
        """Return the writer's after-commit hook that kills after ``kill_after_events``."""
        k = self.kill_after_events
        if k is None:
            return None

        def hook(total: int, batch: list[StoredEvent]) -> None:
            if total >= k:
                _kill_self()

        return hook

    def before_tool_hook(self) -> Callable[[], None] | None:
        """Return the hook run before each live tool call that kills at ``kill_before_tool``."""
        k = self.kill_before_tool
        if k is None:
            return None
        started = 0

        def hook() -> None:
            nonlocal started
            started += 1
            if started >= k:
                _kill_self()

        return hook

    def store_hook(self) -> Callable[[str], None] | None:
        """Return the SQLite store's fault hook that kills as the ``kill_inside_commit``-th
        event row is written (inside its transaction, before COMMIT), or between the two
        steps of the ``kill_before_cold_record``-th move to a cold file."""
        limits = {
            "before_event_row": self.kill_inside_commit,
            "cold_file_written": self.kill_before_cold_record,
        }
        if all(k is None for k in limits.values()):
            return None
        seen = dict.fromkeys(limits, 0)

        def hook(step: str) -> None:
            k = limits.get(step)
            if k is None:
                return
            seen[step] += 1
            if seen[step] >= k:
                _kill_self()

        return hook


def _count(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{name} must be a positive integer, not {quoted(raw)}")
    return value


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)
