"""Counterfactual rerun: fork a session at the start of a run and re-execute the run with
one thing changed — another model for a role, an edited tool result, a role's
instructions, the prompt — serving every unchanged model call from the recording.

The rerun is a new main run of the fork (``brain:r1`` of the fork), recorded live like
any run, so the fork replays, resumes, verifies and forks again on its own. What it
serves and what it asks live is decided by :mod:`actors.runtime.served`. What was
changed is recorded in the fork's ``session_created`` metadata (``rerun``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from actors.errors import UsageError
from actors.models.chains import ModelArg, model_chains
from actors.models.protocol import Model
from actors.models.tools import Tool, ToolOutput, ToolRegistry
from actors.orchestration.brain import RunRequest
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.roster import Roster, needs_output_models, roster_from_record
from actors.recording.inputs import RoleRecord, RunInputs, TeamRecord, tool_records
from actors.recording.recorded import read_recording, recorded_tools, run_started_of
from actors.runtime import runs
from actors.runtime.engine import Engine, model_names
from actors.runtime.fork import RERUN_KEY, fork_session
from actors.runtime.served import ServedModel, ServedTool, Unavailable, served_from
from actors.runtime.teams import Chains, model_lookup
from eventlog.errors import ClewError, quoted
from eventlog.events import ModelRequested, ToolCallStarted, Usage
from eventlog.ids import main_run_id, relative, validate_session_id
from eventlog.records import StoredEvent


class RerunReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a rerun made: the fork, what it served from the recording, its outcome."""

    #: The fork holding the rerun.
    session_id: str
    parent_session_id: str
    #: The parent's run that was re-executed, and the fork's run that re-executed it.
    run_id: str
    fork_run_id: str
    #: Where the fork starts (the parent node the run started from; None: the root).
    fork_node_id: str | None
    #: What was changed (as recorded in the fork's metadata).
    changes: dict[str, Any]
    #: Model calls answered from the recording (no cost), and asked live.
    served_calls: int
    live_calls: int
    #: The tokens of the served calls: what the rerun did not pay for again.
    saved_usage: Usage
    #: Tool calls given their recorded result, and the edited calls that were reached.
    served_tool_calls: int
    edited_tool_calls: list[str]
    outcome: RunOutcome


@dataclass
class Changes:
    """What a rerun changes; every field empty: a faithful re-execution."""

    #: A role's model chain instead of the recorded one (models, or a spec string).
    models: Mapping[str, ModelArg | str] = field(default_factory=dict)
    tool_results: Mapping[str, ToolOutput] = field(default_factory=dict)
    instructions: Mapping[str, str] = field(default_factory=dict)
    prompt: str | None = None

    def record(self) -> dict[str, Any]:
        """Return the changes as the fork's metadata records them."""
        return {
            "models": {role: _names(m) for role, m in sorted(self.models.items())},
            "tool_results": sorted(self.tool_results),
            "instructions": sorted(self.instructions),
            "prompt": self.prompt is not None,
        }


def _names(model: ModelArg | str) -> list[str]:
    if isinstance(model, str):
        return [model]
    return [m.name for chain in model_chains(model).values() for m in chain]


# long: one linear story — read, check, fork, build the seams, run, report
def rerun(
    engine: Engine,
    session_id: str,
    *,
    run: str | None = None,
    changes: Changes | None = None,
    model: ModelArg | None = None,
    tools: Sequence[Tool] | None = None,
    title: str | None = None,
) -> RerunReport:
    """Fork ``session_id`` where ``run`` started and re-execute the run there.

    Raises:
        UsageError: no such run, an unknown role, an unknown tool call id, a bad prompt,
            or a team with typed output (nothing is written).
    """
    changes = changes or Changes()
    sid = validate_session_id(session_id)
    engine.store.read_session(sid)
    engine.refuse_if_read_only(f"rerunning a run of {sid}")
    by_run, mains = read_recording(engine.store, sid)
    run_id = _pick_run(sid, run, mains)
    recorded = engine.store.read_runs_under(sid, run_id)
    started = run_started_of(by_run[run_id])
    inputs = RunInputs.from_metadata(started.metadata)
    _check(sid, run_id, inputs, recorded, changes)
    team = _team_with(inputs.team, changes.instructions)
    base = _chains(engine, inputs, model, changes.models)  # a bad spec: refused here
    fork = fork_session(
        engine,
        sid,
        started.start_node_id,
        title=title,
        extra={RERUN_KEY: {"run_id": run_id, **changes.record()}},
    )
    fork_run = main_run_id(fork, 1)
    served = served_from(recorded, parent=(sid, run_id), fork=(fork, fork_run))
    chains: Chains = {r: [ServedModel(m, served) for m in c] for r, c in base.items()}
    registry = ToolRegistry(tools) if tools is not None else recorded_tools(inputs)
    wrapped = ToolRegistry(
        ServedTool(t, served, changes.tool_results, live=tools is not None)
        for t, _ in registry.with_specs()
    )
    roster = roster_from_record(team, wrapped)
    new_inputs = msgspec.structs.replace(
        inputs,
        create_agent=True,
        models=model_names(chains),
        tools=tool_records(roster.tools),
        team=team,
        **_prompt_fields(changes.prompt),
    )
    request = RunRequest(run_id=fork_run, parent_node_id=started.start_node_id, inputs=new_inputs)
    outcome = _execute(engine, fork, request, chains, roster, inputs)
    return RerunReport(
        session_id=fork,
        parent_session_id=sid,
        run_id=run_id,
        fork_run_id=fork_run,
        fork_node_id=started.start_node_id,
        changes=changes.record(),
        served_calls=served.served,
        live_calls=served.live,
        saved_usage=served.saved,
        served_tool_calls=served.served_tools,
        edited_tool_calls=sorted(set(served.edited)),
        outcome=outcome,
    )


