"""How a run gets its team and model chains: for a new run, a resume, or a replay.

A new run resolves the caller's :class:`~actors.orchestration.team.Team` (or the default
team). A resume uses the caller's team if given, else rebuilds the recorded one over the
tools the caller passes. A replay rebuilds the recorded team over stand-ins — or, given
today's team, uses it, so a changed instruction shows up as a divergence; its models
are never called, so spec strings become stand-ins there, never provider clients.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from actors.errors import UsageError
from actors.models.chains import ModelArg, model_chains
from actors.models.protocol import Model
from actors.models.providers import model_from_spec
from actors.models.tools import Tool, ToolRegistry
from actors.orchestration.roster import (
    Roster,
    needs_check_callables,
    needs_output_models,
    roster_from_record,
)
from actors.orchestration.team import ModelLookup, Team, resolve
from actors.recording.inputs import RunInputs
from actors.recording.recorded import RecordedModel, recorded_models, recorded_tools

Chains = dict[str, list[Model]]


def model_lookup(given: Chains, environ: Mapping[str, str]) -> ModelLookup:
    """Return how a role's spec string becomes a model: a model of that name in ``given``,
    else a provider client built from the spec (``openai:…``, ``anthropic:…``).

    The lookup raises ``ProviderConfigError`` for a spec it cannot build.
    """
    by_name = {m.name: m for chain in given.values() for m in chain}

    def lookup(spec: str) -> Model:
        if spec not in by_name:
            by_name[spec] = model_from_spec(spec, env=environ)
        return by_name[spec]

    return lookup


def team_for_run(
    team: Team | None, tools: Sequence[Tool], model: ModelArg, environ: Mapping[str, str]
) -> tuple[Roster, Chains]:
    """Return a new run's team and model chains (the roles' own chains win)."""
    chains = model_chains(model)
    roster, role_chains = resolve(team, tools, model_lookup(chains, environ))
    return roster, {**chains, **role_chains}


def team_for_resume(
    inputs: RunInputs,
    team: Team | None,
    tools: Sequence[Tool],
    model: ModelArg,
    environ: Mapping[str, str],
) -> tuple[Roster, Chains]:
    """Return a resumed run's team and model chains.

    Without ``team`` the recorded team is rebuilt over ``tools``, and a role's recorded
    chain of its own is looked up again by its names.

    Raises:
        UsageError: the recorded team has typed output (its model classes are needed to
            go on live) and no ``team`` was given.
    """
    if team is not None:
        return team_for_run(team, tools, model, environ)
    typed = needs_output_models(inputs.team)
    if typed:
        raise UsageError(
            f"the run's team has typed output (roles {', '.join(typed)}); pass its team to"
            " resume it (team=…, or clew run --team)"
        )
    callables = needs_check_callables(inputs.team)
    if callables:
        raise UsageError(
            f"the run's team has checks that are Python callables ({', '.join(callables)});"
            " pass its team to go on with it (team=…)"
        )
    chains = model_chains(model)
    lookup = model_lookup(chains, environ)
    default = inputs.models.get("default")
    for role, names in inputs.models.items():
        if role not in chains and names != default:
            chains[role] = [lookup(n) for n in names]
    return roster_from_record(inputs.team, ToolRegistry(tools)), chains


def team_for_replay(
    inputs: RunInputs,
    team: Team | None,
    tools: Sequence[Tool] | None,
    model: ModelArg | None,
) -> tuple[Roster, Chains]:
    """Return a replayed run's team and model chains (stand-ins unless given)."""
    chains = model_chains(model) if model is not None else recorded_models(inputs)
    if team is not None:
        # Models are never called in a replay: a spec string stands for its recorded name.
        roster, _ = resolve(team, tools or (), RecordedModel)
        return roster, chains
    registry = ToolRegistry(tools) if tools is not None else recorded_tools(inputs)
    return roster_from_record(inputs.team, registry), chains
