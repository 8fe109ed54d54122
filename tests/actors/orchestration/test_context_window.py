"""Context that lasts: budgets, compaction before a call, one retry after an overflow."""

from __future__ import annotations

from typing import Any

import pytest
from _cli_helpers import Where, invoke
from _runtime_helpers import sent_requests

from actors.errors import TeamError
from actors.models.protocol import ModelRequest
from actors.models.scripted import ScriptedModel
from actors.orchestration.compaction import SUMMARY_HEAD
from actors.orchestration.team import Role, Team, resolve
from actors.recording.inputs import RunInputs
from actors.runtime.runtime import Runtime
from eventlog.events import (
    ModelFailed,
    ModelRequested,
    NodeAppended,
    RunStarted,
    TokenUsage,
)
from eventlog.records import StoredEvent
from projections.tokens import count_messages, count_text
from projections.verify import verify

WINDOW = 900
BUDGET = int(WINDOW * 0.8)
SUMMARY = "Summary: the user asked numbered questions; the lead answered each with 42."
ANSWER = "The answer is 42, as it was for every question before this one. " * 2


def model(window: int | None = WINDOW, **extra: Any) -> ScriptedModel:
    rules = [
        {"role": "router", "replies": [{"json": {"primary_role": "lead", "workers": []}}]},
        {"role": "summarizer", "phase": "compact", "replies": [{"text": SUMMARY}]},
        {"role": "lead", "replies": [{"text": ANSWER}]},
    ]
    return ScriptedModel({"rules": rules, **extra}, context_window=window)


def request_tokens(r: ModelRequest) -> int:
    # No tool specs here: the agents of these runs have no tools.
    return count_text(r.system) + count_messages(r.messages)


def compactions(events: list[StoredEvent]) -> list[NodeAppended]:
    return [
        e.event
        for e in events
        if isinstance(e.event, NodeAppended) and e.event.node.node_type == "compaction"
    ]


def test_a_sixty_question_session_in_a_small_window_compacts_and_stays_in_budget(
    rt: Runtime, tmp_path: Any
) -> None:
    session = rt.new_session()
    for i in range(1, 61):
        out = session.run(f"Question {i}: what is six times seven, again?", model=model())
        assert "completed" == out.status, out.error
    events = rt.store.read_events(session.id)

    requests = sent_requests(rt.store, session.id)
    assert 120 < len(requests)  # a router and a lead call per run, and the summaries
    assert [] == [r.call_index for r in requests if request_tokens(r) > BUDGET]
    done = compactions(events)
    assert len(done) >= 5
    # Each compaction node holds the summary and the id range it replaces; nothing is
    # deleted: the tree still holds every node.
    meta = done[-1].node.metadata["compacted"]
    assert {"from", "through", "nodes", "tokens", "kept_from"} <= set(meta)
    assert done[-1].node.content[0].text.startswith(SUMMARY_HEAD.format(n=meta["nodes"]))
    # Per run: the question, the plan, the task board (flow 2) and the answer.
    assert 60 * 5 + len(done) == len(rt.store.read_nodes(session.id))
    summaries = [r for r in requests if r.role == "summarizer"]
    assert (len(done), {"compact"}) == (len(summaries), {r.phase for r in summaries})
    # Every node has a token count; a reply's is the provider's output tokens.
    assert all(n.token_count is not None for n in rt.store.read_nodes(session.id))

    report = rt.replay(session.id)
    assert report.identical, report.summary()
    assert verify(rt.store, session.id).ok


def test_clew_show_marks_the_compactions(tmp_path: Any) -> None:
    where = Where(home=tmp_path / "home", project=tmp_path / "project")
    with Runtime(where.home, where.project) as rt:
        session = rt.new_session()
        for i in range(1, 7):
            session.run(f"Question {i}: what is six times seven?", model=model(window=400))
        sid = session.id

    shown, as_json = invoke(where, "show", sid), invoke(where, "show", sid, "--json")

    assert (0, 0) == (shown.code, as_json.code), shown.err + as_json.err
    marked = [line for line in shown.out.splitlines() if "✂ compacted" in line]
    nodes = as_json.json()["nodes"]
    compacted = [n["compacted"] for n in nodes if n["node_type"] == "compaction"]
    assert len(marked) == len(compacted) >= 1
    assert all(n["token_count"] is not None for n in nodes)
    assert {"from", "through", "nodes", "tokens", "kept_from"} <= set(compacted[0])


