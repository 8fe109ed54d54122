"""A main run's view of its task DAG: one Task WAL per main run, idempotent operations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from actors.tasks.changes import CreateTask, SetStatus, StartWal, TaskChange
from actors.tasks.manager import CALL_TIMEOUT, TaskManagerProxy
from eventlog.events import Todo


class RunTaskBoard:
    """The run's view of its task DAG (a Task WAL); every operation is idempotent.

    Re-execution after a crash replays the WAL first, so "create" and "move to"
    are *ensure* operations: a task already there, or already past the target
    status, is left alone.
    """

    _ORDER: ClassVar[dict[str, int]] = {
        "pending": 0,
        "ready": 0,
        "blocked": 0,
        "running": 1,
        "completed": 2,
        "failed": 2,
        "cancelled": 2,
    }

    def __init__(self, tasks: TaskManagerProxy, name: str) -> None:
        self.tasks = tasks
        self.name = name
        self.report = tasks.open(name).get(timeout=CALL_TIMEOUT)

    def plan(self, todos: Sequence[Todo], header: StartWal | None = None) -> None:
        """Ensure the WAL starts with ``header`` (if given) and every todo is a task."""
        dag = self.tasks.snapshot(self.name).get(timeout=CALL_TIMEOUT)
        changes: list[TaskChange] = []
        if header is not None and dag.header is None and not len(dag):
            changes.append(header)
        changes += [
            CreateTask(
                task_id=t.id,
                title=t.title,
                owner=t.owner_role,
                deps=list(t.deps),
                after=list(t.after),
            )
            for t in todos
            if t.id not in dag
        ]
        if changes:
            self.tasks.apply_changes(self.name, changes).get(timeout=CALL_TIMEOUT)

    def move(self, task_id: str, to_status: str, summary: str = "") -> None:
        """Ensure ``task_id`` is at ``to_status`` or past it."""
        dag = self.tasks.snapshot(self.name).get(timeout=CALL_TIMEOUT)
        if task_id not in dag:
            return
        current = dag.status(task_id)
        if current == to_status or self._ORDER[current] >= self._ORDER[to_status]:
            return
        self.tasks.apply_changes(
            self.name,
            [SetStatus(task_id=task_id, to_status=to_status, result_summary=summary)],  # type: ignore[arg-type]
        ).get(timeout=CALL_TIMEOUT)
