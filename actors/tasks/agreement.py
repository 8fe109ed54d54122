"""Does a main run's Task WAL agree with the run's log? What ``verify`` checks of a WAL.

A main run records its plan twice: as events (``todo_planned``, then a ``todo_updated``
per move) and as its Task WAL (``task_created``, ``task_status_changed``). The run
moves both in lockstep, so once it has *ended* (``run_ended``) they must agree: the WAL
exists, holds exactly the planned tasks, and each task is where the log left it. A
WAL written somewhere else (a resume from another directory, before sessions kept
their project directory) is missing here or stale.

Equal means equal, but for the states before a task starts: the log marks a task whose
upstream failed ``blocked`` (a Brain decision) while the WAL leaves it ``pending`` and
derives ``ready``/``blocked`` from its dependencies, so those three count as one.

An interrupted run is not compared: a crash may fall between the log's step and the
WAL's, in either order, and a resume makes them agree again.
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.tasks.changes import TaskWalReport
from eventlog.events import RunEnded, TodoPlanned, TodoUpdated
from eventlog.ids import wal_name_for
from eventlog.records import StoredEvent
from projections.taskdag import Task

#: Statuses of a task that has not started; the log and the WAL may differ among them.
_NOT_STARTED = frozenset({"pending", "ready", "blocked"})
#: Tasks a disagreement names before "and N more".
_SHOWN = 3


def _phase(status: str) -> str:
    return "not started" if status in _NOT_STARTED else status


def run_wal_name(run_id: str, events: Sequence[StoredEvent]) -> str:
    """Return the Task WAL name of main run ``run_id`` from its events: the task name its
    (last) ``todo_planned`` records, else — a run recorded before flow 2, or one that has
    not planned yet — the name derived from its id."""
    name = ""
    for e in events:
        if isinstance(e.event, TodoPlanned):
            name = e.event.task_name
    return name or wal_name_for(run_id)


def planned_statuses(events: Sequence[StoredEvent]) -> dict[str, str] | None:
    """Return each planned task's last status in a main run's events, if the run ended.

    None when the run planned nothing or has not ended (nothing to compare).
    """
    planned: dict[str, str] | None = None
    ended = False
    for e in events:
        match e.event:
            case TodoPlanned(todos=todos):
                planned = {t.id: "pending" for t in todos}
            case TodoUpdated(todo_id=task_id, status=status) if planned is not None:
                if task_id in planned:
                    planned[task_id] = status
            case RunEnded():
                ended = True
    return planned if ended else None


def disagreements(
    run_id: str,
    events: Sequence[StoredEvent],
    report: TaskWalReport | None,
    tasks: Sequence[Task],
) -> list[str]:
    """Return how the Task WAL of main run ``run_id`` disagrees with its events (one line
    each; empty when they agree or there is nothing to compare).

    Args:
        events: the run's events, in ``run_seq`` order.
        report: the WAL's read-only replay report (None: the file does not exist).
        tasks: the WAL's tasks.
    """
    planned = planned_statuses(events)
    if not planned:
        return []
    name = run_wal_name(run_id, events)
    if report is None or not report.exists:
        return [
            f"task WAL {name}: missing, though run {run_id} planned {len(planned)} tasks"
            " (written in another project directory?)"
        ]
    if not report.available:
        return []  # unreadable: reported as such by the caller
    in_wal = {t.task_id: t.status for t in tasks}
    if set(in_wal) != set(planned):
        return [
            f"task WAL {name}: stale: it holds {sorted(in_wal)} where the log planned"
            f" {sorted(planned)}"
        ]
    off = [t for t, status in planned.items() if _phase(status) != _phase(in_wal[t])]
    if not off:
        return []
    shown = ", ".join(f"{t} is {in_wal[t]} where the log says {planned[t]}" for t in off[:_SHOWN])
    more = f" (and {len(off) - _SHOWN} more)" if len(off) > _SHOWN else ""
    return [f"task WAL {name}: stale: {shown}{more}"]
