"""The re-drives of a home (``clew redrive``'s reports, ``<home>/redrives/``): the
inspector's list of them (or of those that name one session: its page links them), and
one re-drive with the status of each of its sessions now.

A report is what :func:`actors.runtime.redrive.redrive` wrote when it ended; a session's
status is read now (it may have run again since, or been deleted: ``gone``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from actors.documents.sessions import session_line
from actors.runtime.redrive import RedriveReport, read_redrives
from actors.runtime.runtime import Runtime
from eventlog.errors import UnknownSession
from eventlog.ids import relative


def _reports(rt: Runtime) -> list[RedriveReport]:
    return read_redrives(Path(rt.home))


def _line(report: RedriveReport) -> dict[str, Any]:
    return {
        "redrive_id": report.redrive_id,
        "started_at": report.started_at,
        "ended_at": report.ended_at,
        "sessions": len(report.sessions),
        "counts": report.counts(),
        "summary": report.summary(),
    }


def redrives_doc(rt: Runtime, sid: str = "") -> dict[str, Any]:
    """Return the home's re-drives, newest first, one line each (counts by outcome);
    ``sid``: only those naming that session, each with its result there (``result``)."""
    lines = []
    for report in reversed(_reports(rt)):
        mine = [r for r in report.sessions if r.session_id == sid]
        if sid and not mine:
            continue
        line = _line(report)
        if mine:
            run = relative(sid, mine[0].run_id) if mine[0].run_id else None
            line["result"] = {**msgspec.to_builtins(mine[0]), "run": run}
        lines.append(line)
    return {"redrives": lines}


def redrive_doc(rt: Runtime, redrive_id: str) -> dict[str, Any] | None:
    """Return one re-drive: its line and each session's result with its status now;
    None when the home has no re-drive of that id."""
    report = next((r for r in _reports(rt) if r.redrive_id == redrive_id), None)
    if report is None:
        return None
    sessions = []
    for result in report.sessions:
        sid = result.session_id
        try:
            status = session_line(rt, rt.store.read_session(sid))["status"]
        except UnknownSession:  # (a deleted one too)
            status = "gone"
        run = relative(sid, result.run_id) if result.run_id else None
        sessions.append({**msgspec.to_builtins(result), "run": run, "status": status})
    return {**_line(report), "results": sessions}
