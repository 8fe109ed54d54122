"""Read-only inspection of a session's Task WALs: replayed without touching a file.

What ``clew tasks`` and verification show. A torn tail is reported, never cut, and a
line the DAG refuses makes that WAL unavailable — the same rules as
``TaskManager.open``, with ``repair=False``. So does a WAL that is not a regular file
reached from the project without a symlink: it is reported with the reason, and nothing
behind the link is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from actors.tasks.changes import TaskWalReport
from eventlog.errors import TaskGraphError, TaskWalError
from eventlog.wals import FileWals, TaskWals
from projections.taskdag import Task, TaskDag


def inspect_wals(
    project_dir: Path, sid: str, run_wals: Sequence[str], *, wals: TaskWals | None = None
) -> list[tuple[TaskWalReport, list[Task]]]:
    """Replay every Task WAL of the session read-only: the main runs' first (``run_wals``:
    their WAL names, in run order), then any other.

    Same rules as ``TaskManager.open`` (a DAG-refused line makes the WAL unavailable),
    but ``repair=False``: a read-only command never changes a file. ``wals``: where the
    WALs live (default: the files under ``project_dir``).
    """
    source: TaskWals = wals if wals is not None else FileWals(project_dir)
    names = list(dict.fromkeys(run_wals))
    try:
        found = source.names(sid)
    except TaskWalError as e:
        # The session directory (or one above it) is a symlink: every WAL the session
        # should have is unavailable, and nothing behind the link is listed or read.
        return [(_unavailable(n, source.location(sid, n), e), []) for n in names]
    names += [n for n in found if n not in names]
    # The latest main run's WAL is listed even before its first line is written.
    latest = run_wals[-1] if run_wals else None
    out: list[tuple[TaskWalReport, list[Task]]] = []
    for name in names:
        path = source.location(sid, name)
        if name not in found:
            if name == latest:
                out.append((TaskWalReport(name=name, path=path, exists=False), []))
            continue
        try:
            result = source.replay(sid, name, repair=False)
            dag = TaskDag.rebuild(r.event for r in result.records)
        except (TaskWalError, TaskGraphError) as e:
            out.append((_unavailable(name, path, e), []))
            continue
        status = TaskWalReport(
            name=name,
            path=path,
            exists=True,
            lines=result.lines,
            truncated_tail=result.truncated_tail,
            truncated_bytes=result.truncated_bytes,
        )
        out.append((status, dag.tasks()))
    return out


def _unavailable(name: str, path: str, error: Exception) -> TaskWalReport:
    return TaskWalReport(name=name, path=path, exists=True, available=False, error=str(error))
