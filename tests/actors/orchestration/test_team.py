"""Teams: roles resolved with ``extends``, the router's catalogue, allow-lists, per-role
instructions, settings and models, the tool context, and a replay that shows a changed
instruction as changed lines.

Every run goes through ``run_session``: it replays identically (with the recorded
stand-ins, and with the team given again) and verifies.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pydantic
import pytest
from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.errors import TeamError
from actors.models.protocol import ModelRequest, ModelResponse, ModelSettings
from actors.models.scripted import ScriptedModel
from actors.models.tools import FunctionTool, ToolContext, tool
from actors.orchestration.team import Role, Team, resolve
from actors.recording.recorded import RecordedModel
from actors.runtime.runtime import Runtime
from eventlog.events import ModelRequested, PlanRejected, TodoPlanned, ToolCallStarted, ToolFailed

PROMPT = "My order #42 never arrived."


class QueryArgs(pydantic.BaseModel):
    query: str


def kb_tool(calls: list[str], name: str = "search_kb") -> FunctionTool:
    def search(args: QueryArgs) -> str:
        """Search the knowledge base."""
        calls.append(args.query)
        return f"{name}: shipping takes 3 days"

    return FunctionTool(name, search, QueryArgs, idempotent=True)


def support_team(calls: list[str], **changes: Any) -> Team:
    """A small support desk: a researcher with a tool, a writer (primary), a critic."""
    search, refund = kb_tool(calls), kb_tool(calls, "refund")
    roles = [
        Role(
            "researcher",
            description="finds facts",
            instructions="Search the knowledge base first.",
            tools=[search],
            settings=ModelSettings(max_tokens=800, temperature=0.2),
        ),
        Role("writer", description="writes the answer", instructions="Be brief.", tools=[refund]),
        Role("critic", extends="researcher", instructions="Find what is missing.", tools=[]),
    ]
    fields: dict[str, Any] = {
        "instructions": "You are the support desk of ACME.",
        "roles": roles,
        "primary": "writer",
        "reviewer": "critic",
        "router": Role("router", instructions="Prefer one worker."),
    }
    return Team(**(fields | changes))


def requests_of(s: Any, role: str) -> list[ModelRequest]:
    """What the role's recorded model calls sent (rebuilt from the log)."""
    return [r for r in s.requests() if r.role == role]


# --- definition ---------------------------------------------------------------------------


def _resolved(team: Team) -> Any:
    roster, _ = resolve(team, (), RecordedModel)
    return roster


def test_a_role_that_extends_another_inherits_what_it_leaves_unset() -> None:
    roster = _resolved(support_team([]))

    critic, researcher = roster.roles["critic"], roster.roles["researcher"]
    assert "finds facts" == critic.description  # inherited
    assert "Find what is missing." == critic.instructions  # overridden
    assert [] == critic.tools.names()  # tools=[]: no tools, not the base's
    assert ModelSettings(max_tokens=800, temperature=0.2) == critic.settings
    assert ["search_kb"] == researcher.tools.names()
    assert "researcher" == critic.extends


def test_settings_of_a_derived_role_merge_field_by_field() -> None:
    team = Team(
        roles=[
            Role("base", settings=ModelSettings(max_tokens=500, temperature=0.1)),
            Role("hot", extends="base", settings=ModelSettings(temperature=0.9)),
            Role("hotter", extends="hot", tools=None),
        ]
    )

    roster = _resolved(team)

    assert ModelSettings(max_tokens=500, temperature=0.9) == roster.roles["hotter"].settings


def test_an_extends_cycle_is_refused_with_the_cycle_named() -> None:
    team = Team(roles=[Role("a", extends="b"), Role("b", extends="c"), Role("c", extends="a")])

    with pytest.raises(TeamError, match="extends cycle a → b → c → a"):
        resolve(team, (), RecordedModel)


@pytest.mark.parametrize(
    ("team", "message"),
    [
        (Team(roles=[Role("a", extends="ghost")]), "role 'a' extends unknown role 'ghost'"),
        (Team(roles=[Role("a"), Role("a")]), "two roles are named 'a'"),
        (Team(roles=[Role("default")]), "role name 'default' must match"),
        (Team(roles=[Role("a b")]), "role name 'a b' must match"),
        (Team(roles=[Role("a")], primary="b"), "the primary 'b' is not one of its roles"),
        (Team(roles=[Role("a")], reviewer="b"), "the reviewer 'b' is not one of its roles"),
        (
            Team(roles=[Role("a", tools=[kb_tool([])]), Role("b", tools=[kb_tool([])])]),
            "two different tools are named 'search_kb'",
        ),
        (
            Team(roles=[Role("a", tools=[kb_tool([], "dispatch")])]),
            "the tool name 'dispatch' is reserved",
        ),
    ],
    ids=[
        "unknown-base",
        "duplicate",
        "reserved",
        "bad-name",
        "primary",
        "reviewer",
        "same-tool-name",
        "dispatch",
    ],
)
def test_an_unusable_team_is_refused_before_anything_is_written(
    rt: Runtime, team: Team, message: str
) -> None:
    session = rt.new_session()
    before = rt.store.count_events(session.id)

    with pytest.raises(TeamError, match=message):
        session.run(PROMPT, model=scripted(), team=team)

    assert before == rt.store.count_events(session.id)


