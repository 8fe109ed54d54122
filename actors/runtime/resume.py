"""Resume an interrupted session: re-execute its last main run to the end of its log,
then go on live — a recorded model reply is never requested again.

See docs/replay-and-recovery.md for what "interrupted" means and what is re-run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from actors.errors import SessionBusy, TaskWalUnavailable
from actors.models.chains import ModelArg
from actors.models.tools import Tool
from actors.orchestration.brain import RunRequest, execute
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.roster import Roster
from actors.orchestration.team import Team
from actors.recording.inputs import RunInputs, RunSettings
from actors.recording.recorded import recorded_specs, run_started_of
from actors.replay.log import ReplayLog
from actors.replay.options import ReplayOptions
from actors.replay.requests import StoreRequests
from actors.runtime import waiting
from actors.runtime.archive import refuse_if_archived
from actors.runtime.engine import Engine
from actors.runtime.runs import advise
from actors.runtime.teams import Chains, team_for_replay, team_for_resume
from actors.tasks.agreement import run_wal_name
from actors.tasks.manager import CALL_TIMEOUT
from eventlog.errors import ReplayDivergence
from eventlog.ids import validate_session_id
from eventlog.records import StoredEvent


class ResumePlan(msgspec.Struct, frozen=True, kw_only=True):
    """What ``resume_ready`` found: the run to finish, the log read, the Task WAL replayed."""

    session_id: str
    run_id: str
    events: int
    runs: int
    interrupted_runs: list[str]
    #: The replay report of the run's Task WAL (``truncated_tail`` when a torn line was cut).
    task_wal: dict[str, Any]
    recording: dict[str, list[StoredEvent]]


def resume_ready(engine: Engine, session_id: str) -> ResumePlan:
    """Do everything a resume needs before re-executing: check, read, replay the WAL.

    Reads the session's log grouped by run, finds the interrupted main run, and replays
    that run's Task WAL (a torn tail is cut and reported in the plan).

    Raises:
        NothingToResume: no interrupted (nor waiting) run.
        StillWaiting: the session's run waits for a decision not made yet.
        SessionBusy: a live process owns the session.
        TaskWalUnavailable: the run's Task WAL is corrupt (a bad line before its end).
    """
    sid = validate_session_id(session_id)
    refuse_if_archived(engine.store.read_session(sid), "resuming")
    if engine.is_owned(sid) and not engine.holds(sid):
        raise SessionBusy(f"session {sid} is in use by another process")
    interrupted = engine.interrupted_runs(sid)
    pending = [r for r in engine.main_runs(sid) if r in interrupted]
    if not pending:
        # A run waiting for a person resumes once everything it waits for is decided.
        pending = [waiting.waiting_run(engine, sid)]
    # Main runs are serial, so only the last one can be interrupted; resuming needs its
    # events and its workers' — not the whole session's log.
    run_id = pending[-1]
    by_run: dict[str, list[StoredEvent]] = {}
    for ev in engine.store.read_runs_under(sid, run_id):
        if ev.run_id is not None:
            by_run.setdefault(ev.run_id, []).append(ev)
    name = run_wal_name(run_id, by_run.get(run_id, []))
    wal = engine.task_manager(sid).open(name).get(timeout=CALL_TIMEOUT)
    if not wal.available:
        # Re-executing against a WAL that cannot be read would only show up later as a
        # divergence of the run ("expected todo_updated…"), hiding the real cause.
        raise TaskWalUnavailable(
            f"cannot resume session {sid}: its Task WAL is corrupt at {wal.error};"
            f" repair or restore that file (clew tasks {sid} shows it), then resume"
        )
    return ResumePlan(
        session_id=sid,
        run_id=run_id,
        events=sum(len(v) for v in by_run.values()),
        runs=len(by_run),
        interrupted_runs=sorted(interrupted),
        task_wal=msgspec.to_builtins(wal),
        recording=by_run,
    )


def resume(
    engine: Engine,
    plan: ResumePlan,
    *,
    model: ModelArg,
    tools: Sequence[Tool] = (),
    settings: RunSettings | None = None,
    team: Team | None = None,
    from_divergence: bool = False,
) -> RunOutcome:
    """Finish the interrupted main run of ``plan``.

    ``from_divergence``: where today's code leaves the recording, keep the recorded
    prefix, record ``resumed_past_divergence`` and go on live (instead of refusing).

    Raises:
        UsageError: the recorded team has typed output and no ``team`` was given.
        SessionBusy: a live process owns the session.
        ReplayDivergence: today's code does not reproduce the recording.
    """
    inputs = _inputs(plan)
    roster, chains = team_for_resume(inputs, team, tools, model, engine.environ)
    options = ReplayOptions(
        recorded_specs=recorded_specs(inputs),
        from_divergence=from_divergence,
        requests=StoreRequests(engine.store, plan.session_id),
    )
    return _reexecute(engine, plan, roster, chains, settings or inputs.settings, options=options)


def cancel_interrupted(engine: Engine, plan: ResumePlan, reason: str) -> RunOutcome:
    """End the interrupted main run of ``plan`` as cancelled, without going on with it.

    The run is re-executed to the end of its log with its cancellation already
    requested, so it stops at its first live step — no model is asked, no tool runs —
    and ends the way a run cancelled while it ran ends (and replays the same way).

    Raises:
        SessionBusy: a live process owns the session.
        ReplayDivergence: today's code does not reproduce the recording.
    """
    inputs = _inputs(plan)
    roster, chains = team_for_replay(inputs, None, None, None)  # stand-ins: never asked
    return _reexecute(engine, plan, roster, chains, inputs.settings, cancel=reason)


def _inputs(plan: ResumePlan) -> RunInputs:
    return RunInputs.from_metadata(run_started_of(plan.recording[plan.run_id]).metadata)


def _reexecute(
    engine: Engine,
    plan: ResumePlan,
    roster: Roster,
    chains: Chains,
    settings: RunSettings,
    cancel: str | None = None,
    options: ReplayOptions | None = None,
) -> RunOutcome:
    sid, run_id, by_run = plan.session_id, plan.run_id, plan.recording
    started = run_started_of(by_run[run_id])
    inputs = RunInputs.from_metadata(started.metadata)
    with engine.live_run(sid):
        engine.lock(sid)
        try:
            replay_log = ReplayLog()
            env = engine.env(
                sid,
                chains,
                roster.tools,
                settings,
                recording=by_run,
                live_allowed=True,
                replay_log=replay_log,
                roster=roster,
                flow=inputs.flow,
                replay_options=options,
            )
            if cancel is not None:
                env.cancel.cancel(cancel, "external")
            request = RunRequest(
                run_id=run_id,
                parent_node_id=started.start_node_id,
                inputs=inputs,
                attempt=started.attempt,
            )
            outcome = execute(env, engine.task_manager(sid), request)
            if outcome.status != "interrupted":  # else the writer may be what failed
                engine.writer.flush()
        finally:
            engine.unlock(sid)
    if replay_log.divergences:
        first = next(iter(replay_log.divergences.values()))
        what = "cancel" if cancel is not None else "resume"
        raise ReplayDivergence(f"{what} refused: {first}")
    return advise(engine, outcome)
