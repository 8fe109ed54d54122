"""A worker planned with ``continue: true`` continues its role's context tree (seed 004).

Issue 22, item 12: the new dispatch opens a branch on the tree of the last worker of the
same role whose result the Brain took, instead of a new root.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from typing import Any

from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.runtime.runtime import Runtime
from eventlog.events import AgentCreated, NodeAppended, RunEnded

PROMPT = "Research, weigh, then research once more."


def plan(continues: bool) -> dict[str, Any]:
    w3 = worker("w3", "researcher", "Check the winner", deps=["w2"])
    if continues:
        w3["continue"] = True
    return route(
        [worker("w1", "researcher", "Find facts"), worker("w2", "analyst", "Weigh", ["w1"]), w3]
    )


def model(continues: bool) -> Any:
    return scripted(
        plan(continues),
        rule("researcher", {"text": "Facts found."}, {"text": "Winner checked."}),
        rule("analyst", {"text": "Weighed."}),
    )


def test_a_continued_worker_opens_a_branch_at_the_last_node_of_its_roles_worker(
    rt: Runtime,
) -> None:
    s = run_session(rt, PROMPT, model(True))

    [w1_end] = s.of(RunEnded, s.worker_run("w1"))
    [w3_first] = [n.node for n in s.of(NodeAppended, s.worker_run("w3"))][:1]
    assert (w1_end.end_node_id, "task_instruction") == (w3_first.parent_id, w3_first.node_type)
    [created] = [a for a in s.of(AgentCreated) if a.agent_id == s.ctx("w3")]
    assert w1_end.end_node_id == created.fork_from_node_id
    # Its first model call sees w1's context, then its own task: a second turn of the
    # researcher's script ("Winner checked.").
    [first_input, *_] = s.model_inputs(s.worker_run("w3"))
    assert "Find facts" in first_input
    assert "Check the winner" in first_input
    assert "Winner checked." == s.outcome.worker_results[2].summary
    # The worker keeps its own agent and run; only the tree is shared.
    assert s.ctx("w3") == w3_first.agent_id


def test_without_continue_every_worker_starts_a_new_root(rt: Runtime) -> None:
    s = run_session(rt, PROMPT, model(False))

    roots = [
        n.node
        for n in s.of(NodeAppended)
        if n.node.node_type == "task_instruction" and n.node.parent_id is None
    ]
    assert 3 == len(roots)
    assert [None] * 3 == [a.fork_from_node_id for a in s.of(AgentCreated) if a.agent_type == "sub"]


def test_a_continue_with_no_earlier_worker_of_its_role_starts_a_new_root(rt: Runtime) -> None:
    lone = worker("w1", "researcher", "Find facts")
    lone["continue"] = True
    s = run_session(rt, PROMPT, scripted(route([lone]), rule("researcher", {"text": "x"})))

    [first] = [n.node for n in s.of(NodeAppended, s.worker_run("w1"))][:1]
    assert None is first.parent_id
