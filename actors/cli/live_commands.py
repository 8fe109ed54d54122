"""``clew cancel``: stop a session's run from any process."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from actors.cli.app import app
from actors.cli.options import Home, Json, Project, SessionArg, session_from
from actors.cli.output import print_result
from actors.errors import UsageError
from actors.runtime.runtime import Runtime
from eventlog.ids import is_main_run

#: How often ``clew cancel`` looks whether the owning process has ended the run.
_POLL_S = 0.1


@app.command()
def cancel(
    session: SessionArg,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="recorded with the cancellation")
    ] = "cancelled from the command line",
    wait: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", min=0, help="how long to wait for the owning process to stop"
        ),
    ] = 10.0,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Cancel the session's run: it stops within a second, recorded as cancelled.

    The process running it (on this machine, any process) records the cancellation; a run
    left interrupted by a crash is recorded as cancelled at once."""
    if not reason.strip():
        raise UsageError("the --reason is empty")
    with session_from(home, project, session) as (rt, row):
        sid = row.session_id
        report = rt.cancel(sid, reason)
        status: str = report.status
        if status == "requested":
            status = _wait_for_end(rt, sid, report.run_id, wait)
    doc = {"session_id": sid, "run_id": report.run_id, "status": status, "reason": reason}
    what = {
        "cancelled": "cancelled",
        "requested": f"cancel requested; the run had not ended after {wait:g} s",
    }.get(status, f"the run ended {status} before the cancel took effect")
    print_result(doc, f"{sid}: {what}", as_json=as_json)
    if status not in ("cancelled", "requested"):
        raise typer.Exit(1)


def _wait_for_end(rt: Runtime, sid: str, run_id: str | None, wait: float) -> str:
    """Return the main run's status once it ended, or ``requested`` after ``wait`` s."""
    deadline = time.monotonic() + wait
    while True:
        for r in rt.store.read_runs(sid):
            if (
                r.run_id == run_id
                and is_main_run(sid, r.agent_id)
                and r.status
                not in (
                    "running",
                    "pending",
                )
            ):
                return r.status
        if time.monotonic() >= deadline:
            return "requested"
        time.sleep(_POLL_S)
