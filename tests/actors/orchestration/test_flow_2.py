"""What flow 2 changed in a main run (issue 22): usage, the plan's edges, the review skip,
the answer in ``run_ended``, the primary's worker summaries, the task board nodes.

Every session goes through ``run_session``: it replays identically and verifies (the
runtime's verify included, which checks each run's usage against its ``token_usage``).
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.recording.inputs import FLOW, RunInputs
from actors.runtime.runtime import Runtime
from eventlog.events import (
    HandoffSent,
    NodeAppended,
    RunEnded,
    RunStarted,
    TodoPlanned,
    TokenUsage,
    Usage,
)
from eventlog.records import StoredEvent
from projections.snapshot import session_snapshot
from projections.usage import rebuild as usage_of

PROMPT = "Compare three note-taking apps and recommend one."


def usage_sum(events: list[StoredEvent], run_id: str) -> Usage:
    total = Usage()
    for e in events:
        if isinstance(e.event, TokenUsage) and e.run_id == run_id:
            total = total.plus(e.event.usage)
    return total


def test_a_new_run_records_the_current_flow_in_its_inputs(rt: Runtime) -> None:
    s = run_session(rt, PROMPT, scripted(route()))

    [started] = s.of(RunStarted, s.brain_run)
    inputs = RunInputs.from_metadata(started.metadata)
    assert (FLOW, 5) == (inputs.flow, inputs.inputs_version)


# --- item 1: the router's tokens are in the run's usage --------------------------------------


def test_a_runs_usage_includes_the_router_and_equals_the_usage_projection(rt: Runtime) -> None:
    s = run_session(
        rt,
        PROMPT,
        scripted(route([worker("w1", "researcher", "Find")]), rule("researcher", {"text": "x"})),
    )

    totals = usage_of(s.events).by_run
    for row in rt.store.read_runs(s.sid):
        t = totals[row.run_id]
        assert row.usage is not None
        assert (t.input_tokens, t.output_tokens) == (
            row.usage["input_tokens"],
            row.usage["output_tokens"],
        ), row.run_id
    [ended] = s.of(RunEnded, s.brain_run)
    assert 2 == totals[s.brain_run].calls  # the router and the primary
    assert usage_sum(s.events, s.brain_run) == ended.usage


def test_a_clarified_run_reports_both_router_calls_in_its_usage(rt: Runtime) -> None:
    clarification = {"required": True, "question": "Which apps?"}
    asking = {"primary_role": "lead", "workers": [], "clarification": clarification}
    router = rule("router", {"json": asking}, {"json": {"primary_role": "lead"}})
    model = scripted(router)
    session = rt.new_session()

    waiting = session.run(PROMPT, model=model)
    assert ("needs_clarification", "Which apps?") == (waiting.status, waiting.question)
    session.answer("Notion, Obsidian and Bear.")
    done = session.resume_waiting(model=model)

    assert "completed" == done.status
    events = rt.store.read_events(session.id)
    [ended] = [e.event for e in events if isinstance(e.event, RunEnded) and e.run_id == done.run_id]
    assert 3 == sum(  # the router twice (asked, then told the answer), the primary once
        1 for e in events if isinstance(e.event, TokenUsage) and e.run_id == done.run_id
    )
    assert usage_sum(events, done.run_id) == ended.usage
    assert rt.replay(session.id).identical
    assert rt.verify(session.id).ok


def test_a_failed_runs_usage_is_the_calls_it_made(rt: Runtime) -> None:
    # The primary's reply is an error: the run fails after the router answered.
    s = run_session(rt, PROMPT, scripted(route(), rule("lead", {"error": "down", "status": 503})))

    [ended] = s.of(RunEnded, s.brain_run)
    assert "failed" == ended.status
    assert ended.usage == usage_sum(s.events, s.brain_run) != Usage()


# --- item 2: the primary waits after every worker; the review after the primary --------------


def test_the_primary_waits_after_every_worker_and_the_review_after_the_primary(
    rt: Runtime,
) -> None:
    s = run_session(
        rt,
        PROMPT,
        scripted(
            route([worker("w1", "researcher", "F"), worker("w2", "analyst", "W")], review=True),
            rule("researcher", {"text": "x"}),
            rule("analyst", {"text": "y"}),
            rule("reviewer", {"json": {"summary": "ok", "verdict": "approved"}}),
        ),
    )

    [planned] = s.of(TodoPlanned)
    edges = {t.id: (t.deps, t.after) for t in planned.todos}
    assert (([], ["w1", "w2"]), (["primary"], [])) == (edges["primary"], edges["review"])
    # The Task WAL holds the same edges: after a crash, `clew tasks` shows the primary
    # pending until every worker settled, never ready too early.
    [wal] = rt.wal_names(s.sid)
    dag = rt.task_manager(s.sid).snapshot(wal).get()
    assert (("w1", "w2"), ("primary",)) == (dag.get("primary").after, dag.get("review").deps)


# --- item 3: no review when the primary is the review role -----------------------------------


def test_a_primary_of_the_review_role_is_not_reviewed_again(rt: Runtime) -> None:
    s = run_session(
        rt,
        PROMPT,
        scripted(route(primary_role="reviewer", review=True), rule("reviewer", {"text": "Done."})),
    )

    assert [] == [h for h in s.handoffs() if h.packet.task.agent_role == "reviewer"]
    [planned] = s.of(TodoPlanned)
    assert ["primary"] == [t.id for t in planned.todos]
    assert "completed" == s.outcome.status


# --- item 4: the final answer is in run_ended, a JSON one too --------------------------------


def test_a_json_answer_is_the_outcomes_answer_and_run_endeds_summary(rt: Runtime) -> None:
    s = run_session(
        rt,
        PROMPT,
        scripted(
            route([worker("w1", "researcher", "F")]),
            rule("researcher", {"text": "x"}),
            rule("lead", {"json": {"pick": "notes-app"}}),
        ),
    )

    assert '{"pick":"notes-app"}' == s.outcome.answer
    [ended] = s.of(RunEnded, s.brain_run)
    assert '{"pick":"notes-app"}' == ended.outcome["summary"]
    assert [{"task_id": s.ctx("w1"), "status": "completed", "summary": "x"}] == ended.outcome[
        "workers"
    ]
    assert '{"pick":"notes-app"}' == session_snapshot(s.events).final_summary


# --- item 6: the primary sees each worker's goal and progress --------------------------------


def test_the_primarys_worker_summaries_hold_each_workers_goal_and_progress(rt: Runtime) -> None:
    s = run_session(
        rt,
        PROMPT,
        scripted(
            route([worker("w1", "researcher", "Find three facts")]),
            rule("researcher", {"json": {"summary": "Three facts.", "risks": ["thin"]}}),
        ),
    )

    [summaries] = [n.node for n in s.of(NodeAppended) if n.node.node_type == "child_result"]
    assert [
        "Worker results:",
        f"- {s.ctx('w1')} [researcher] completed",
        "  goal: Find three facts",
        "  progress: completed",
        "  summary: Three facts.",
        "  risks: thin",
    ] == summaries.content[0].text.splitlines()  # type: ignore[union-attr]


# --- item 10: task_board nodes where the board changed -----------------------------------------


def test_the_brains_conversation_shows_the_task_board_after_the_plan_and_after_the_pool(
    rt: Runtime,
) -> None:
    s = run_session(
        rt,
        PROMPT,
        scripted(route([worker("w1", "researcher", "Find")]), rule("researcher", {"text": "x"})),
    )

    brain = [n.node for n in s.of(NodeAppended, s.brain_run)]
    assert [
        ("user", "message"),
        ("assistant", "plan_instruction"),
        ("user", "task_board"),
        ("user", "task_board"),
        ("user", "child_result"),
        ("assistant", "message"),
    ] == [(n.role, n.node_type) for n in brain]
    planned, pooled = (n.content[0].text for n in brain if n.node_type == "task_board")  # type: ignore[union-attr]
    assert "[pending] w1: Find (@researcher)" in planned
    assert "[completed] w1: Find (@researcher)" in pooled
    assert "[pending] primary: Answer the request (@lead) after w1" in pooled
    # Each worker's handoff was sent after the first board was in the tree.
    board_seq = next(
        e.seq for e in s.stored(NodeAppended) if e.event.node.node_type == "task_board"
    )  # type: ignore[attr-defined]
    assert all(board_seq < e.seq for e in s.stored(HandoffSent))
