"""A worker's model input: its handoff, the request and the results passed to it — no more.

Asserted on what was actually sent: the recorded ``model_requested`` messages of each
worker run, on a real session.
"""

from __future__ import annotations

import pydantic
import pytest
from _runtime_helpers import Recorded, route, rule, run_session, scripted, worker

from actors.models.tools import FunctionTool
from actors.runtime.runtime import Runtime
from eventlog.events import NodeAppended

PROMPT = "Write a short market note about bicycles."


class TopicArgs(pydantic.BaseModel):
    topic: str


def secret_lookup(args: TopicArgs) -> str:
    return f"{args.topic.upper()}-TOOL-OUTPUT"


def branch_rules(name: str) -> dict[str, object]:
    """A worker role that thinks aloud, calls a tool, then sums up — each leaving a marker."""
    return rule(
        name,
        {
            "text": f"{name.upper()}-THINKING",
            "tool_calls": [{"name": "lookup", "arguments": {"topic": name}}],
        },
        {"json": {"summary": f"{name.upper()}-SUMMARY"}},
    )


@pytest.fixture
def session(rt: Runtime) -> Recorded:
    model = scripted(
        route(
            [
                worker("w1", "alpha", "ALPHA-GOAL"),
                worker("w2", "beta", "BETA-GOAL"),
                worker("w3", "gamma", "GAMMA-GOAL", deps=["w1"]),
            ],
            note="BRAIN-PRIVATE-NOTE",  # an extra plan field: only in the Brain's transcript
        ),
        branch_rules("alpha"),
        branch_rules("beta"),
        branch_rules("gamma"),
        rule("lead", {"text": "LEAD-ANSWER"}),
    )
    tools = [FunctionTool("lookup", secret_lookup, TopicArgs, idempotent=True)]
    return run_session(rt, PROMPT, model, tools=tools)


BRAIN_ONLY = ["BRAIN-PRIVATE-NOTE", "primary_role", "LEAD-ANSWER", "You are the router"]


def markers(name: str) -> list[str]:
    """What only ``name``'s own branch contains (its result summary aside)."""
    up = name.upper()
    return [f"{up}-GOAL", f"{up}-THINKING", f"{up}-TOOL-OUTPUT"]


@pytest.mark.parametrize(
    ("task_id", "others"),
    [("w1", ["beta", "gamma"]), ("w2", ["alpha", "gamma"]), ("w3", ["alpha", "beta"])],
)
def test_a_workers_model_input_holds_nothing_of_another_branch_or_the_brain(
    session: Recorded, task_id: str, others: list[str]
) -> None:
    inputs = session.model_inputs(session.worker_run(task_id))

    assert 2 == len(inputs)  # the tool turn and the summing-up turn
    leaked = [
        m
        for text in inputs
        for m in [*BRAIN_ONLY, *(x for o in others for x in markers(o))]
        if m in text
    ]
    assert [] == leaked
    for other in others:
        if not (task_id == "w3" and other == "alpha"):
            assert all(f"{other.upper()}-SUMMARY" not in text for text in inputs)


def test_a_dependent_sees_its_upstreams_summary_but_not_its_transcript(
    session: Recorded,
) -> None:
    first, _ = session.model_inputs(session.worker_run("w3"))

    assert f"- {session.ctx('w1')} (completed): ALPHA-SUMMARY" in first
    assert [] == [m for m in markers("alpha") if m in first]


def test_a_workers_branch_is_a_new_root_outside_the_brains_tree(session: Recorded) -> None:
    for task_id in ("w1", "w2", "w3"):
        run_id = session.worker_run(task_id)
        nodes = [n.node for n in session.of(NodeAppended, run_id)]
        assert None is nodes[0].parent_id
        assert "task_instruction" == nodes[0].node_type
        own = {n.node_id for n in nodes}
        assert all(n.parent_id in own for n in nodes[1:])
        assert {False} == {n.activate for n in session.of(NodeAppended, run_id)}


def test_the_primary_gets_worker_summaries_never_their_transcripts(session: Recorded) -> None:
    primary_input = session.model_inputs(session.brain_run)[-1]

    for name in ("alpha", "beta", "gamma"):
        assert f"{name.upper()}-SUMMARY" in primary_input
        assert f"{name.upper()}-THINKING" not in primary_input
        assert f"{name.upper()}-TOOL-OUTPUT" not in primary_input
    # (the model input is JSON: a newline in the summaries block reads as \n there)
    assert f"- {session.ctx('w1')} [alpha] completed\\n" in primary_input
    assert "summary: ALPHA-SUMMARY" in primary_input
