"""A main run's view of its task DAG: one Task WAL per main run, idempotent operations."""

from __future__ import annotations

from typing import ClassVar

from actors.plan import Plan
from actors.task_manager import CreateTask, SetStatus, TaskManagerHandle


def wal_name_for(run_id: str) -> str:
    """Return the Task WAL name of a main run (WAL names allow only ``[a-zA-Z0-9_-]``)."""
    return run_id.replace(":", "_").replace("/", "_")


class Board:
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

    def __init__(self, tasks: TaskManagerHandle, name: str) -> None:
        self.tasks = tasks
        self.name = name
        self.report = tasks.open(name)

    def plan(self, plan: Plan) -> None:
        dag = self.tasks.snapshot(self.name)
        changes = [
            CreateTask(task_id=t.id, title=t.title, owner=t.owner_role, deps=list(t.deps))
            for t in plan.todos()
            if t.id not in dag
        ]
        if changes:
            self.tasks.apply_changes(self.name, changes)

    def move(self, task_id: str, to_status: str, summary: str = "") -> None:
        dag = self.tasks.snapshot(self.name)
        if task_id not in dag:
            return
        current = dag.status(task_id)
        if current == to_status or self._ORDER[current] >= self._ORDER[to_status]:
            return
        self.tasks.apply_changes(
            self.name,
            [SetStatus(task_id=task_id, to_status=to_status, result_summary=summary)],  # type: ignore[arg-type]
        )
