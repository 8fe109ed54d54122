"""Recovery: finishing, retrying or cancelling a session's run after it stopped short.

**Resume** an interrupted session: re-execute its last main run to the end of its log,
then go on live — a recorded model reply is never requested again.

See docs/replay-and-recovery.md for what "interrupted" means and what is re-run.

**Retry** a failed main run: a new attempt that answers the same user message again.

A retry is a new main run (its own run id, ``<sid>:brain:r<n>``: a run is one loop of
an agent, and an attempt is one more loop) whose ``run_started`` records
``attempt`` = the failed run's + 1 (seed 000's ``run_start``) and whose recorded inputs
name the run it retries (``retry_of``) and, when a re-drive retries it, the re-drive
(``redrive``). It re-uses the failed run's recorded request (the
expanded prompt, references and settings) with the model chain, tools and team given now
(the recorded team when none is given, as a resume does).

The node tree: the user's message is not appended again. The retry starts under the
failed run's user message node (``RunInputs.user_node_id``): its first node, the router's
plan, opens a new branch *at that user message* — the branch rule allows a second answer
to the same message — and the failed attempt's nodes stay where they were, off the
active path. A failed run that died before its user message was written gets it from the
retry instead. Workers, the Task WAL (a new task name) and the plan file are the new
run's own, as for any run; replay, resume and verify treat it like any main run.

**Cancel** a session's run: in this process, in the process that owns it, or left
interrupted by a crash. See docs/runtime.md, "Watch, stream and cancel a run".
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from actors.errors import (
    NeedsResume,
    NothingToCancel,
    NothingToRetry,
    SessionBusy,
    TaskWalUnavailable,
)
from actors.orchestration.brain import RunKind, RunRequest, executor_for
from actors.orchestration.env import SessionEnv
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.roster import Roster
from actors.recording.inputs import FLOW, RunInputs, RunSettings, tool_records
from actors.recording.recorded import recorded_specs, run_started_of
from actors.replay.log import ReplayLog
from actors.replay.options import ReplayOptions
from actors.replay.requests import StoreRequests
from actors.runtime import control, waiting
from actors.runtime.config import Chains, RunConfig, team_for_replay, team_for_resume
from actors.runtime.engine import Engine, model_names
from actors.runtime.start import execute_prepared, owned_run
from actors.runtime.status import OPEN_RUN_STATUSES, interrupted_runs, main_runs
from actors.runtime.upkeep import refuse_if_archived
from actors.tasks.agreement import run_wal_name
from actors.tasks.manager import CALL_TIMEOUT
from eventlog.errors import ReplayDivergence
from eventlog.events import NodeAppended
from eventlog.ids import brain_agent_id, is_main_run, main_run_id, validate_session_id
from eventlog.records import RunRow, StoredEvent

# --- resume -------------------------------------------------------------------------------


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


def resume_ready(engine: Engine, session_id: str, *, undecided: bool = False) -> ResumePlan:
    """Do everything a resume needs before re-executing: check, read, replay the WAL.

    Reads the session's log grouped by run, finds the interrupted main run, and replays
    that run's Task WAL (a torn tail is cut and reported in the plan). ``undecided``: a
    waiting run qualifies with requests still undecided (what cancelling it needs).

    Raises:
        NothingToResume: no interrupted (nor waiting) run.
        ReadOnlyStore: the runtime was opened read-only.
        StillWaiting: the session's run waits for a decision not made yet.
        SessionBusy: a live process owns the session.
        TaskWalUnavailable: the run's Task WAL is corrupt (a bad line before its end).
    """
    engine.refuse_if_read_only("resuming a session")
    sid = validate_session_id(session_id)
    refuse_if_archived(engine.store.read_session(sid), "resuming")
    if engine.is_owned(sid) and not engine.holds(sid):
        raise SessionBusy(f"session {sid} is in use by another process")
    interrupted = interrupted_runs(engine, sid)
    pending = [r for r in main_runs(engine, sid) if r in interrupted]
    if not pending:
        # A run waiting for a person resumes once everything it waits for is decided.
        state = waiting.wait_state(engine, sid) if undecided else None
        pending = [state.run_id if state is not None else waiting.waiting_run(engine, sid)]
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
    config: RunConfig,
    *,
    from_divergence: bool = False,
    kind: RunKind | None = None,
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
    if kind is not None and run_started_of(plan.recording[plan.run_id]).phase == kind.phase:
        # The framework's agent brings its own model and tools: the stand-ins are never asked.
        roster, chains = team_for_replay(inputs, None, None, None)
    else:
        roster, chains = team_for_resume(inputs, config, engine.environ)
    options = ReplayOptions(
        recorded_specs=recorded_specs(inputs),
        from_divergence=from_divergence,
        requests=StoreRequests(engine.store, plan.session_id),
    )
    settings = config.settings or inputs.settings
    return _reexecute(engine, plan, roster, chains, settings, options=options, kind=kind)


def cancel_interrupted(engine: Engine, plan: ResumePlan, reason: str) -> RunOutcome:
    """End the interrupted main run of ``plan`` as cancelled, without going on with it.

    The run is re-executed to the end of its log with its cancellation deferred to its
    first live step (``CancelScope.cancel_when_live``): the recorded prefix is matched
    whole, then it stops where it would go on — no model is asked, no tool runs — and
    ends the way a run cancelled while it ran ends (and replays the same way).

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
    kind: RunKind | None = None,
) -> RunOutcome:
    sid, run_id, by_run = plan.session_id, plan.run_id, plan.recording
    started = run_started_of(by_run[run_id])
    inputs = RunInputs.from_metadata(started.metadata)
    replay_log = ReplayLog()

    def build() -> tuple[SessionEnv, RunRequest]:
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
            # Not now: a cancel seen inside the recorded prefix would be recorded there.
            env.cancel.cancel_when_live(cancel, "external")
        request = RunRequest(
            run_id=run_id,
            parent_node_id=started.start_node_id,
            inputs=inputs,
            attempt=started.attempt,
        )
        return env, request

    executor = executor_for(kind, started.phase)
    outcome = execute_prepared(owned_run(engine, sid, build, executor))
    if replay_log.divergences:
        first = next(iter(replay_log.divergences.values()))
        what = "cancel" if cancel is not None else "resume"
        raise ReplayDivergence(f"{what} refused: {first}")
    return outcome


