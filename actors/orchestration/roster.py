"""The team as a run uses it: every role resolved, its tools as an allow-list registry.

A :class:`Roster` is built from a :class:`~actors.orchestration.team.Team` when a run
starts (``team.resolve``), or from the :class:`~actors.recording.inputs.TeamRecord` of a
recording (:func:`roster_from_record`, with tool and output stand-ins). The *default*
roster — no team given — has no catalogue: the router names roles freely, every role
sees every tool and the prompts are the built-in ones, so a run without a team is
event for event what it was before teams existed; it records no team.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.errors import PlanError
from actors.models.protocol import ModelSettings
from actors.models.tools import ToolRegistry
from actors.orchestration.checks import Check, stand_in
from actors.orchestration.output import OutputSpec
from actors.orchestration.plan import FALLBACK_PLAN, Plan
from actors.recording.inputs import CheckRecord, RoleRecord, TeamRecord
from eventlog.ids import is_dispatch_task_id

#: The role of review workers when the team names no reviewer (the default team).
DEFAULT_REVIEWER = "reviewer"
ROUTER = "router"
#: The role of compaction calls (docs/context.md); a team may set its own (``Team.summarizer``).
SUMMARIZER = "summarizer"
#: The primary's built-in tool in a team with a catalogue (``dispatch.py``).
DISPATCH = "dispatch"


@dataclass(frozen=True)
class ResolvedRole:
    """One role, ``extends`` applied: what its agents are told, may call, and must return."""

    name: str
    tools: ToolRegistry
    description: str = ""
    instructions: str = ""
    settings: ModelSettings = field(default_factory=ModelSettings)
    output: OutputSpec | None = None
    extends: str | None = None
    #: False for an open role of the default team (named by the router, every tool).
    listed: bool = True
    #: Its own context window in tokens (overrides its model's); None: its model's.
    context_window: int | None = None

    def record(self) -> RoleRecord:
        """Return the role as the run's inputs record it."""
        return RoleRecord(
            name=self.name,
            description=self.description,
            instructions=self.instructions,
            tools=self.tools.names(),
            settings=self.settings,
            output=self.output.schema if self.output is not None else None,
            extends=self.extends,
        )


@dataclass(frozen=True)
class Roster:
    """A run's team: the catalogue, who answers and reviews, the router, every tool."""

    #: Every tool of the run (the union of the roles' allow-lists); what the run records.
    tools: ToolRegistry
    instructions: str = ""
    #: The catalogue, in the team's order; empty for the default team (open roles).
    roles: dict[str, ResolvedRole] = field(default_factory=dict)
    primary: str | None = None
    reviewer: str | None = None
    router: ResolvedRole | None = None
    summarizer: ResolvedRole | None = None
    #: Context windows the team sets, by role (router and summarizer included).
    context_windows: dict[str, int] = field(default_factory=dict)
    #: Run on each answer, in order; a failure starts a fix (``checks.py``).
    checks: tuple[Check, ...] = ()

    @property
    def catalogued(self) -> bool:
        """True when the team lists its roles (the router may plan with those only)."""
        return bool(self.roles)

    def role(self, name: str) -> ResolvedRole:
        """Return role ``name``; an unlisted name (default team only) gets every tool."""
        found = self.roles.get(name)
        if found is not None:
            return found
        return ResolvedRole(name=name, tools=self.tools, listed=False)

    def router_role(self) -> ResolvedRole:
        """Return the router's role (its instructions and settings; it has no tools)."""
        return self.router or ResolvedRole(name=ROUTER, tools=ToolRegistry(), listed=False)

    def summarizer_role(self) -> ResolvedRole:
        """Return the summariser's role (its instructions and settings; it has no tools)."""
        return self.summarizer or ResolvedRole(name=SUMMARIZER, tools=ToolRegistry(), listed=False)

    def review_role(self) -> str:
        """Return the role of review workers."""
        return self.reviewer or DEFAULT_REVIEWER

    def dispatchable(self) -> list[str]:
        """Return the roles the primary may dispatch (every listed role but its own)."""
        return [name for name in self.roles if name != self.primary]

    def fit(self, plan: Plan) -> Plan:
        """Check a routed plan against the catalogue; return it with the team's choices.

        Raises:
            PlanError: a worker of a role the team does not have (or a reserved id).
        """
        if not self.catalogued:
            return plan
        known = ", ".join(self.roles)
        for w in plan.workers:
            if w.role not in self.roles:
                raise PlanError(
                    f"invalid plan: unknown role {w.role!r} of worker {w.id!r} (roles: {known})"
                )
            if is_dispatch_task_id(w.id):
                raise PlanError(f"invalid plan: worker id {w.id!r} is reserved for dispatch")
        primary = self.primary or plan.primary_role
        if primary not in self.roles:
            raise PlanError(f"invalid plan: unknown primary role {primary!r} (roles: {known})")
        review = plan.review and self.reviewer is not None
        return plan.model_copy(update={"primary_role": primary, "review": review})

    def fallback_plan(self) -> Plan:
        """Return the plan of a rejected route: the primary answers alone, no review."""
        if not self.catalogued:
            return FALLBACK_PLAN
        return Plan(primary_role=self.primary or next(iter(self.roles)))

    def record(self) -> TeamRecord | None:
        """Return the team as the run's inputs record it; None for the default team."""
        record = TeamRecord(
            instructions=self.instructions,
            roles=[r.record() for r in self.roles.values()],
            primary=self.primary,
            reviewer=self.reviewer,
            router=self.router.record() if self.router is not None else None,
            summarizer=self.summarizer.record() if self.summarizer is not None else None,
            checks=[CheckRecord(name=c.name, command=c.command) for c in self.checks],
        )
        return None if record == TeamRecord() else record


def default_roster(tools: ToolRegistry) -> Roster:
    """Return the default team: open roles, every tool for every role, built-in prompts."""
    return Roster(tools=tools)


def roster_from_record(record: TeamRecord | None, tools: ToolRegistry) -> Roster:
    """Rebuild a recorded team; ``tools`` are the run's (stand-ins in a replay).

    Output checks are stand-ins that read the recorded verdicts (see ``output``); a
    recorded allow-list keeps the tools of ``tools`` it names.
    """
    if record is None:
        return default_roster(tools)

    def role(r: RoleRecord) -> ResolvedRole:
        allowed = ToolRegistry(t for t, _ in tools.with_specs() if t.name in r.tools)
        return ResolvedRole(
            name=r.name,
            tools=allowed,
            description=r.description,
            instructions=r.instructions,
            settings=r.settings,
            output=OutputSpec(r.output, None) if r.output is not None else None,
            extends=r.extends,
        )

    return Roster(
        tools=tools,
        instructions=record.instructions,
        roles={r.name: role(r) for r in record.roles},
        primary=record.primary,
        reviewer=record.reviewer,
        router=role(record.router) if record.router is not None else None,
        summarizer=role(record.summarizer) if record.summarizer is not None else None,
        checks=tuple(stand_in(c.name, c.command) for c in record.checks),
    )


def needs_output_models(record: TeamRecord | None) -> list[str]:
    """Return the recorded roles with typed output (a live run needs their model class)."""
    if record is None:
        return []
    return [r.name for r in record.roles if r.output is not None]


def needs_check_callables(record: TeamRecord | None) -> list[str]:
    """Return the recorded checks that are Python callables (a live run needs them)."""
    if record is None:
        return []
    return [c.name for c in record.checks if c.command is None]
