"""Define your team: roles with instructions, tool allow-lists, models, typed output.

A :class:`Team` is data the Brain orchestrates. ``session.run(prompt, team=team, …)``
resolves it once (:func:`resolve`: ``extends`` applied, names checked, an ``extends``
cycle refused) into the run's :class:`~actors.orchestration.roster.Roster`, which the
run records in its inputs — so a replay notices when the team changed. Without a team a
run uses the default team: today's behaviour, event for event.

Roles inherit with ``extends``: every field left unset (``None``, or ``""`` for texts)
is taken from the base role; ``tools=[]`` says "no tools", ``tools=None`` "inherit".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace

import pydantic

from actors.errors import TeamError
from actors.models.async_models import AnyModel, as_model
from actors.models.protocol import Model, ModelSettings
from actors.models.tools import Tool, ToolRegistry, check_tool
from actors.orchestration.checks import Check, check_names
from actors.orchestration.output import OutputSpec
from actors.orchestration.plan import find_cycle
from actors.orchestration.roster import DISPATCH, ROUTER, SUMMARIZER, ResolvedRole, Roster

#: A role's model: one model, a fallback chain, or spec strings (``openai:gpt-4.1-mini``),
#: resolved when the run starts (a model of that name passed in ``model=``, else a provider).
RoleModel = AnyModel | str | Sequence[AnyModel | str]
ROLE_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
#: Names that are model-chain keys (``model={"default": …, "router": …}``), not roles.
RESERVED_ROLE_NAMES = ("default", ROUTER, SUMMARIZER)


@dataclass(frozen=True)
class Role:
    """One role of a team; every field but ``name`` may be inherited with ``extends``."""

    name: str
    _: KW_ONLY
    #: Shown to the router in the role catalogue.
    description: str = ""
    #: Told to every agent of this role (after the team's instructions).
    instructions: str = ""
    #: The allow-list: the only tools this role's agents see and may call.
    tools: Sequence[Tool] | None = None
    #: Its model chain; None: the run's chain for the role's name, else ``default``.
    model: RoleModel | None = None
    settings: ModelSettings | None = None
    #: A pydantic model its final reply must validate against.
    output: type[pydantic.BaseModel] | None = None
    #: The role this one inherits from.
    extends: str | None = None
    #: Its context window in tokens, overriding its model's (docs/context.md).
    context_window: int | None = None


@dataclass(frozen=True)
class Team:
    """A team: shared instructions, a role catalogue, the primary, the reviewer, the router."""

    _: KW_ONLY
    #: Told to every agent (router, workers, primary, reviewer).
    instructions: str = ""
    roles: Sequence[Role] = ()
    #: The role that writes the answer; None: the router picks one from the catalogue.
    primary: str | None = None
    #: The role that reviews the answer when the plan asks for a review; None: no review.
    reviewer: str | None = None
    #: The router's instructions, model and settings (its name is always ``router``).
    router: Role | None = None
    #: The summariser's instructions, model and settings (its name is always
    #: ``summarizer``): who compacts a conversation that outgrows its budget.
    summarizer: Role | None = None
    #: Tools every role may call, on top of its own.
    tools: Sequence[Tool] = field(default=())
    #: Run on the primary's answer (and after each fix); a failure starts a fix with
    #: trigger ``checks_failed``.
    checks: Sequence[Check] = field(default=())


#: Turns a spec string into a model (given by the runtime, which knows the environment).
ModelLookup = Callable[[str], Model]


def resolve(
    team: Team | None, tools: Sequence[Tool], lookup: ModelLookup
) -> tuple[Roster, dict[str, list[Model]]]:
    """Resolve ``team`` (None: the default team) with the run's extra ``tools``.

    Returns the roster and the model chains the roles name (by role name).

    Raises:
        TeamError: a bad role name, a duplicate role or tool name, an unknown base or
            ``extends`` cycle, a primary or reviewer that is not a role.
    """
    shared = [*(team.tools if team is not None else ()), *tools]
    union = ToolRegistry()
    for t in shared:
        _join(union, t)
    if team is None:
        return Roster(tools=union), {}
    check_names(team.checks)
    flat = _flatten(team.roles)
    chains: dict[str, list[Model]] = {}
    roles: dict[str, ResolvedRole] = {}
    for role in flat:
        roles[role.name] = _resolved(role, shared, union)
        if role.model is not None:
            chains[role.name] = _chain(role.model, lookup)
    router, summarizer = _special(team.router, ROUTER), _special(team.summarizer, SUMMARIZER)
    specials = ((ROUTER, team.router), (SUMMARIZER, team.summarizer))
    for key, special in specials:
        if special is not None and special.model is not None:
            chains[key] = _chain(special.model, lookup)
    if roles and union.get(DISPATCH) is not None:
        raise TeamError(f"team: the tool name {DISPATCH!r} is reserved for the built-in tool")
    for what, name in (("primary", team.primary), ("reviewer", team.reviewer)):
        if name is not None and name not in roles:
            raise TeamError(f"team: the {what} {name!r} is not one of its roles")
    roster = Roster(
        tools=union,
        instructions=team.instructions,
        roles=roles,
        primary=team.primary,
        reviewer=team.reviewer,
        router=router,
        summarizer=summarizer,
        context_windows=_windows([*((r.name, r) for r in flat), *specials]),
        checks=tuple(team.checks),
    )
    return roster, chains


def _windows(roles: Sequence[tuple[str, Role | None]]) -> dict[str, int]:
    """Return the context windows the roles set, by role name.

    Raises:
        TeamError: a window that is not a positive number of tokens.
    """
    out: dict[str, int] = {}
    for name, role in roles:
        window = role.context_window if role is not None else None
        if window is None:
            continue
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise TeamError(f"team: role {name!r} has context_window {window!r}; want tokens > 0")
        out[name] = window
    return out


def _special(r: Role | None, name: str) -> ResolvedRole | None:
    """Return the router's or summariser's role; None when it changes nothing (its model
    and window aside: those are in the chains and the recorded windows)."""
    if r is None:
        return None
    settings = r.settings or ModelSettings()
    if not r.instructions and settings == ModelSettings():
        return None
    return ResolvedRole(
        name=name, tools=ToolRegistry(), instructions=r.instructions, settings=settings
    )


def _flatten(roles: Sequence[Role]) -> list[Role]:
    """Return the roles with ``extends`` applied, in the team's order."""
    by_name: dict[str, Role] = {}
    for role in roles:
        if not ROLE_NAME_RE.match(role.name) or role.name in RESERVED_ROLE_NAMES:
            raise TeamError(
                f"team: role name {role.name!r} must match [a-zA-Z0-9_-]{{1,40}} and not be"
                f" {' or '.join(RESERVED_ROLE_NAMES)}"
            )
        if role.name in by_name:
            raise TeamError(f"team: two roles are named {role.name!r}")
        by_name[role.name] = role
    for role in roles:
        if role.extends is not None and role.extends not in by_name:
            raise TeamError(f"team: role {role.name!r} extends unknown role {role.extends!r}")
    cycle = find_cycle({r.name: [r.extends] if r.extends else [] for r in roles})
    if cycle:
        raise TeamError("team: extends cycle " + " → ".join(cycle))
    done: dict[str, Role] = {}

    def flat(name: str) -> Role:
        if name not in done:
            role = by_name[name]
            done[name] = role if role.extends is None else _inherit(role, flat(role.extends))
        return done[name]

    return [flat(r.name) for r in roles]


