"""The orchestration flow of a main run (seed 000): packets, the pool, dependencies, the gate.

Every test is a real run on a real SQLite file under ``tmp_path`` with a ScriptedModel;
``run_session`` also proves each session replays identically and verifies.
"""

from __future__ import annotations

import apsw
import pydantic
import pytest
from _runtime_helpers import (
    ConcurrencyProbe,
    peak_overlap,
    route,
    rule,
    run_session,
    scripted,
    sent_requests,
    worker,
)

from actors.errors import AlreadyDecided, StillWaiting
from actors.models.scripted import ScriptedModel
from actors.models.tools import FunctionTool
from actors.recording.inputs import RunSettings
from actors.runtime.runtime import Runtime
from eventlog.blocks import text_of
from eventlog.events import (
    AgentCreated,
    ClarificationRequested,
    FixIteration,
    HandoffSent,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    NodeAppended,
    PlanRejected,
    RunEnded,
    RunStarted,
    RunWaiting,
    TodoPlanned,
    TodoUpdated,
    TokenUsage,
    WorkerResultReceived,
)

PROMPT = "Compare three note-taking apps and recommend one."


def two_workers() -> ScriptedModel:
    return scripted(
        route([worker("w1", "researcher", "Find facts"), worker("w2", "analyst", "Weigh them")]),
        rule("researcher", {"text": "Three facts."}),
        rule("analyst", {"text": "One winner."}),
    )


# --- 1, 2: packets and ids ------------------------------------------------------------------


def test_handoff_and_result_keep_task_and_parent_ids_and_carry_direction_tags(
    rt: Runtime,
) -> None:
    s = run_session(rt, PROMPT, two_workers())

    handoffs = {h.packet.id: h.packet for h in s.handoffs()}
    results = [r.result for r in s.results()]
    assert 2 == len(handoffs)
    assert sorted(handoffs) == sorted(r.handoff_id for r in results)
    for result in results:
        handoff = handoffs[result.handoff_id]
        assert handoff.task.id == result.task_id
        assert handoff.task.parent_id == result.parent_id
        assert ("brain", "agent") == (handoff.from_layer, handoff.to_layer)
        assert ("agent", "brain") == (result.from_layer, result.to_layer)