def _pick_run(sid: str, run: str | None, mains: list[str]) -> str:
    if not mains:
        raise UsageError(f"session {sid} has no run to rerun")
    if run is None:
        return mains[-1]
    for candidate in (run, f"{sid}:{run}"):
        if candidate in mains:
            return candidate
    shown = ", ".join(relative(sid, m) for m in mains)
    raise UsageError(f"session {sid} has no main run {quoted(run)} (its runs: {shown})")


def _check(
    sid: str,
    run_id: str,
    inputs: RunInputs,
    recorded: list[StoredEvent],
    changes: Changes,
) -> None:
    """Refuse, before anything is written, a change that names nothing of the run."""
    roles = _roles(inputs, recorded)
    for role in [*changes.models, *changes.instructions]:
        if role not in roles:
            raise UsageError(
                f"run {relative(sid, run_id)} has no role {quoted(role)}"
                f" (its roles: {', '.join(sorted(roles))})"
            )
    if changes.instructions and inputs.team is None:
        raise UsageError(
            f"run {relative(sid, run_id)} used the default team, which records no role"
            " instructions to change"
        )
    calls = {e.event.tool_call_id for e in recorded if isinstance(e.event, ToolCallStarted)}
    for call_id in changes.tool_results:
        if call_id not in calls:
            raise UsageError(f"run {relative(sid, run_id)} has no tool call {quoted(call_id)}")
    if changes.prompt is not None:
        runs.check_prompt(changes.prompt)
    typed = needs_output_models(inputs.team)
    if typed:
        raise UsageError(
            f"run {relative(sid, run_id)} has typed output (roles {', '.join(typed)}):"
            " a rerun cannot rebuild its output models"
        )


def _roles(inputs: RunInputs, recorded: list[StoredEvent]) -> set[str]:
    """Return every role the run names: its chains', its team's, and those it called."""
    roles = set(inputs.models)
    team = inputs.team
    if team is not None:
        roles.update(r.name for r in team.roles)
        roles.update(r.name for r in (team.router, team.summarizer) if r is not None)
    roles.update(e.event.role for e in recorded if isinstance(e.event, ModelRequested))
    roles.discard("")
    return roles


def _team_with(team: TeamRecord | None, instructions: Mapping[str, str]) -> TeamRecord | None:
    """Return the recorded team with the given roles' instructions replaced."""
    if team is None or not instructions:
        return team

    def role(r: RoleRecord | None) -> RoleRecord | None:
        if r is None or r.name not in instructions:
            return r
        return msgspec.structs.replace(r, instructions=instructions[r.name])

    return msgspec.structs.replace(
        team,
        roles=[role(r) or r for r in team.roles],
        router=role(team.router),
        summarizer=role(team.summarizer),
    )


def _prompt_fields(prompt: str | None) -> dict[str, Any]:
    if prompt is None:
        return {}
    return {"prompt": prompt, "raw_prompt": prompt, "references": []}


def _chains(
    engine: Engine,
    inputs: RunInputs,
    model: ModelArg | None,
    overrides: Mapping[str, ModelArg | str],
) -> Chains:
    """Return the rerun's chains: the recorded names (built from ``model`` by name, else
    from their spec), a role's override (models, or a spec string) instead of its chain.

    Raises:
        ProviderConfigError: an override's spec cannot be built.
    """
    given = model_chains(model) if model is not None else {}
    lookup = model_lookup(given, engine.environ)

    def build(name: str) -> Model:
        try:
            return lookup(name)
        except ClewError as e:
            return Unavailable(name, str(e))

    chains: Chains = {role: [build(n) for n in names] for role, names in inputs.models.items()}
    for role, arg in overrides.items():
        if isinstance(arg, str):
            chains[role] = [lookup(arg)]
        else:
            chains[role] = [m for chain in model_chains(arg).values() for m in chain]
    return chains


def _execute(
    engine: Engine,
    fork: str,
    request: RunRequest,
    chains: Chains,
    roster: Roster,
    inputs: RunInputs,
) -> RunOutcome:
    """Run the rerun on this thread, as a prepared main run of the fork."""
    engine.claim_run(fork)
    try:
        engine.lock(fork)
        env = engine.env(fork, chains, roster.tools, inputs.settings, roster=roster)
    except BaseException:
        engine.unlock(fork)
        engine.release_run(fork)
        raise
    prepared = runs.PreparedRun(engine=engine, session_id=fork, env=env, request=request)
    return runs.execute_prepared(prepared)