def _inherit(role: Role, base: Role) -> Role:
    """Return ``role`` with every unset field taken from ``base`` (already flattened)."""
    settings = role.settings or base.settings
    if role.settings is not None and base.settings is not None:
        settings = role.settings.over(base.settings)
    return replace(
        role,
        description=role.description or base.description,
        instructions=role.instructions or base.instructions,
        tools=role.tools if role.tools is not None else base.tools,
        model=role.model if role.model is not None else base.model,
        settings=settings,
        output=role.output if role.output is not None else base.output,
        context_window=role.context_window or base.context_window,
    )


def _resolved(role: Role, shared: Sequence[Tool], union: ToolRegistry) -> ResolvedRole:
    """Return the run's form of a flattened role; its tools join the run's ``union``."""
    allowed = ToolRegistry()
    for t in [*(role.tools or ()), *shared]:
        _join(union, t)
        _join(allowed, t)
    return ResolvedRole(
        name=role.name,
        tools=allowed,
        description=role.description,
        instructions=role.instructions,
        settings=role.settings or ModelSettings(),
        output=OutputSpec.of(role.output) if role.output is not None else None,
        extends=role.extends,
        context_window=role.context_window,
    )


def _join(registry: ToolRegistry, t: Tool) -> None:
    """Add ``t`` unless it is there already; a different tool of the same name is refused."""
    known = registry.get(check_tool(t).name)
    if known is None:
        registry.add(t)
    elif known is not t:
        raise TeamError(f"team: two different tools are named {t.name!r}")


def _chain(model: RoleModel, lookup: ModelLookup) -> list[Model]:
    """Return a role's model chain, spec strings looked up."""
    items: Sequence[AnyModel | str] = (
        [model] if isinstance(model, str) or not isinstance(model, Sequence) else model
    )
    return [lookup(m) if isinstance(m, str) else as_model(m) for m in items]