def test_direction_tags_are_written_into_the_stored_packets(rt: Runtime) -> None:
    s = run_session(rt, PROMPT, two_workers())

    # Read the raw payloads with a connection of our own: the tags must be in the log,
    # not defaults filled in when decoding.
    conn = apsw.Connection(str(rt.home / "sessions.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    rows = {
        t: [
            p
            for (p,) in conn.execute(
                f"SELECT payload_json FROM events_{s.sid} WHERE event_type = ?", (t,)
            )
        ]
        for t in ("handoff_sent", "worker_result_received")
    }
    assert all(
        '"from_layer":"brain"' in p and '"to_layer":"agent"' in p for p in rows["handoff_sent"]
    )
    assert all(
        '"from_layer":"agent"' in p and '"to_layer":"brain"' in p
        for p in rows["worker_result_received"]
    )
    assert (2, 2) == (len(rows["handoff_sent"]), len(rows["worker_result_received"]))
    conn.close()


def test_worker_task_id_is_its_planned_context_id_and_parent_id_is_the_brains(
    rt: Runtime,
) -> None:
    s = run_session(rt, PROMPT, two_workers())

    brain_run = f"{s.sid}:brain:r1"
    assert brain_run == s.brain_run
    expected = {f"{brain_run}/w1": brain_run, f"{brain_run}/w2": brain_run}
    assert expected == {h.packet.task.id: h.packet.task.parent_id for h in s.handoffs()}
    assert expected == {r.result.task_id: r.result.parent_id for r in s.results()}
    workers = {a.agent_id: a for a in s.of(AgentCreated) if a.agent_type == "sub"}
    assert set(expected) == set(workers)
    assert {f"{s.sid}:brain"} == {a.parent_agent_id for a in workers.values()}
    assert {brain_run} == {a.created_by_run_id for a in workers.values()}
    assert [f"{brain_run}/w1:r1", f"{brain_run}/w2:r1"] == sorted(s.worker_runs())


# --- 3, 4: the bounded pool -----------------------------------------------------------------


def test_with_limit_two_and_a_slow_first_worker_the_others_start_while_it_runs(
    rt: Runtime,
) -> None:
    model = scripted(
        route(
            [
                worker("w1", "slow", "Slow part"),
                worker("w2", "quick", "Quick part"),
                worker("w3", "quick", "Another quick part"),
            ]
        ),
        # 800 ms: w2 and w3 must both finish while w1 sleeps, even on a loaded machine.
        rule("slow", {"text": "slow done", "delay_ms": 800}),
        rule("quick", {"text": "quick done"}),
    )

    s = run_session(rt, PROMPT, model, settings=RunSettings(max_workers=2))

    assert s.started("w2") < s.ended("w1")
    assert s.started("w3") < s.ended("w1")
    # w3 waited for a free slot: it started only after w2's result came back.
    (w2_back,) = [
        e.seq for e in s.stored(WorkerResultReceived) if e.event.result.task_id == s.ctx("w2")
    ]
    assert w2_back < s.started("w3")
    arrival = [r.result.task_id for r in s.results()]
    assert [s.ctx("w2"), s.ctx("w3"), s.ctx("w1")] == arrival
    assert [s.ctx("w1"), s.ctx("w2"), s.ctx("w3")] == [r.task_id for r in s.outcome.worker_results]


class NoArgs(pydantic.BaseModel):
    pass


def test_peak_concurrency_never_exceeds_the_limit(rt: Runtime) -> None:
    probe = ConcurrencyProbe(hold_s=0.3)  # long enough that a loaded machine keeps 3 overlapping
    tools = [FunctionTool("probe", probe, NoArgs, idempotent=True)]
    model = scripted(
        route([worker(f"w{i}", "prober", f"Probe part {i}") for i in range(1, 7)]),
        rule("prober", {"tool_calls": [{"name": "probe"}]}, {"text": "probed once"}),
    )

    s = run_session(rt, PROMPT, model, tools=tools, settings=RunSettings(max_workers=3))

    intervals = [(s.started(f"w{i}"), s.ended(f"w{i}")) for i in range(1, 7)]
    assert 3 == peak_overlap(intervals)
    assert 6 == probe.calls
    assert probe.peak <= 3
    assert ["completed"] * 6 == [r.status for r in s.outcome.worker_results]


# --- 5, 6: dependencies ---------------------------------------------------------------------


def test_a_dependent_starts_after_its_upstream_completed_and_receives_its_result(
    rt: Runtime,
) -> None:
    model = scripted(
        route(
            [
                worker("w1", "source", "Find the number"),
                worker("w2", "sink", "Use the number", deps=["w1"]),
            ]
        ),
        rule("source", {"json": {"summary": "UPSTREAM-FACT-42"}, "delay_ms": 100}),
        rule("sink", {"text": "used it"}),
    )

    s = run_session(rt, PROMPT, model)

    (w1_back,) = [
        e.seq for e in s.stored(WorkerResultReceived) if e.event.result.task_id == s.ctx("w1")
    ]
    (w2_sent,) = [e.seq for e in s.stored(HandoffSent) if e.event.packet.task.id == s.ctx("w2")]
    assert s.ended("w1") < w1_back < w2_sent < s.started("w2")
    (first_input,) = s.model_inputs(s.worker_run("w2"))
    assert f"- {s.ctx('w1')} (completed): UPSTREAM-FACT-42" in first_input
    assert ["completed", "completed"] == [r.status for r in s.outcome.worker_results]


@pytest.mark.parametrize(
    "failing_reply",
    [{"error": "boom"}, {"json": {"summary": "could not", "status": "failed"}}],
    ids=["model-chain-fails", "reply-says-failed"],
)
def test_a_failed_upstream_blocks_its_dependents_which_never_run(
    rt: Runtime, failing_reply: dict[str, object]
) -> None:
    model = scripted(
        route(
            [
                worker("w1", "flaky", "Try"),
                worker("w2", "sink", "Use it", deps=["w1"]),
                worker("w3", "sink", "Use that", deps=["w2"]),
            ]
        ),
        rule("flaky", failing_reply),
        rule("sink", {"text": "should never run"}),
    )

    s = run_session(rt, PROMPT, model)

    assert "completed" == s.outcome.status
    assert ["failed", "blocked", "blocked"] == [r.status for r in s.outcome.worker_results]
    assert [s.ctx("w1")] == [h.packet.task.id for h in s.handoffs()]
    assert [s.worker_run("w1")] == s.worker_runs()
    blocked = [t.todo_id for t in s.of(TodoUpdated) if t.status == "blocked"]
    assert ["w2", "w3"] == blocked
    [wal] = rt.wal_names(s.sid)
    dag = rt.task_manager(s.sid).snapshot(wal).get()
    assert ("failed", "blocked", "blocked") == tuple(dag.status(t) for t in ("w1", "w2", "w3"))
    primary_input = s.model_inputs(s.brain_run)[-1]
    assert f"{s.ctx('w2')} [sink] blocked" in primary_input


# --- 7: reply normalisation -----------------------------------------------------------------


def test_a_plain_text_worker_reply_becomes_a_completed_result_with_the_handoffs_ids(
    rt: Runtime,
) -> None:
    model = scripted(
        route([worker("w1", "chatty", "Say something")]),
        rule("chatty", {"text": "Just prose, no JSON at all."}),
    )

    s = run_session(rt, PROMPT, model)

    (handoff,) = [h.packet for h in s.handoffs()]
    (result,) = [r.result for r in s.results()]
    assert ("completed", "Just prose, no JSON at all.") == (result.status, result.summary)
    assert (handoff.id, handoff.task.id, handoff.task.parent_id) == (
        result.handoff_id,
        result.task_id,
        result.parent_id,
    )


LYING = {"taskId": "someone-else", "parentId": "not-the-brain", "summary": "I lie about ids"}


@pytest.mark.parametrize(
    "reply",
    [
        {"json": LYING},
        {
            "text": '{"taskId": "someone-else", "parentId": "not-the-brain",'
            ' "summary": "I lie about ids"}'
        },
    ],
    ids=["json-block", "json-in-text"],
)
def test_a_worker_reply_claiming_other_ids_keeps_the_handoffs_ids(
    rt: Runtime, reply: dict[str, object]
) -> None:
    model = scripted(route([worker("w1", "liar", "Report")]), rule("liar", reply))

    s = run_session(rt, PROMPT, model)

    (handoff,) = [h.packet for h in s.handoffs()]
    (result,) = [r.result for r in s.results()]
    assert "I lie about ids" == result.summary
    assert (handoff.id, handoff.task.id, handoff.task.parent_id) == (
        result.handoff_id,
        result.task_id,
        result.parent_id,
    )
    assert "someone-else" not in repr(s.outcome.worker_results)


# --- 8: the clarification gate --------------------------------------------------------------


def test_clarification_parks_the_run_before_any_worker_and_blocks_every_todo(
    rt: Runtime,
) -> None:
    clarification = {
        "required": True,
        "question": "Which platform: iOS or Android?",
        "reason": "the platform decides the shortlist",
        "missing_fields": ["platform"],
        "options": ["iOS", "Android"],
    }
    model = scripted(
        route([worker("w1", "researcher", "Find apps")], review=True, clarification=clarification),
        rule("researcher", {"text": "should never run"}),
    )

    s = run_session(rt, PROMPT, model)

    assert "needs_clarification" == s.outcome.status
    assert "Which platform: iOS or Android?" == s.outcome.question
    assert [] == s.handoffs()
    assert [] == s.worker_runs()
    (asked,) = s.of(ClarificationRequested)
    assert (["platform"], ["iOS", "Android"]) == (asked.missing_fields, asked.options)
    (planned,) = s.of(TodoPlanned)
    assert [(t.id, "blocked") for t in planned.todos] == [
        (t.todo_id, t.status) for t in s.of(TodoUpdated)
    ]
    assert ["w1", "primary", "review"] == [t.id for t in planned.todos]
    assert [] == s.of(RunEnded)  # the run waits, open
    (waiting,) = s.of(RunWaiting)
    assert ("clarification", asked.question) == (waiting.reason, waiting.question)
    assert ["waiting"] == [r.status for r in rt.store.read_runs(s.sid)]
    assert [] == rt.interrupted_runs(s.sid)
    assert [(1, "router")] == [(m.call_index, m.role) for m in s.of(ModelRequested)]


def test_an_answer_continues_the_same_run_and_the_router_plans_again_with_it(
    rt: Runtime,
) -> None:
    ask = {"required": True, "question": "Which platform?"}
    plan = {"primary_role": "lead", "workers": [worker("w1", "researcher", "Find apps")]}
    model = scripted(
        {
            "role": "router",
            "replies": [{"json": {"primary_role": "lead", "clarification": ask}}, {"json": plan}],
        },
        rule("researcher", {"text": "Three apps."}),
    )
    session = rt.new_session()
    out = session.run(PROMPT, model=model)
    assert ("needs_clarification", "Which platform?") == (out.status, out.question)
    with pytest.raises(StillWaiting, match="Which platform"):
        session.resume_waiting(model=model)
    session.answer("iOS")
    with pytest.raises(AlreadyDecided):
        session.answer("Android")
    out = session.resume_waiting(model=model)
    assert ("completed", "The final answer.") == (out.status, out.answer)
    events = [e for e in rt.store.read_events(session.id)]
    (run_id,) = {e.run_id for e in events if isinstance(e.event, RunWaiting)}
    assert f"{session.id}:brain:r1" == run_id  # the same run
    routed = sent_requests(rt.store, session.id)[-3]
    assert "router" == routed.role
    assert ["Which platform?", "iOS"] == [text_of(m.content) for m in routed.messages[1:]]
    assert ["completed"] * 2 == [r.status for r in rt.store.read_runs(session.id)]
    assert rt.replay(session.id).identical
    assert rt.verify(session.id).ok


# --- 9: the model fallback chain ------------------------------------------------------------


def test_a_failing_first_candidate_falls_back_and_both_are_recorded(rt: Runtime) -> None:
    failing = ScriptedModel(
        {"rules": [{"replies": [{"error": "rate limited", "status": 429}]}]}, name="m-fail"
    )
    ok = scripted(route(), name="m-ok")

    s = run_session(rt, PROMPT, {"default": [failing, ok]})

    assert "completed" == s.outcome.status
    route_call = [
        (type(e).__name__, e.model, e.attempt)
        for e in s.of(ModelRequested, s.brain_run)
        + s.of(ModelFailed, s.brain_run)
        + s.of(ModelResponded, s.brain_run)
        if e.call_index == 1
    ]
    assert sorted(
        [
            ("ModelRequested", "m-fail", 1),
            ("ModelFailed", "m-fail", 1),
            ("ModelRequested", "m-ok", 2),
            ("ModelResponded", "m-ok", 2),
        ]
    ) == sorted(route_call)
    types = [t for t in s.types(s.brain_run) if t.startswith("model_") or t == "token_usage"][:5]
    assert [
        "model_requested",
        "model_failed",
        "model_requested",
        "model_responded",
        "token_usage",
    ] == types
    first_failure = s.of(ModelFailed, s.brain_run)[0]
    assert (True, 429, "rate limited") == (
        first_failure.will_fallback,
        first_failure.status,
        first_failure.message,
    )
    assert {"m-ok"} == {u.model for u in s.of(TokenUsage)}


def test_the_last_failing_candidate_is_recorded_without_fallback(rt: Runtime) -> None:
    failing = ScriptedModel({"rules": [{"replies": [{"error": "down"}]}]}, name="m-fail")
    model = {
        "router": scripted(route([worker("w1", "doomed", "Try")])),
        "doomed": [failing, failing],
        "default": scripted(),
    }

    s = run_session(rt, PROMPT, model)

    failures = s.of(ModelFailed, s.worker_run("w1"))
    assert [(1, True), (2, False)] == [(f.attempt, f.will_fallback) for f in failures]
    assert ["failed"] == [r.status for r in s.outcome.worker_results]


# --- 13: bookkeeping ------------------------------------------------------------------------


def test_every_node_has_one_node_appended_and_every_handoff_one_result(rt: Runtime) -> None:
    model = scripted(
        route(
            [
                worker("w1", "researcher", "Find"),
                worker("w2", "flaky", "Try"),
                worker("w3", "analyst", "Weigh", deps=["w1"]),
                worker("w4", "analyst", "Weigh more", deps=["w2"]),
            ],
            review=True,
        ),
        rule("researcher", {"tool_calls": [{"name": "probe"}]}, {"text": "found"}),
        rule("flaky", {"error": "boom"}),
        rule("analyst", {"text": "weighed"}),
        rule("reviewer", {"json": {"summary": "fine", "verdict": "approved"}}),
    )
    tools = [FunctionTool("probe", ConcurrencyProbe(0), NoArgs, idempotent=True)]

    s = run_session(rt, PROMPT, model, tools=tools)

    appended = [n.node.node_id for n in s.of(NodeAppended)]
    assert len(appended) == len(set(appended))
    assert sorted(appended) == sorted(n.node_id for n in rt.store.read_nodes(s.sid))
    handoff_ids = [h.packet.id for h in s.handoffs()]
    result_ids = [r.result.handoff_id for r in s.results()]
    assert len(handoff_ids) == len(set(handoff_ids))
    assert sorted(handoff_ids) == sorted(result_ids)
    assert 4 == len(handoff_ids)  # w1, w2, w3 and the review; w4 is blocked


# --- plan handling --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ({"text": "Sure! I would split this into three parts."}, "reply is not JSON"),
        ({"json": {"workers": "all of them"}}, "invalid plan at workers"),
        (
            {"json": {"workers": [{"id": "w1", "role": "x", "goal": "g", "deps": ["nope"]}]}},
            "depends on unknown worker 'nope'",
        ),
        (
            {"json": {"workers": [{"id": "primary", "role": "x", "goal": "g"}]}},
            "'primary' must match",
        ),
    ],
    ids=["not-json", "wrong-shape", "unknown-dep", "reserved-id"],
)
def test_a_malformed_plan_is_rejected_and_the_primary_answers_alone(
    rt: Runtime, reply: dict[str, object], why: str
) -> None:
    # The fallback plan's primary role is "assistant".
    model = scripted(
        {"role": "router", "replies": [reply]}, rule("assistant", {"text": "The final answer."})
    )

    s = run_session(rt, PROMPT, model)

    (rejected,) = s.of(PlanRejected)
    assert why in rejected.error
    assert "answer directly: primary only, no workers" == rejected.fallback
    assert ("completed", "The final answer.", []) == (
        s.outcome.status,
        s.outcome.answer,
        s.outcome.worker_results,
    )
    assert [] == s.handoffs()
    (planned,) = s.of(TodoPlanned)
    assert ["primary"] == [t.id for t in planned.todos]


