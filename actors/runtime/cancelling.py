"""Cancel a session's run: in this process, in the process that owns it, or left
interrupted by a crash. See docs/runtime.md, "Watch, stream and cancel a run"."""

from __future__ import annotations

from typing import Literal

import msgspec

from actors.errors import NothingToCancel
from actors.runtime import control
from actors.runtime import resume as resuming
from actors.runtime.engine import OPEN_RUN_STATUSES, Engine
from eventlog.ids import is_main_run, validate_session_id


class CancelReport(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`Runtime.cancel` did.

    ``requested``: the run is in progress (here, or in the process that owns the
    session, which picks the request up within a second) and will end ``cancelled``.
    ``cancelled``: the run had been interrupted by a crash; it is now recorded as
    cancelled (the session is no longer interrupted).
    """

    session_id: str
    run_id: str | None
    status: Literal["requested", "cancelled"]
    reason: str


def cancel_session(engine: Engine, session_id: str, reason: str) -> CancelReport:
    """Cancel the session's main run in progress, wherever it runs.

    Raises:
        InvalidSessionId, UnknownSession: bad or unknown session.
        NothingToCancel: no run of the session is in progress or interrupted.
        ReplayDivergence: an interrupted run cannot be re-executed to record its end.
    """
    sid = validate_session_id(session_id)
    engine.store.read_session(sid)
    for run in list(engine.runs):
        if run.session_id == sid:
            run.stop(reason, 0.0)
            return CancelReport(
                session_id=sid, run_id=run.run_id, status="requested", reason=reason
            )
    open_main = [
        r.run_id
        for r in engine.store.read_runs(sid)
        if r.status in OPEN_RUN_STATUSES and is_main_run(sid, r.agent_id)
    ]
    if not open_main:
        raise NothingToCancel(f"session {sid} has no run in progress")
    if engine.is_owned(sid):
        engine.refuse_if_read_only(f"cancelling the run of {sid}")
        control.request_cancel(engine.home, sid, reason, engine.clock.now())
        return CancelReport(session_id=sid, run_id=open_main[-1], status="requested", reason=reason)
    engine.refuse_if_read_only(f"cancelling the interrupted run of {sid}")
    plan = resuming.resume_ready(engine, sid)
    outcome = resuming.cancel_interrupted(engine, plan, reason)
    return CancelReport(session_id=sid, run_id=outcome.run_id, status="cancelled", reason=reason)
