"""What a run is made of (:class:`RunConfig`: its model chains, tools, settings, team) and
what a run resolves from it when it starts: its team and model chains, its context record.

A new run resolves the caller's :class:`~actors.orchestration.team.Team` (or the default
team). A resume uses the caller's team if given, else rebuilds the recorded one over the
tools the caller passes. A replay rebuilds the recorded team over stand-ins — or, given
today's team, uses it, so a changed instruction shows up as a divergence; its models
are never called, so spec strings become stand-ins there, never provider clients.

A new run's context — each chain's window, the budget, the instruction file — is
resolved once, when the run starts, into its :class:`~actors.recording.inputs.ContextRecord`:
a replay or a resume reads the record back and never asks a model for its window or
reads the instruction file again (docs/context.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from actors.errors import UsageError
from actors.models.chains import ModelArg, model_chains
from actors.models.protocol import Model
from actors.models.specs import model_of_spec
from actors.models.tools import Tool, ToolRegistry
from actors.models.windows import window_of
from actors.orchestration.instructions import read_instructions
from actors.orchestration.roster import (
    Roster,
    needs_check_callables,
    needs_output_models,
    roster_from_record,
)
from actors.orchestration.team import ModelLookup, Team, resolve
from actors.recording.inputs import ContextRecord, RunInputs, RunSettings
from actors.recording.recorded import RecordedModel, recorded_models, recorded_tools

Chains = dict[str, list[Model]]


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """What a live run is made of: one value from ``Session.run`` (and ``start``, ``arun``,
    ``astream``, ``retry``, ``resume``, the serving loop) down to where the run starts.

    ``model``: the model chain(s) (``default`` for every role without its own).
    ``tools``: the tools every role may call. ``settings``: None is the runtime's
    default (a resume or retry: the recorded settings). ``team``: None is the default
    team (a resume or retry: the recorded team, rebuilt over ``tools``). ``redrive``: the
    re-drive a retry belongs to, recorded in its inputs (:mod:`actors.runtime.redrive`).
    """

    model: ModelArg
    tools: Sequence[Tool] = ()
    settings: RunSettings | None = None
    team: Team | None = None
    redrive: str | None = None


def model_lookup(given: Chains, environ: Mapping[str, str]) -> ModelLookup:
    """Return how a role's spec string becomes a model: a model of that name in ``given``,
    else the model built from the spec (``scripted:PATH``, ``openai:…``, ``anthropic:…``).

    The lookup raises ``ProviderConfigError`` (or ``ScriptError``) for a spec it cannot
    build.
    """
    by_name = {m.name: m for chain in given.values() for m in chain}

    def lookup(spec: str) -> Model:
        if spec not in by_name:
            by_name[spec] = model_of_spec(spec, env=environ)
        return by_name[spec]

    return lookup


def team_for_run(config: RunConfig, environ: Mapping[str, str]) -> tuple[Roster, Chains]:
    """Return a new run's team and model chains (the roles' own chains win)."""
    chains = model_chains(config.model)
    roster, role_chains = resolve(config.team, config.tools, model_lookup(chains, environ))
    return roster, {**chains, **role_chains}


def team_for_resume(
    inputs: RunInputs, config: RunConfig, environ: Mapping[str, str]
) -> tuple[Roster, Chains]:
    """Return a resumed run's team and model chains.

    Without ``team`` the recorded team is rebuilt over ``tools``, and a role's recorded
    chain of its own is looked up again by its names.

    Raises:
        UsageError: the recorded team has typed output (its model classes are needed to
            go on live) and no ``team`` was given.
    """
    if config.team is not None:
        return team_for_run(config, environ)
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
    chains = model_chains(config.model)
    lookup = model_lookup(chains, environ)
    default = inputs.models.get("default")
    for role, names in inputs.models.items():
        if role not in chains and names != default:
            chains[role] = [lookup(n) for n in names]
    return roster_from_record(inputs.team, ToolRegistry(config.tools)), chains


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


def context_record(
    settings: RunSettings, models: dict[str, list[Model]], roster: Roster, project: Path
) -> ContextRecord:
    """Return a new run's context record.

    Each model chain's window is its first model's ``context_window``; a role of the team
    that sets its own window overrides it.

    Raises:
        UsageError: ``context_budget`` is not in (0, 1], or the instruction file cannot
            be used (nothing is written).
    """
    budget = settings.context_budget
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not math.isfinite(budget):
        raise UsageError(f"context_budget must be a number in (0, 1], not {budget!r}")
    if not 0 < budget <= 1:
        raise UsageError(f"context_budget must be in (0, 1], not {budget}")
    windows: dict[str, int] = {}
    for key, chain in models.items():
        window = window_of(chain[0]) if chain else None
        if window is not None:
            windows[key] = window
    windows.update(roster.context_windows)
    instructions = read_instructions(
        project, settings.instructions_file, settings.instructions_max_bytes
    )
    return ContextRecord(budget=float(budget), windows=windows, instructions=instructions)