def test_a_plan_with_a_dependency_cycle_is_rejected_naming_the_cycle(rt: Runtime) -> None:
    model = scripted(
        route([worker("a", "x", "A", deps=["b"]), worker("b", "x", "B", deps=["a"])]),
        rule("x", {"text": "should never run"}),
        rule("assistant", {"text": "Answered without workers."}),
    )

    s = run_session(rt, PROMPT, model)

    (rejected,) = s.of(PlanRejected)
    assert "invalid plan: dependency cycle a → b → a" == rejected.error
    assert [] == s.handoffs()
    assert "completed" == s.outcome.status


# --- the Brain's own failure, review and the fix loop ----------------------------------------


def test_a_brain_whose_router_fails_ends_its_run_failed_and_records_it(rt: Runtime) -> None:
    failing = ScriptedModel({"rules": [{"replies": [{"error": "no route"}]}]}, name="m-fail")

    s = run_session(rt, PROMPT, failing)

    assert "failed" == s.outcome.status
    assert "ModelError: no route" == s.outcome.error
    (ended,) = s.of(RunEnded)
    assert ("failed", "failed", {"type": "ModelError", "message": "no route"}) == (
        ended.status,
        ended.end_reason,
        ended.error,
    )
    assert "failed" == rt.store.read_runs(s.sid)[0].status


