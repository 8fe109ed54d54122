"""The task manager: the one writer of a session's Task WALs, and the owner of their DAGs.

For every change the actor (1) builds the task event and validates it on the DAG,
(2) appends the WAL line and fsyncs it, (3) only then folds it into the in-memory DAG,
(4) replies with the line's seq. A refused change writes nothing; a failed append
leaves the DAG unchanged. So an acknowledged seq is durable, and the DAG the actor
holds is always exactly the replay of its WAL.

One actor serves every named WAL of one session (``plan``, ``review-1``, …). A WAL
whose replay fails is *unavailable*: its operations raise ``TaskWalError`` naming
``file:line``, while the other WALs — and the SQLite conversation — are unaffected.

Callers use :class:`TaskManagerHandle`, a typed synchronous facade over the proxy.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, cast

import msgspec
import pykka
import structlog

from eventlog.clock import Clock, SystemClock
from eventlog.errors import TaskGraphError, TaskWalCorrupt, TaskWalError
from eventlog.ids import validate_session_id
from eventlog.taskwal import (
    TaskCreated,
    TaskDependencyAdded,
    TaskEvent,
    TaskRemoved,
    TaskStatus,
    TaskStatusChanged,
    TaskWal,
    replay_wal,
    validate_wal_name,
    wal_path,
)
from projections.taskdag import Task, TaskDag

__all__ = [
    "AddDependency",
    "CreateTask",
    "RemoveTask",
    "ReplayReport",
    "SetStatus",
    "TaskChange",
    "TaskManager",
    "TaskManagerHandle",
]


# --- requests ---------------------------------------------------------------------------


class _Change(msgspec.Struct, frozen=True, kw_only=True, tag_field="change"):
    """Base of a change request sent to the task manager."""


class CreateTask(_Change, frozen=True, kw_only=True, tag="create_task"):
    """Add a task that waits for ``deps``."""

    task_id: str
    title: str
    owner: str
    deps: list[str] = msgspec.field(default_factory=list)


class AddDependency(_Change, frozen=True, kw_only=True, tag="add_dependency"):
    """Make ``task_id`` wait for ``depends_on``."""

    task_id: str
    depends_on: str


class SetStatus(_Change, frozen=True, kw_only=True, tag="set_status"):
    """Move ``task_id`` from its current status to ``to_status``."""

    task_id: str
    to_status: TaskStatus
    result_summary: str = ""


class RemoveTask(_Change, frozen=True, kw_only=True, tag="remove_task"):
    """Drop ``task_id`` (refused while it runs or has dependents)."""

    task_id: str


TaskChange = CreateTask | AddDependency | SetStatus | RemoveTask


class ReplayReport(msgspec.Struct, frozen=True, kw_only=True):
    """How opening a Task WAL went.

    ``lines`` committed lines were replayed; ``truncated_tail`` says a torn last line of
    ``truncated_bytes`` bytes was cut. ``available=False`` means the WAL is corrupt and
    ``error`` reads ``file:line: reason``.
    """

    name: str
    path: str
    lines: int = 0
    truncated_tail: bool = False
    truncated_bytes: int = 0
    available: bool = True
    error: str | None = None


def _to_event(dag: TaskDag, change: TaskChange) -> TaskEvent:
    match change:
        case CreateTask(task_id=tid, title=title, owner=owner, deps=deps):
            return TaskCreated(task_id=tid, title=title, owner=owner, deps=list(deps))
        case AddDependency(task_id=tid, depends_on=dep):
            return TaskDependencyAdded(task_id=tid, depends_on=dep)
        case SetStatus(task_id=tid, to_status=dst, result_summary=summary):
            return TaskStatusChanged(
                task_id=tid, from_status=dag.status(tid), to_status=dst, result_summary=summary
            )
        case RemoveTask(task_id=tid):
            return TaskRemoved(task_id=tid)
    raise TypeError(f"not a task change: {change!r}")  # pragma: no cover


class _OpenWal:
    __slots__ = ("dag", "report", "wal")

    def __init__(self, wal: TaskWal, dag: TaskDag, report: ReplayReport) -> None:
        self.wal = wal
        self.dag = dag
        self.report = report


# --- the actor --------------------------------------------------------------------------


class TaskManager(pykka.ThreadingActor):
    """The single writer of the Task WALs of one session."""

    def __init__(
        self,
        project_dir: str | os.PathLike[str],
        session_id: str,
        *,
        clock: Clock | None = None,
    ) -> None:
        """Serve the WALs under ``<project_dir>/.clew/tasks/<session_id>/``.

        Raises:
            InvalidSessionId: ``session_id`` is unsafe (raised by ``start``, synchronously).
        """
        super().__init__()
        self._project_dir = os.fspath(project_dir)
        self._session_id = validate_session_id(session_id)
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._open: dict[str, _OpenWal] = {}
        self._unavailable: dict[str, ReplayReport] = {}
        self._log = structlog.get_logger("clew.tasks").bind(session_id=session_id)

    def on_stop(self) -> None:
        for w in self._open.values():
            w.wal.close()

    def on_failure(self, *_exc_info: Any) -> None:
        self.on_stop()

    # --- opening ---------------------------------------------------------------------------

    def open(self, name: str) -> ReplayReport:
        """Replay the WAL ``name`` (cutting a torn tail) and make it writable.

        Opening an open WAL returns its first report; an unavailable one is replayed again
        (someone may have repaired the file).

        Raises:
            InvalidName: ``name`` is unsafe as a file name.
        """
        validate_wal_name(name)
        if name in self._open:
            return self._open[name].report
        path = wal_path(self._project_dir, self._session_id, name)
        log = self._log.bind(task_wal=name)
        try:
            result = replay_wal(path, log=log)
            dag = TaskDag()
            for record in result.records:
                try:
                    dag.apply(record.event)
                except TaskGraphError as e:
                    # Lines are gapless from seq 1, so the seq is the line number.
                    raise TaskWalCorrupt(str(path), record.seq, f"refused by the DAG: {e}") from e
        except TaskWalError as e:
            report = ReplayReport(name=name, path=str(path), available=False, error=str(e))
            self._unavailable[name] = report
            log.error("task_wal_unavailable", error=str(e))
            return report
        report = ReplayReport(
            name=name,
            path=str(path),
            lines=result.lines,
            truncated_tail=result.truncated_tail,
            truncated_bytes=result.truncated_bytes,
        )
        self._unavailable.pop(name, None)
        self._open[name] = _OpenWal(
            TaskWal(path, last_seq=result.lines, clock=self._clock), dag, report
        )
        log.info("task_wal_opened", lines=report.lines, truncated_tail=report.truncated_tail)
        return report

    def _get(self, name: str) -> _OpenWal:
        w = self._open.get(name)
        if w is None:
            self.open(name)
            w = self._open.get(name)
            if w is None:
                error = self._unavailable[name].error
                raise TaskWalError(f"task WAL {name!r} is unavailable: {error}")
        return w

    def close(self, name: str) -> None:
        """Close the WAL ``name``; a later call reopens (replays) it."""
        w = self._open.pop(name, None)
        if w is not None:
            w.wal.close()
        self._unavailable.pop(name, None)

    # --- changes ---------------------------------------------------------------------------

    def apply_changes(self, name: str, changes: Sequence[TaskChange]) -> list[int]:
        """Validate ``changes`` in order, append them with one fsync, then apply them.

        All or nothing while the process lives: one refused change refuses the batch and
        nothing is written. It is not a crash transaction: a crash during the write can
        leave a prefix of an unacknowledged batch in the WAL (each line a valid change).

        Returns:
            The seq of each change, in order.

        Raises:
            TaskGraphError: a change is refused (nothing written, DAG unchanged).
            TaskWalError: the WAL is unavailable or the append failed (DAG unchanged).
        """
        w = self._get(name)
        if len(changes) == 1:
            # The common case validates on the live DAG: no copy.
            event = _to_event(w.dag, changes[0])
            w.dag.check(event)
            records = w.wal.append([event])
            w.dag.apply(event)
            return [records[0].seq]
        scratch = w.dag.copy()
        events: list[TaskEvent] = []
        for change in changes:
            event = _to_event(scratch, change)
            scratch.apply(event)
            events.append(event)
        records = w.wal.append(events)
        w.dag = scratch
        return [r.seq for r in records]

    def create_task(
        self, name: str, task_id: str, title: str, owner: str, deps: Sequence[str] = ()
    ) -> int:
        """Add a task; return its WAL seq."""
        change = CreateTask(task_id=task_id, title=title, owner=owner, deps=list(deps))
        return self.apply_changes(name, [change])[0]

    def add_dependency(self, name: str, task_id: str, depends_on: str) -> int:
        """Make ``task_id`` wait for ``depends_on``; return the WAL seq."""
        return self.apply_changes(name, [AddDependency(task_id=task_id, depends_on=depends_on)])[0]

    def set_status(
        self, name: str, task_id: str, to_status: TaskStatus, result_summary: str = ""
    ) -> int:
        """Move ``task_id`` to ``to_status``; return the WAL seq."""
        change = SetStatus(task_id=task_id, to_status=to_status, result_summary=result_summary)
        return self.apply_changes(name, [change])[0]

    def remove_task(self, name: str, task_id: str) -> int:
        """Drop ``task_id``; return the WAL seq."""
        return self.apply_changes(name, [RemoveTask(task_id=task_id)])[0]

    # --- queries ---------------------------------------------------------------------------

    def snapshot(self, name: str) -> TaskDag:
        """Return a copy of the DAG of ``name`` that the caller may keep."""
        return self._get(name).dag.copy()

    def task(self, name: str, task_id: str) -> Task:
        """Return one task of ``name``."""
        return self._get(name).dag.get(task_id)

    def ready(self, name: str) -> list[str]:
        """Return the ids of the tasks of ``name`` that can start now."""
        return self._get(name).dag.ready()

    def blocked(self, name: str) -> list[str]:
        """Return the ids of the tasks of ``name`` held back by a failed/cancelled upstream."""
        return self._get(name).dag.blocked()

    def topological_order(self, name: str) -> list[str]:
        """Return every task of ``name`` after all its dependencies."""
        return self._get(name).dag.topological_order()

    def dependents(self, name: str, task_id: str, transitive: bool = False) -> list[str]:
        """Return the tasks of ``name`` that depend on ``task_id`` (or transitively)."""
        return self._get(name).dag.dependents(task_id, transitive=transitive)

    def board(self, name: str) -> str:
        """Return the compact text board of ``name``."""
        return self._get(name).dag.task_board()

    def last_seq(self, name: str) -> int:
        """Return the seq of the last acknowledged line of ``name``."""
        return self._get(name).wal.last_seq

    def names(self) -> list[str]:
        """Return the names of the open WALs."""
        return list(self._open)


# --- the facade -------------------------------------------------------------------------


class TaskManagerHandle:
    """A typed, synchronous facade over a ``TaskManager`` actor.

    Every call blocks until the actor replies, and re-raises the actor's exception
    (``TaskGraphError``, ``TaskWalError``, ``InvalidName``) in the caller.
    """

    def __init__(self, ref: pykka.ActorRef[TaskManager], *, timeout: float | None = 30.0) -> None:
        self.actor_ref = ref
        self._proxy = ref.proxy()
        self._timeout = timeout

    @classmethod
    def start(
        cls,
        project_dir: str | os.PathLike[str],
        session_id: str,
        *,
        clock: Clock | None = None,
        timeout: float | None = 30.0,
    ) -> TaskManagerHandle:
        """Start a ``TaskManager`` actor for ``session_id`` and return its handle."""
        return cls(TaskManager.start(project_dir, session_id, clock=clock), timeout=timeout)

    def _get(self, future: Any) -> Any:
        return future.get(timeout=self._timeout)

    def open(self, name: str) -> ReplayReport:
        """Replay and open the WAL ``name``; see ``TaskManager.open``."""
        return cast(ReplayReport, self._get(self._proxy.open(name)))

    def close(self, name: str) -> None:
        """Close the WAL ``name``."""
        self._get(self._proxy.close(name))

    def apply_changes(self, name: str, changes: Sequence[TaskChange]) -> list[int]:
        """Apply several changes with one fsync; see ``TaskManager.apply_changes``."""
        return cast(list[int], self._get(self._proxy.apply_changes(name, list(changes))))

    def create_task(
        self, name: str, task_id: str, title: str, owner: str, deps: Sequence[str] = ()
    ) -> int:
        """Add a task; return its WAL seq."""
        return cast(int, self._get(self._proxy.create_task(name, task_id, title, owner, deps)))

    def add_dependency(self, name: str, task_id: str, depends_on: str) -> int:
        """Make ``task_id`` wait for ``depends_on``; return the WAL seq."""
        return cast(int, self._get(self._proxy.add_dependency(name, task_id, depends_on)))

    def set_status(
        self, name: str, task_id: str, to_status: TaskStatus, result_summary: str = ""
    ) -> int:
        """Move ``task_id`` to ``to_status``; return the WAL seq."""
        future = self._proxy.set_status(name, task_id, to_status, result_summary)
        return cast(int, self._get(future))

    def remove_task(self, name: str, task_id: str) -> int:
        """Drop ``task_id``; return the WAL seq."""
        return cast(int, self._get(self._proxy.remove_task(name, task_id)))

    def snapshot(self, name: str) -> TaskDag:
        """Return a copy of the DAG of ``name``."""
        return cast(TaskDag, self._get(self._proxy.snapshot(name)))

    def task(self, name: str, task_id: str) -> Task:
        """Return one task of ``name``."""
        return cast(Task, self._get(self._proxy.task(name, task_id)))

    def ready(self, name: str) -> list[str]:
        """Return the ids of the tasks of ``name`` that can start now."""
        return cast(list[str], self._get(self._proxy.ready(name)))

    def blocked(self, name: str) -> list[str]:
        """Return the ids of the tasks of ``name`` held back by a failed/cancelled upstream."""
        return cast(list[str], self._get(self._proxy.blocked(name)))

    def topological_order(self, name: str) -> list[str]:
        """Return every task of ``name`` after all its dependencies."""
        return cast(list[str], self._get(self._proxy.topological_order(name)))

    def dependents(self, name: str, task_id: str, transitive: bool = False) -> list[str]:
        """Return the tasks of ``name`` that depend on ``task_id`` (or transitively)."""
        future = self._proxy.dependents(name, task_id, transitive)
        return cast(list[str], self._get(future))

    def board(self, name: str) -> str:
        """Return the compact text board of ``name``."""
        return cast(str, self._get(self._proxy.board(name)))

    def last_seq(self, name: str) -> int:
        """Return the seq of the last acknowledged line of ``name``."""
        return cast(int, self._get(self._proxy.last_seq(name)))

    def stop(self) -> None:
        """Stop the actor (closing its WAL files); idempotent."""
        if self.actor_ref.is_alive():
            self.actor_ref.stop(timeout=self._timeout)

    def __enter__(self) -> TaskManagerHandle:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
