"""Retry a failed main run: a new attempt answering the same user message (issue 22, item 8).

The retry is a new run (``<sid>:brain:r2``) with ``run_started.attempt`` 2 and
``retry_of`` in its inputs; it appends no second user message: its plan branches at the
failed run's user message node.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

import pytest
from _cli_helpers import sql
from _runtime_helpers import route, rule, scripted

from actors.errors import NeedsResume, NothingToRetry
from actors.recording.inputs import RunInputs
from actors.runtime.runtime import Runtime
from actors.runtime.session import Session
from eventlog.events import NodeAppended, RunStarted
from projections.tree import NodeTree

PROMPT = "Summarise the incident report."
BROKEN = scripted(route(), rule("lead", {"error": "overloaded", "status": 529}))
WORKING = scripted(route(), rule("lead", {"text": "The summary."}))


def failed_session(rt: Runtime) -> Session:
    session = rt.new_session()
    assert "failed" == session.run(PROMPT, model=BROKEN).status
    return session


def started(rt: Runtime, sid: str, run_id: str) -> RunStarted:
    [event] = [e.event for e in rt.store.read_run(sid, run_id) if isinstance(e.event, RunStarted)]
    return event


def test_a_retry_is_a_new_attempt_that_answers_the_same_user_message(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = failed_session(rt)
        sid = session.id

        outcome = session.retry(model=WORKING)

        assert ("completed", "The summary.", f"{sid}:brain:r2") == (
            outcome.status,
            outcome.answer,
            outcome.run_id,
        )
        first, second = started(rt, sid, f"{sid}:brain:r1"), started(rt, sid, outcome.run_id)
        inputs = RunInputs.from_metadata(second.metadata)
        user = f"{sid}:brain:r1:n1"
        assert (2, f"{sid}:brain:r1", user, user) == (
            second.attempt,
            inputs.retry_of,
            inputs.user_node_id,
            second.start_node_id,
        )
        assert (first.attempt, PROMPT) == (1, inputs.prompt)
        # No second user message: the retry's plan branches at the failed run's message.
        retried = [
            e.event.node
            for e in rt.store.read_run(sid, outcome.run_id)
            if isinstance(e.event, NodeAppended)
        ]
        assert "user/message" not in {f"{n.role}/{n.node_type}" for n in retried}
        assert user == retried[0].parent_id
        tree = NodeTree.from_rows(
            rt.store.read_nodes(sid), rt.store.read_session(sid).active_node_id
        )
        assert 2 == len(tree.children(user))
        assert user == tree.active_path_ids()[0]
        assert outcome.active_node_id == tree.active_path_ids()[-1]
        # Like any run, it replays and verifies.
        assert rt.replay(sid).identical
        assert rt.verify(sid).ok, rt.verify(sid).sessions[0].problems


def test_a_retry_of_a_failed_retry_is_attempt_3_of_the_same_message(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = failed_session(rt)
        assert "failed" == session.retry(model=BROKEN).status

        outcome = session.retry(model=WORKING)

        third = started(rt, session.id, outcome.run_id)
        inputs = RunInputs.from_metadata(third.metadata)
        assert (3, f"{session.id}:brain:r2", f"{session.id}:brain:r1:n1") == (
            third.attempt,
            inputs.retry_of,
            inputs.user_node_id,
        )
        assert rt.replay(session.id).identical
        assert rt.verify(session.id).ok


def test_only_a_failed_last_run_can_be_retried(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = rt.new_session()
        with pytest.raises(NothingToRetry, match="has no run to retry"):
            session.retry(model=WORKING)
        session.run(PROMPT, model=WORKING)
        with pytest.raises(NothingToRetry, match="brain:r1 is completed; only a failed last"):
            session.retry(model=WORKING)
        assert 1 == len(rt.store.read_runs(session.id))


def test_a_session_with_an_interrupted_run_is_resumed_not_retried(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        session = failed_session(rt)
    # Stand in for a crash: a run left running with no owner.
    sql(tmp_path / "home", f"UPDATE runs SET status = 'running' WHERE session_id = '{session.id}'")
    with (
        Runtime(tmp_path / "home", tmp_path / "project") as rt,
        pytest.raises(NeedsResume, match="resume it"),
    ):
        rt.retry(session.id, model=WORKING)