def test_review_requesting_changes_runs_a_bounded_fix_loop(rt: Runtime) -> None:
    model = scripted(
        route(review=True),
        rule("lead", {"text": "Draft answer."}),
        {
            "role": "reviewer",
            "replies": [
                {
                    "json": {
                        "summary": "Missing prices.",
                        "verdict": "changes_requested",
                        "risks": ["no prices"],
                    }
                }
            ],
        },
    )

    s = run_session(rt, PROMPT, model, settings=RunSettings(max_fix_iterations=2))

    assert [1, 2] == [f.iteration for f in s.of(FixIteration)]
    reviews = [h.packet.task.id for h in s.handoffs()]
    assert [s.ctx("review"), s.ctx("review-2"), s.ctx("review-3")] == reviews
    assert ["route", "primary", "fix", "fix"] == [
        m.phase for m in s.of(ModelRequested, s.brain_run)
    ]
    assert "completed" == s.outcome.status


def test_review_approving_a_fix_ends_the_loop(rt: Runtime) -> None:
    model = scripted(
        route(review=True),
        {"role": "lead", "phase": "primary", "replies": [{"text": "Draft answer."}]},
        {"role": "lead", "phase": "fix", "replies": [{"text": "FIXED answer with prices."}]},
        rule(
            "reviewer", {"json": {"summary": "Good now.", "verdict": "approved"}}, contains="FIXED"
        ),
        rule("reviewer", {"json": {"summary": "Missing prices.", "verdict": "changes_requested"}}),
    )

    s = run_session(rt, PROMPT, model)

    assert [1] == [f.iteration for f in s.of(FixIteration)]
    assert "FIXED answer with prices." == s.outcome.answer
    assert 2 == len(s.handoffs())
    assert ["completed"] == [
        e.status for e in s.of(TodoUpdated) if e.todo_id == "review" and e.status != "running"
    ]


