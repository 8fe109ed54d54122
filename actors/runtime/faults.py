"""The crash-test seam: SIGKILL this process after the k-th commit, before the k-th tool, or
inside the commit that writes the k-th event.

Read from ``CLEW_FAULT_KILL_AFTER_EVENTS`` / ``CLEW_FAULT_KILL_BEFORE_TOOL`` /
``CLEW_FAULT_KILL_INSIDE_COMMIT`` once, at the ``Runtime.from_env`` edge. The crash sweeps
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


class FaultPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Crash-test seam: SIGKILL this process after the k-th committed event, before the k-th
    tool, or inside the transaction writing the k-th event row (SQLite: a group commit is
    then half written and never committed)."""

    kill_after_events: int | None = None
    kill_before_tool: int | None = None
    kill_inside_commit: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FaultPlan:
        """Read the fault variables.

        Raises:
            UsageError: a variable is set but is not a positive whole number.
        """
        after, before, inside = (_count(env, name) for name in FAULT_VARIABLES)
        return cls(kill_after_events=after, kill_before_tool=before, kill_inside_commit=inside)

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
        event row is written: inside its transaction, before COMMIT."""
        k = self.kill_inside_commit
        if k is None:
            return None
        rows = 0

        def hook(step: str) -> None:
            nonlocal rows
            if step != "before_event_row":
                return
            rows += 1
            if rows >= k:
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