# --- the router ---------------------------------------------------------------------------


def test_the_router_is_shown_the_catalogue_the_team_and_its_own_instructions(
    rt: Runtime,
) -> None:
    model = scripted(
        route([worker("w1", "researcher", "Find the order")], primary_role="writer"),
        rule("researcher", {"json": {"summary": "Order #42 shipped late."}}),
        rule("writer", {"text": "Sorry: it ships tomorrow."}),
    )

    s = run_session(rt, PROMPT, model, team=support_team([]))

    (router,) = requests_of(s, "router")
    for line in [
        "You are the support desk of ACME.",
        "- researcher — finds facts (tools: search_kb)",
        "- writer — writes the answer (tools: refund)",
        "- critic — finds facts (tools: none)",
        "The primary role, who writes the answer, is writer.",
        'With "review": true, critic reviews the answer.',
        "Prefer one worker.",
    ]:
        assert line in router.system
    assert "Sorry: it ships tomorrow." == s.outcome.answer


def test_a_plan_with_a_role_outside_the_catalogue_is_rejected_for_the_team_primary_alone(
    rt: Runtime,
) -> None:
    model = scripted(
        route([worker("w1", "hacker", "Break in")], primary_role="writer"),
        rule("writer", {"text": "Answered alone."}),
    )

    s = run_session(rt, PROMPT, model, team=support_team([]))

    (rejected,) = s.of(PlanRejected)
    assert rejected.error.startswith("invalid plan: unknown role 'hacker' of worker 'w1'")
    (planned,) = s.of(TodoPlanned)
    assert [("primary", "writer")] == [(t.id, t.owner_role) for t in planned.todos]
    assert ("completed", "Answered alone.") == (s.outcome.status, s.outcome.answer)


def test_a_team_without_a_reviewer_never_reviews(rt: Runtime) -> None:
    model = scripted(route(primary_role="writer", review=True), rule("writer", {"text": "Done."}))

    s = run_session(rt, PROMPT, model, team=support_team([], reviewer=None))

    (planned,) = s.of(TodoPlanned)
    assert ["primary"] == [t.id for t in planned.todos]
    assert [] == requests_of(s, "critic")


def test_the_teams_reviewer_reviews_the_answer(rt: Runtime) -> None:
    model = scripted(
        route(primary_role="writer", review=True),
        rule("writer", {"text": "Done."}),
        rule("critic", {"json": {"summary": "Fine.", "verdict": "approved"}}),
    )

    s = run_session(rt, PROMPT, model, team=support_team([]))

    (planned,) = s.of(TodoPlanned)
    assert ("review", "critic") == (planned.todos[-1].id, planned.todos[-1].owner_role)
    (review,) = requests_of(s, "critic")
    assert "review" == review.phase
    assert "Find what is missing." in review.system


# --- roles: tools, instructions, settings, models -------------------------------------


def test_a_worker_sees_only_its_roles_tools_and_a_call_outside_them_never_runs(
    rt: Runtime,
) -> None:
    calls: list[str] = []
    asks_for_refund = {
        "tool_calls": [
            {"name": "search_kb", "arguments": {"query": "order 42"}},
            {"name": "refund", "arguments": {"query": "order 42"}},
        ]
    }
    model = scripted(
        route([worker("w1", "researcher", "Find the order")], primary_role="writer"),
        rule("researcher", asks_for_refund, {"json": {"summary": "Shipped late."}}),
        rule("writer", {"text": "Sorry."}),
    )

    s = run_session(rt, PROMPT, model, team=support_team(calls))

    run_id = s.worker_run("w1")
    assert ["order 42"] == calls  # search_kb ran; refund never did
    assert [["search_kb"], ["search_kb"]] == [r.tools for r in s.of(ModelRequested, run_id)]
    (refused,) = s.of(ToolFailed, run_id)
    assert ("ToolNotAllowed", "role 'researcher' may not call tool 'refund'") == (
        refused.error_type,
        refused.message,
    )
    assert ["search_kb", "refund"] == [t.tool_name for t in s.of(ToolCallStarted, run_id)]
    (writer,) = requests_of(s, "writer")
    # its own tool, and the built-in dispatch
    assert ["dispatch", "refund"] == [t.name for t in writer.tools]


