"""Read-only inspection of a session's Task WALs: replayed without touching a file.

What ``clew tasks`` and verification show. A torn tail is reported, never cut, and a
line the DAG refuses makes that WAL unavailable — the same rules as
``TaskManager.open``, with ``repair=False``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from actors.tasks.changes import TaskWalReport
from eventlog.errors import TaskGraphError, TaskWalError
from eventlog.ids import wal_name_for
from eventlog.taskwal import WAL_SUFFIX, replay_wal, wal_dir
from projections.taskdag import Task, TaskDag


def inspect_wals(
    project_dir: Path, sid: str, run_ids: Sequence[str]
) -> list[tuple[TaskWalReport, list[Task]]]:
    """Replay every Task WAL of the session read-only: the main runs' first, then any other.

    Same rules as ``TaskManager.open`` (a DAG-refused line makes the WAL unavailable),
    but ``repair=False``: a read-only command never changes a file.
    """
    directory = wal_dir(project_dir, sid)
    names = [wal_name_for(r) for r in run_ids]
    if directory.is_dir():
        found = sorted(p.name.removesuffix(WAL_SUFFIX) for p in directory.glob(f"*{WAL_SUFFIX}"))
        names += [n for n in found if n not in names]
    # The latest main run's WAL is listed even before its first line is written.
    latest = wal_name_for(run_ids[-1]) if run_ids else None
    out: list[tuple[TaskWalReport, list[Task]]] = []
    for name in names:
        path = directory / f"{name}{WAL_SUFFIX}"
        if not path.exists():
            if name == latest:
                out.append((TaskWalReport(name=name, path=str(path), exists=False), []))
            continue
        try:
            result = replay_wal(path, repair=False)
            dag = TaskDag.rebuild(r.event for r in result.records)
        except (TaskWalError, TaskGraphError) as e:
            out.append(
                (
                    TaskWalReport(
                        name=name, path=str(path), exists=True, available=False, error=str(e)
                    ),
                    [],
                )
            )
            continue
        status = TaskWalReport(
            name=name,
            path=str(path),
            exists=True,
            lines=result.lines,
            truncated_tail=result.truncated_tail,
            truncated_bytes=result.truncated_bytes,
        )
        out.append((status, dag.tasks()))
    return out