def test_every_worker_run_is_started_and_ended_once(rt: Runtime) -> None:
    s = run_session(rt, PROMPT, two_workers())

    for run_id in s.worker_runs():
        assert 1 == len(s.of(RunStarted, run_id))
        assert ["completed"] == [e.status for e in s.of(RunEnded, run_id)]


def test_a_main_run_writes_the_events_docs_runtime_md_lists_in_order(rt: Runtime) -> None:
    model = scripted(
        route([worker("w1", "researcher", "Find")], review=True),
        rule("researcher", {"text": "found"}),
        rule("reviewer", {"json": {"summary": "fine", "verdict": "approved"}}),
    )

    s = run_session(rt, PROMPT, model)

    model_call = ["model_requested", "model_responded", "token_usage", "node_appended"]
    assert [
        "run_started", "agent_created", "agent_status_changed", "node_appended",
        *model_call, "todo_planned", "node_appended",  # the task board (flow 2)
        "todo_updated", "handoff_sent", "worker_result_received", "todo_updated",
        "node_appended",  # the task board after the pool (flow 2)
        "todo_updated", "node_appended", *model_call, "todo_updated",
        "todo_updated", "handoff_sent", "worker_result_received", "todo_updated",
        "agent_status_changed", "run_ended",
    ] == s.types(s.brain_run)  # fmt: skip
    worker_run = ["agent_created", "run_started", "agent_status_changed", "node_appended",
                  *model_call, "agent_status_changed", "run_ended"]  # fmt: skip
    assert worker_run == s.types(s.worker_run("w1"))
    assert worker_run == s.types(s.worker_run("review"))
