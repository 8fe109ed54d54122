"""The coordination contracts: leases (who owns a session now) and the run queue.

A **lease** names a resource — a session id, or ``worker:<owner>`` for a serving
process itself — an owner and an expiry. Taking it succeeds when nobody holds it, when
its lease expired, or when the owner already holds it. The owner renews every lease it
holds in one statement (the heartbeat); a process that dies stops renewing, and after
the ttl its leases are free for another process to take. Expiry is measured on the
clock of the process asking (``time.time`` unless a clock is injected), so hosts sharing
a PostgreSQL coordinator need clocks in step well within the ttl (NTP does that).

A **queued run** is a durable request to run a prompt, in a given or a new session,
with the recipe names (model, tools, team) a process needs to run and later resume it.
Its life: ``queued`` → ``running`` (taken by one owner) → ``done`` (with the run's
outcome); a run whose owner died goes back to a live owner (``adopt``) which resumes
it, or back to ``queued`` when it never started.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from typing import Literal, Protocol

import msgspec

#: Seconds a lease lives without renewal: a dead process's sessions wait this long at
#: most before another process may take them. The heartbeat renews every third of it.
DEFAULT_LEASE_TTL_S = 15.0

#: Where a queued run stands.
QueueStatus = Literal["queued", "running", "done"]


def new_owner_id() -> str:
    """Return a fresh owner id: ``host:pid:random`` (unique even when a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def worker_lease(owner: str) -> str:
    """Return the name of the lease that says the serving process ``owner`` is alive."""
    return f"worker:{owner}"


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """Who holds the resource ``name`` and until when (seconds since the epoch)."""

    name: str
    owner: str
    expires_at: float


class RunSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What to run: the prompt, the session (None: a new one) and the recipe names."""

    prompt: str
    session_id: str | None = None
    model: str = "demo"
    tools: str | None = None
    team: str | None = None


class QueuedRun(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the run queue."""

    id: int
    prompt: str
    session_id: str | None
    model: str
    tools: str | None
    team: str | None
    status: QueueStatus
    owner: str | None
    attempts: int
    #: Main runs the session had when this run was taken (its run is the next one).
    runs_before: int | None
    #: The run's outcome once done (``completed``, ``failed``, …, or ``error``).
    outcome: str | None
    run_id: str | None
    error: str | None
    submitted_at: float
    started_at: float | None
    finished_at: float | None

    def spec(self) -> RunSpec:
        """Return what this row asks to run."""
        return RunSpec(
            prompt=self.prompt,
            session_id=self.session_id,
            model=self.model,
            tools=self.tools,
            team=self.team,
        )


class QueueDepth(msgspec.Struct, frozen=True, kw_only=True):
    """How many rows of the queue are in each status, and the oldest one waiting."""

    queued: int
    running: int
    #: None when not counted (``depth(count_done=False)``).
    done: int | None
    #: The oldest ``queued`` row (None: nothing waits).
    oldest_queued: QueuedRun | None


class Leases(Protocol):
    """Leases on named resources (sessions, serving processes) with expiry."""

    def acquire(self, name: str, owner: str, ttl: float) -> bool:
        """Take or extend the lease on ``name``; False when another owner holds it."""
        ...

    def renew(self, owner: str, ttl: float) -> set[str]:
        """Extend every lease ``owner`` holds by ``ttl``; return their names."""
        ...

    def release(self, name: str, owner: str) -> None:
        """Drop ``owner``'s lease on ``name`` (nothing if another owner holds it)."""
        ...

    def release_all(self, owner: str) -> None:
        """Drop every lease ``owner`` holds."""
        ...

    def holder(self, name: str) -> Lease | None:
        """Return the live (unexpired) lease on ``name``, if any."""
        ...

    def expired(self) -> list[Lease]:
        """Return every lease whose expiry has passed (free for the taking)."""
        ...


class RunQueue(Protocol):
    """The durable queue of runs that serving processes take."""

    def submit(self, spec: RunSpec) -> QueuedRun:
        """Enqueue ``spec``; return its row (status ``queued``)."""
        ...

    def take(self, owner: str) -> QueuedRun | None:
        """Give the oldest queued run that can start now to ``owner`` (``running``).

        A run of a session that has a run ``running`` or a live lease of another owner
        waits. Two owners never take the same row.
        """
        ...

    def attach(self, run_id: int, owner: str, session_id: str, runs_before: int) -> None:
        """Record the session ``owner`` runs the queued run in, and its main runs so far."""
        ...

    def finish(
        self, run_id: int, owner: str, outcome: str, *, run: str | None, error: str | None
    ) -> None:
        """Mark the queued run done with the run's ``outcome`` (only by its owner)."""
        ...

    def requeue(self, run_id: int, owner: str) -> None:
        """Put a run ``owner`` took back in the queue (it did not start)."""
        ...

    def orphans(self) -> list[QueuedRun]:
        """Return the ``running`` rows whose owner's worker lease is gone or expired."""
        ...

    def adopt(self, run_id: int, dead_owner: str, owner: str) -> QueuedRun | None:
        """Move an orphaned row from ``dead_owner`` to ``owner``; None if someone was first."""
        ...

    def get(self, run_id: int) -> QueuedRun | None:
        """Return one row."""
        ...

    def list_runs(self, limit: int = 100) -> list[QueuedRun]:
        """Return the newest ``limit`` rows, oldest first."""
        ...

    def depth(self, *, count_done: bool = True) -> QueueDepth:
        """Return the rows by status and the oldest queued one (``count_done`` False:
        the done rows, as many as the queue's history, are not counted)."""
        ...

    def listen(self, wake: Callable[[], None]) -> bool:
        """Call ``wake`` (from a thread of its own) whenever a run may have become
        takeable — submitted, put back, or a run of its session finished — from any
        process. Returns False when this queue cannot tell: the caller polls."""
        ...


class Coordinator(Leases, RunQueue, Protocol):
    """Leases and the run queue in one database (one transaction can read both)."""

    #: Where it lives: the coordination file's path or the database URL (no password).
    location: str

    def close(self) -> None:
        """Close its connections."""
        ...
