"""Start a new main run of a session: expand the prompt, record the inputs, run the Brain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from actors.errors import NeedsResume, SessionWaiting, Unencodable, UsageError
from actors.models.chains import ModelArg
from actors.models.storable import check_text
from actors.models.tools import Tool
from actors.orchestration.brain import RunRequest, execute
from actors.orchestration.env import SessionEnv
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Team
from actors.recording.inputs import FLOW, RunInputs, RunSettings, tool_records
from actors.runtime.archive import refuse_if_archived
from actors.runtime.context_inputs import context_record
from actors.runtime.engine import OPEN_RUN_STATUSES, Engine, model_names
from actors.runtime.teams import team_for_run
from eventlog.errors import ClewError
from eventlog.ids import is_main_run, main_run_id
from projections.references import expand_references


def check_prompt(prompt: object) -> str:
    """Return ``prompt`` if a run can record it.

    Raises:
        UsageError: not a string, empty, or not valid text (a lone surrogate: what Python
            makes of a non-UTF-8 byte in a command-line argument).
    """
    if not isinstance(prompt, str):
        raise UsageError(f"the prompt must be a string, not {type(prompt).__name__}")
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    try:
        check_text(prompt, "the prompt")
    except Unencodable as e:
        raise UsageError(str(e)) from None
    return prompt


def advise(engine: Engine, outcome: RunOutcome) -> RunOutcome:
    """Add what to do next to an interrupted outcome: resume, or (nothing written) run again."""
    if outcome.status != "interrupted":
        return outcome
    sid = outcome.session_id
    try:
        started = any(r.run_id == outcome.run_id for r in engine.store.read_runs(sid))
    except ClewError:
        started = True  # the store cannot say: resuming is what can be tried
    then = (
        f"once the cause is fixed, resume it: clew resume {sid}"
        if started
        else "nothing of the run was written; once the cause is fixed, run it again"
    )
    return msgspec.structs.replace(outcome, error=f"{outcome.error}; {then}")


@dataclass
class PreparedRun:
    """A main run checked, recorded inputs decided and the session locked: ready to go."""

    engine: Engine
    session_id: str
    env: SessionEnv
    request: RunRequest


def prepare_run(
    engine: Engine,
    session_id: str,
    prompt: str,
    *,
    model: ModelArg,
    tools: Sequence[Tool] = (),
    settings: RunSettings | None = None,
    team: Team | None = None,
) -> PreparedRun:
    """Check everything a new main run needs and take the session's lock; nothing is
    written yet. :meth:`Session.run`'s docstring lists the arguments and the errors
    (one list, kept in one place)."""
    sid = session_id
    check_prompt(prompt)
    settings = settings or engine.settings
    project = engine.session_dir(sid)
    # @path / @@session markers are expanded here, once; the *expanded* text is the run's
    # recorded input, so a replay never reads a file or another session again.
    expanded = expand_references(prompt, project, engine.store.read_events)
    # The team is resolved (and refused) before anything is written.
    roster, models = team_for_run(team, tools, model, engine.environ)
    context = context_record(settings, models, roster, project)
    engine.claim_run(sid)  # SessionBusy while another thread of this process runs it
    try:
        engine.lock(sid)
        row = engine.store.read_session(sid)
        refuse_if_archived(row, "a new run")
        runs = engine.store.read_run_statuses(sid)  # (run_id, agent_id, status)
        if any(status in OPEN_RUN_STATUSES for _, _, status in runs):
            raise NeedsResume(
                f"session {sid} has an interrupted run; resume it first (clew resume {sid})"
            )
        if any(status == "waiting" for _, _, status in runs):
            raise SessionWaiting(
                f"session {sid} is waiting for a person; decide (clew pending {sid}),"
                f" then resume it (clew resume {sid})"
            )
        n = sum(1 for _, agent_id, _ in runs if is_main_run(sid, agent_id)) + 1
        inputs = RunInputs(
            prompt=expanded.prompt,
            raw_prompt=prompt,
            create_agent=n == 1,
            references=expanded.references,
            models=model_names(models),
            tools=tool_records(roster.tools),
            settings=settings,
            team=roster.record(),
            context=context,
            flow=FLOW,
        ).in_oldest_version()
        request = RunRequest(
            run_id=main_run_id(sid, n), parent_node_id=row.active_node_id, inputs=inputs
        )
        env = engine.env(sid, models, roster.tools, settings, roster=roster)
    except BaseException:
        engine.unlock(sid)
        engine.release_run(sid)
        raise
    return PreparedRun(engine=engine, session_id=sid, env=env, request=request)


def execute_prepared(run: PreparedRun) -> RunOutcome:
    """Run a prepared main run to its end on this thread; release the session's lock."""
    engine, sid = run.engine, run.session_id
    try:
        outcome = execute(run.env, engine.task_manager(sid), run.request)
        if outcome.status != "interrupted":  # else the writer may be what failed
            engine.writer.flush()
    finally:
        engine.unlock(sid)
        engine.release_run(sid)
    return advise(engine, outcome)