def test_a_model_without_a_window_never_compacts_ahead(rt: Runtime) -> None:
    session = rt.new_session()
    for i in range(1, 8):
        session.run(f"Question {i}", model=model(window=None))
    assert [] == compactions(rt.store.read_events(session.id))


def test_a_context_length_error_triggers_one_compaction_and_one_retry(rt: Runtime) -> None:
    session = rt.new_session()
    for i in range(1, 4):
        session.run(f"Question {i}", model=model(window=None))
    too_long = {
        "rules": [
            {"role": "router", "replies": [{"json": {"primary_role": "lead", "workers": []}}]},
            {"role": "summarizer", "replies": [{"text": SUMMARY}]},
            # The request holding the whole history (7 earlier replies) fails; after the
            # compaction it holds fewer and fits.
            {
                "role": "lead",
                "replies": [
                    *[{"text": "Fine now."}] * 7,
                    {
                        "error": "HTTP 400: prompt is too long: 210000 tokens > 200000 maximum",
                        "status": 400,
                    },
                ],
            },
        ]
    }

    out = session.run("Question 4", model=ScriptedModel(too_long))

    assert ("completed", "Fine now.") == (out.status, out.answer), out.error
    run_id = out.run_id
    events = [e for e in rt.store.read_events(session.id) if e.run_id == run_id]
    failed = [e.event for e in events if isinstance(e.event, ModelFailed)]
    assert ["lead"] == [r.role for r in (e.event for e in events) if isinstance(r, ModelRequested)][
        1:2
    ]
    assert 1 == len(failed)
    (done,) = compactions(events)
    assert "context_length" == done.node.metadata["trigger"]
    roles = [e.event.role for e in events if isinstance(e.event, ModelRequested)]
    assert ["router", "lead", "summarizer", "lead"] == roles
    # The retry is a call of its own, after the compaction, holding the summary.
    retry = sent_requests(rt.store, session.id)[-1]
    assert retry.messages[0].content == done.node.content
    assert 1 == len(
        [e for e in events if isinstance(e.event, TokenUsage) and e.event.role == "lead"]
    )
    report = rt.replay(session.id)
    assert report.identical, report.summary()


def test_a_new_run_records_its_windows_and_budget(rt: Runtime) -> None:
    session = rt.new_session()
    out = session.run("Question 1", model={"default": model(), "router": model(window=5000)})
    (started,) = [
        e.event
        for e in rt.store.read_events(session.id)
        if isinstance(e.event, RunStarted) and e.run_id == out.run_id
    ]
    context = RunInputs.from_metadata(started.metadata).context
    assert context is not None
    assert ({"default": WINDOW, "router": 5000}, 0.8) == (context.windows, context.budget)
    assert (BUDGET, 4000) == (context.budget_for("lead"), context.budget_for("router"))


def test_a_team_sets_a_role_s_window_and_the_summariser_s_model_and_instructions(
    rt: Runtime,
) -> None:
    summariser = ScriptedModel(
        {"rules": [{"role": "summarizer", "replies": [{"text": "Terse summary."}]}]},
        name="summ",
    )
    team = Team(
        roles=[Role("lead", context_window=400)],
        primary="lead",
        summarizer=Role("summarizer", instructions="Be terse.", model=summariser),
    )
    session = rt.new_session()
    for i in range(1, 8):
        out = session.run(f"Question {i}: what is six times seven?", model=model(None), team=team)
        assert "completed" == out.status, out.error
    events = rt.store.read_events(session.id)

    summaries = [r for r in sent_requests(rt.store, session.id) if r.role == "summarizer"]
    assert summaries and {"summ"} == {r.model for r in summaries}
    assert all("Be terse." in r.system for r in summaries)
    (first,) = [e.event for e in events if isinstance(e.event, RunStarted)][:1]
    inputs = RunInputs.from_metadata(first.metadata)
    assert inputs.context is not None and {"lead": 400} == inputs.context.windows
    assert inputs.team is not None and inputs.team.summarizer is not None
    assert "Be terse." == inputs.team.summarizer.instructions
    report = rt.replay(session.id)
    assert report.identical, report.summary()


def test_summarizer_is_a_reserved_role_name() -> None:
    with pytest.raises(TeamError, match="summarizer"):
        resolve(Team(roles=[Role("summarizer")]), (), lambda spec: model())
