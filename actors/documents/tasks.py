"""The task DAG of each of a session's Task WALs, read-only: ``clew tasks --json``
(every task with full ids, the WALs' reports) and the inspector's DAGs (one per WAL,
ids relative), the second derived from the first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from actors.tasks.changes import TaskWalReport
from actors.tasks.inspect import inspect_wals
from eventlog.errors import ClewError
from eventlog.ids import relative
from projections.taskdag import Task

if TYPE_CHECKING:
    from actors.runtime.runtime import Runtime


def read_dags(rt: Runtime, sid: str, project: Path) -> list[tuple[TaskWalReport, list[Task]]]:
    """Replay each Task WAL of ``sid`` under ``project`` (its :meth:`Runtime.session_dir`):
    the main runs' first, in run order, then any other."""
    return inspect_wals(project, sid, rt.wal_names(sid), wals=rt.task_wals(sid))


def tasks_doc(rt: Runtime, sid: str, project: Path | None = None) -> dict[str, Any]:
    """Return ``clew tasks --json``: every task of every WAL, the latest WAL, all WALs.

    ``project``: the session's project directory when the caller has read it already.
    """
    wals = read_dags(rt, sid, rt.session_dir(sid) if project is None else project)
    names = rt.wal_names(sid)
    latest = names[-1] if names else None
    current = next((w for w, _ in wals if w.name == latest), wals[-1][0] if wals else None)
    return {
        "session_id": sid,
        "tasks": [
            {
                "id": t.task_id,
                "status": t.status,
                "deps": list(t.deps),
                "after": list(t.after),
                "title": t.title,
                "owner": t.owner,
                "result_summary": t.result_summary,
                "wal": w.name,
            }
            for w, tasks in wals
            for t in tasks
        ],
        "wal": None if current is None else msgspec.to_builtins(current),
        "wals": [msgspec.to_builtins(w) for w, _ in wals],
    }


def dag_doc(rt: Runtime, sid: str) -> dict[str, Any]:
    """Return the inspector's task DAGs: :func:`tasks_doc` grouped by WAL, ids relative to
    the session; a project directory that cannot be read is the document's ``error``."""
    try:
        project = rt.session_dir(sid)
    except ClewError as e:
        return {"dags": [], "error": str(e)}
    doc = tasks_doc(rt, sid, project)
    by_wal: dict[str, list[dict[str, Any]]] = {w["name"]: [] for w in doc["wals"]}
    for t in doc["tasks"]:
        by_wal[t["wal"]].append(
            {
                "id": relative(sid, t["id"]),
                "title": t["title"],
                "status": t["status"],
                "deps": [relative(sid, d) for d in t["deps"]],
                "owner": relative(sid, t["owner"]) if t["owner"] else None,
                "result_summary": t["result_summary"],
            }
        )
    dags = [
        {
            "wal": w["name"],
            "available": w["available"],
            "error": w["error"],
            "tasks": by_wal[w["name"]],
        }
        for w in doc["wals"]
    ]
    return {"dags": dags, "error": None}