class Capture:
    """A model that keeps every request it is sent, then answers like ``inner``."""

    def __init__(self, inner: ScriptedModel, name: str) -> None:
        self.inner, self.name = inner, name
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.inner.complete(request)


def test_each_role_gets_its_instructions_settings_and_own_model_chain(rt: Runtime) -> None:
    script = scripted(
        route([worker("w1", "researcher", "Find the order")], primary_role="writer"),
        rule("researcher", {"json": {"summary": "Shipped late."}}),
        rule("writer", {"text": "Sorry."}),
    )
    cheap, default = Capture(script, "openai:gpt-4.1-mini"), Capture(script, "big")
    team = support_team([])
    # A spec string names a model passed in ``model=`` (else a provider would be built).
    roles = [Role("researcher", model="openai:gpt-4.1-mini", extends="base"), *team.roles[1:]]
    base = Role(
        "base",
        description="finds facts",
        instructions=team.roles[0].instructions,
        tools=team.roles[0].tools,
        settings=team.roles[0].settings,
    )
    team = Team(
        instructions=team.instructions, roles=[base, *roles], primary="writer", reviewer="critic"
    )

    s = run_session(rt, PROMPT, {"default": default, "helper": cheap}, team=team)

    (researcher,) = cheap.requests
    assert (800, 0.2) == (researcher.max_tokens, researcher.temperature)
    assert researcher.system.startswith(
        "You are the support desk of ACME.\n\n# Your role: researcher — finds facts\n"
        "Search the knowledge base first.\n\nYou are a worker agent"
    )
    writer = next(r for r in default.requests if r.role == "writer")
    assert (4096, None) == (writer.max_tokens, writer.temperature)  # the request defaults
    assert "# Your role: writer — writes the answer\nBe brief." in writer.system
    assert ["openai:gpt-4.1-mini"] == [r.model for r in requests_of(s, "researcher")]


def test_a_tool_taking_a_context_gets_the_recorded_call_id_and_who_calls(
    rt: Runtime,
) -> None:
    seen: list[ToolContext] = []

    @tool(QueryArgs, idempotent=True)
    def search_kb(args: QueryArgs, ctx: ToolContext) -> str:
        """Search the knowledge base."""
        seen.append(ctx)
        return "found"

    team = Team(roles=[Role("researcher", tools=[search_kb]), Role("writer")], primary="writer")
    model = scripted(
        route([worker("w1", "researcher", "Find")]),
        rule(
            "researcher",
            {"tool_calls": [{"name": "search_kb", "arguments": {"query": "x"}}]},
            {"text": "Found."},
        ),
        rule("writer", {"text": "Done."}),
    )

    s = run_session(rt, PROMPT, model, team=team)

    (started,) = s.of(ToolCallStarted)
    (ctx,) = seen
    assert ToolContext(
        tool_call_id=started.tool_call_id,
        session_id=s.sid,
        run_id=s.worker_run("w1"),
        agent_id=s.ctx("w1"),
        role="researcher",
        attempt=1,
    ) == msgspec.structs.replace(ctx, cancel=None)
    assert ctx.cancel is not None and not ctx.cancelled  # the run's scope, never cancelled


# --- replay ---------------------------------------------------------------------------


def test_a_replay_with_an_edited_instruction_diverges_with_the_changed_lines(
    rt: Runtime,
) -> None:
    model = scripted(
        route([worker("w1", "researcher", "Find the order")], primary_role="writer"),
        rule("researcher", {"json": {"summary": "Shipped late."}}),
        rule("writer", {"text": "Sorry."}),
    )
    s = run_session(rt, PROMPT, model, team=support_team([]))
    edited = support_team([])
    first, *rest = edited.roles
    edited = support_team(
        [],
        roles=[
            Role(
                "researcher",
                description=first.description,
                instructions="Search the knowledge base first.\nThen ask the carrier.",
                tools=first.tools,
                settings=first.settings,
            ),
            *rest,
        ],
    )

    report = rt.replay(s.sid, team=edited)

    assert not report.identical
    (d,) = report.divergences  # the researcher's run only: the Brain goes on as recorded
    assert s.worker_run("w1") == d.run_id
    (system,) = [f for f in d.diff if f.path == "system"]
    assert "+Then ask the carrier." in system.lines
    assert " Search the knowledge base first." in system.lines
    assert "system changed: +Then ask the carrier." in d.message
