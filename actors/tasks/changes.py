"""What callers ask of the task manager: the changes to a task DAG, and a WAL's report.

Changes are a tagged union of frozen Structs (``change`` is the tag), turned into Task
WAL events by :func:`to_event` against the DAG they apply to.
"""

from __future__ import annotations

import msgspec

from eventlog.taskwal import (
    TaskCreated,
    TaskDependencyAdded,
    TaskEvent,
    TaskRemoved,
    TaskStatus,
    TaskStatusChanged,
    WalStarted,
)
from projections.taskdag import TaskDag


class _Change(msgspec.Struct, frozen=True, kw_only=True, tag_field="change"):
    """Base of a change request sent to the task manager."""


class StartWal(_Change, frozen=True, kw_only=True, tag="start_wal"):
    """Write the WAL's header: the main run (and plan task name) it holds."""

    run_id: str
    task_name: str = ""


class CreateTask(_Change, frozen=True, kw_only=True, tag="create_task"):
    """Add a task that waits for ``deps`` to complete and ``after`` to settle."""

    task_id: str
    title: str
    owner: str
    deps: list[str] = msgspec.field(default_factory=list)
    after: list[str] = msgspec.field(default_factory=list)


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


TaskChange = StartWal | CreateTask | AddDependency | SetStatus | RemoveTask


class TaskWalReport(msgspec.Struct, frozen=True, kw_only=True):
    """How replaying a Task WAL went.

    ``lines`` committed lines were replayed; ``truncated_tail`` says a torn last line of
    ``truncated_bytes`` bytes was found (cut when the task manager opens the WAL, only
    reported by a read-only inspection). ``available=False`` means the WAL is corrupt and
    ``error`` reads ``file:line: reason`` — or that it is not a regular file reached from
    the project without a symlink (``file: reason``); ``exists=False``, that nothing was
    written yet.
    """

    name: str
    path: str
    exists: bool = True
    lines: int = 0
    truncated_tail: bool = False
    truncated_bytes: int = 0
    available: bool = True
    error: str | None = None


def to_event(dag: TaskDag, change: TaskChange) -> TaskEvent:
    match change:
        case StartWal(run_id=run_id, task_name=name):
            return WalStarted(run_id=run_id, task_name=name)
        case CreateTask(task_id=tid, title=title, owner=owner, deps=deps, after=after):
            return TaskCreated(
                task_id=tid, title=title, owner=owner, deps=list(deps), after=list(after)
            )
        case AddDependency(task_id=tid, depends_on=dep):
            return TaskDependencyAdded(task_id=tid, depends_on=dep)
        case SetStatus(task_id=tid, to_status=dst, result_summary=summary):
            return TaskStatusChanged(
                task_id=tid, from_status=dag.status(tid), to_status=dst, result_summary=summary
            )
        case RemoveTask(task_id=tid):
            return TaskRemoved(task_id=tid)
    raise TypeError(f"not a task change: {change!r}")  # pragma: no cover
