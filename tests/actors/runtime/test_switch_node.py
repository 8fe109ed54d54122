"""``switch_node`` moves the active node only where a new branch may start (seed 004).

Issue 22, item 5: the branch rule is enforced — a new branch starts at a user message,
in the session's own conversation — and refused otherwise in one clear sentence.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _runtime_helpers import route, rule, run_session, scripted, worker

from actors.runtime.runtime import Runtime
from eventlog.events import NodeAppended
from projections.errors import BranchRefused, UnknownNode

PROMPT = "Look it up, then answer."


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime(tmp_path / "home", tmp_path / "project") as runtime:
        yield runtime


def test_a_switch_into_a_workers_context_is_refused_and_changes_nothing(rt: Runtime) -> None:
    s = run_session(
        rt,
        PROMPT,
        scripted(route([worker("w1", "researcher", "Look")]), rule("researcher", {"text": "x"})),
    )
    [task] = [n.node.node_id for n in s.of(NodeAppended, s.worker_run("w1"))][:1]
    before = rt.store.read_session(s.sid).active_node_id

    with pytest.raises(BranchRefused, match=r"belongs to .*/w1's isolated context"):
        rt.switch_node(s.sid, task)
    with pytest.raises(UnknownNode):
        rt.switch_node(s.sid, f"{s.sid}:brain:r9:n1")

    assert before == rt.store.read_session(s.sid).active_node_id


def test_a_switch_to_a_turn_waiting_for_its_tool_results_is_refused(rt: Runtime) -> None:
    calls = {"tool_calls": [{"name": "nothing", "arguments": {}}]}
    # (turn 1 of the lead is its first call: the router's plan is an assistant message)
    s = run_session(rt, PROMPT, scripted(route(), rule("lead", calls, calls, {"text": "Done."})))
    [calling] = [
        n.node.node_id
        for n in s.of(NodeAppended, s.brain_run)
        if n.node.role == "assistant" and n.node.node_type == "message"
    ][:1]

    with pytest.raises(BranchRefused, match="waiting for its tool results"):
        rt.switch_node(s.sid, calling)


def test_a_switch_to_an_earlier_answer_lets_the_next_run_branch_there(rt: Runtime) -> None:
    s = run_session(rt, PROMPT, scripted(route()))
    plan = f"{s.sid}:brain:r1:n2"  # the router's plan: an assistant node with children

    assert s.outcome.active_node_id == rt.switch_node(s.sid, plan)
    outcome = rt.session(s.sid).run("Another question.", model=scripted(route()))

    first = next(
        e.event.node
        for e in rt.store.read_run(s.sid, outcome.run_id)
        if isinstance(e.event, NodeAppended)
    )
    assert (plan, "user", "message") == (first.parent_id, first.role, first.node_type)
    assert rt.verify(s.sid).ok