# --- retry --------------------------------------------------------------------------------


def _user_node(events: list[StoredEvent]) -> str | None:
    """Return the user message node a main run appended first, if it got that far."""
    for e in events:
        ev = e.event
        if isinstance(ev, NodeAppended) and ev.node.role == "user":
            return ev.node.node_id if ev.node.node_type == "message" else None
    return None  # (a main run's first user node is its prompt, when it appends one)


def failed_run(engine: Engine, sid: str) -> RunRow:
    """Return the session's last main run, which must have failed.

    Raises:
        NeedsResume: the session has an interrupted run.
        NothingToRetry: no main run, or the last one did not fail.
    """
    runs = engine.store.read_runs(sid)
    if any(r.status in OPEN_RUN_STATUSES for r in runs):
        raise NeedsResume(f"session {sid} has an interrupted run; resume it (clew resume {sid})")
    mains = [r for r in runs if is_main_run(sid, r.agent_id)]
    if not mains:
        raise NothingToRetry(f"session {sid} has no run to retry")
    last = mains[-1]
    if last.status != "failed":
        raise NothingToRetry(
            f"session {sid}: its last run {last.run_id} is {last.status}; only a failed last"
            " run can be retried"
        )
    return last


def retry_session(engine: Engine, session_id: str, config: RunConfig) -> RunOutcome:
    """Retry the session's failed last main run: the work behind :meth:`Session.retry`,
    whose docstring lists the arguments and the errors."""
    sid = validate_session_id(session_id)
    engine.refuse_if_read_only(f"retrying a run of {sid}")
    engine.store.read_session(sid)

    def build() -> tuple[SessionEnv, RunRequest]:
        refuse_if_archived(engine.store.read_session(sid), "retrying a run")
        failed = failed_run(engine, sid)
        events = engine.store.read_run(sid, failed.run_id)
        started = run_started_of(events)
        recorded = RunInputs.from_metadata(started.metadata)
        roster, models = team_for_resume(recorded, config, engine.environ)
        # A retry of a retry answers the same message: the one the failed retry answered.
        user_node = recorded.user_node_id or _user_node(events)
        brain = brain_agent_id(sid)
        inputs = msgspec.structs.replace(
            recorded,
            create_agent=not any(a.agent_id == brain for a in engine.store.read_agents(sid)),
            models=model_names(models),
            tools=tool_records(roster.tools),
            settings=config.settings or recorded.settings,
            team=roster.record(),
            flow=FLOW,
            user_node_id=user_node,
            retry_of=failed.run_id,
            redrive=config.redrive,
        ).in_oldest_version()
        n = sum(1 for r in engine.store.read_runs(sid) if is_main_run(sid, r.agent_id)) + 1
        request = RunRequest(
            run_id=main_run_id(sid, n),
            parent_node_id=user_node or started.start_node_id,
            inputs=inputs,
            attempt=started.attempt + 1,
        )
        return engine.env(sid, models, roster.tools, inputs.settings, roster=roster), request

    return execute_prepared(owned_run(engine, sid, build))


# --- cancelling ---------------------------------------------------------------------------


class CancelReport(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`Session.cancel` did.

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
        NothingToCancel: no run of the session is in progress, interrupted or waiting.
        SessionBusy: a process of another home (or host) runs the session.
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
    parked = waiting.wait_state(engine, sid) if not open_main else None
    if not open_main and parked is None:
        raise NothingToCancel(f"session {sid} has no run in progress")
    if engine.is_owned(sid):
        engine.refuse_if_read_only(f"cancelling the run of {sid}")
        if not engine.owned_in_this_home(sid):
            raise SessionBusy(
                f"session {sid} is run by a clew process of another home or host (it holds"
                " the session's lease): cancel it there"
            )
        control.request_cancel(engine.home, sid, reason, engine.clock.now())
        return CancelReport(session_id=sid, run_id=open_main[-1], status="requested", reason=reason)
    engine.refuse_if_read_only(f"cancelling the interrupted run of {sid}")
    # A waiting run is cancelled as an interrupted one is: re-executed to its wait, then
    # stopped at its first live step, whatever is still undecided.
    plan = resume_ready(engine, sid, undecided=parked is not None)
    outcome = cancel_interrupted(engine, plan, reason)
    return CancelReport(session_id=sid, run_id=outcome.run_id, status="cancelled", reason=reason)
