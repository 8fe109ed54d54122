"""Retry a failed main run: a new attempt that answers the same user message again.

A retry is a new main run (its own run id, ``<sid>:brain:r<n>``: a run is one loop of
an agent, and an attempt is one more loop) whose ``run_started`` records
``attempt`` = the failed run's + 1 (seed 000's ``run_start``) and whose recorded inputs
name the run it retries (``retry_of``). It re-uses the failed run's recorded request (the
expanded prompt, references and settings) with the model chain, tools and team given now
(the recorded team when none is given, as a resume does).

The node tree: the user's message is not appended again. The retry starts under the
failed run's user message node (``RunInputs.user_node_id``): its first node, the router's
plan, opens a new branch *at that user message* — the branch rule allows a second answer
to the same message — and the failed attempt's nodes stay where they were, off the
active path. A failed run that died before its user message was written gets it from the
retry instead. Workers, the Task WAL (a new task name) and the plan file are the new
run's own, as for any run; replay, resume and verify treat it like any main run.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from actors.errors import NeedsResume, NothingToRetry
from actors.models.chains import ModelArg
from actors.models.tools import Tool
from actors.orchestration.brain import RunRequest, execute
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Team
from actors.recording.inputs import FLOW, RunInputs, RunSettings, tool_records
from actors.recording.recorded import run_started_of
from actors.runtime.archive import refuse_if_archived
from actors.runtime.engine import OPEN_RUN_STATUSES, Engine, model_names
from actors.runtime.runs import advise
from actors.runtime.teams import team_for_resume
from eventlog.events import NodeAppended
from eventlog.ids import brain_agent_id, is_main_run, main_run_id, validate_session_id
from eventlog.records import RunRow, StoredEvent


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


def retry_session(
    engine: Engine,
    session_id: str,
    *,
    model: ModelArg,
    tools: Sequence[Tool] = (),
    settings: RunSettings | None = None,
    team: Team | None = None,
) -> RunOutcome:
    """Retry the session's failed last main run: the work behind :meth:`Session.retry`,
    whose docstring lists the arguments and the errors."""
    sid = validate_session_id(session_id)
    engine.refuse_if_read_only(f"retrying a run of {sid}")
    engine.store.read_session(sid)
    engine.lock(sid)
    try:
        refuse_if_archived(engine.store.read_session(sid), "retrying a run")
        failed = failed_run(engine, sid)
        events = engine.store.read_run(sid, failed.run_id)
        started = run_started_of(events)
        recorded = RunInputs.from_metadata(started.metadata)
        roster, models = team_for_resume(recorded, team, tools, model, engine.environ)
        # A retry of a retry answers the same message: the one the failed retry answered.
        user_node = recorded.user_node_id or _user_node(events)
        brain = brain_agent_id(sid)
        inputs = msgspec.structs.replace(
            recorded,
            create_agent=not any(a.agent_id == brain for a in engine.store.read_agents(sid)),
            models=model_names(models),
            tools=tool_records(roster.tools),
            settings=settings or recorded.settings,
            team=roster.record(),
            flow=FLOW,
            user_node_id=user_node,
            retry_of=failed.run_id,
        ).in_oldest_version()
        n = sum(1 for r in engine.store.read_runs(sid) if is_main_run(sid, r.agent_id)) + 1
        request = RunRequest(
            run_id=main_run_id(sid, n),
            parent_node_id=user_node or started.start_node_id,
            inputs=inputs,
            attempt=started.attempt + 1,
        )
        env = engine.env(sid, models, roster.tools, inputs.settings, roster=roster)
        outcome = execute(env, engine.task_manager(sid), request)
        if outcome.status != "interrupted":  # else the writer may be what failed
            engine.writer.flush()
    finally:
        engine.unlock(sid)
    return advise(engine, outcome)
