"""Both framework integrations' durable runs (Pydantic AI's ``DurableAgent``, the Agents
SDK's ``DurableRunner``) behave alike on their support desks: each run refunds under a
key of its own, a changed agent diverges, a replay needs the agent and runs from
``async`` code, and a tool that needs approval waits the clew way — decided by ``clew
approve`` / ``clew deny`` in another process, resumed later, replayed identically."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cli_helpers import Where, run_process
from _framework_checks import Desk, calls, ledger

from actors.errors import DurableRunFailed, UsageError
from actors.runtime.runtime import Runtime

#: Each framework's library, and the module of its desk.
FRAMEWORKS = {
    "pydantic_ai": ("pydantic_ai", "_pyai_desk"),
    "openai_agents": ("agents", "_oai_desk"),
}


@pytest.fixture(params=sorted(FRAMEWORKS))
def desk(request: pytest.FixtureRequest) -> Desk:
    library, module = FRAMEWORKS[request.param]
    pytest.importorskip(library)
    found: Desk = importlib.import_module(module).DESK
    return found


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = Runtime(tmp_path / "home", tmp_path)
    yield runtime
    runtime.close()


# --- runs, replays, divergences ---------------------------------------------------------


def test_the_idempotency_key_is_unique_per_run_and_call(
    rt: Runtime, desk: Desk, tmp_path: Path
) -> None:
    agent = desk.make(tmp_path)
    agent.run_sync(desk.prompt, session=rt.new_session())
    agent.run_sync(desk.prompt, session=rt.new_session())
    assert 2 == len({line["key"] for line in ledger(tmp_path)})


def test_changed_instructions_are_a_readable_divergence(
    rt: Runtime, desk: Desk, tmp_path: Path
) -> None:
    session = rt.new_session()
    desk.make(tmp_path).run_sync(desk.prompt, session=session)
    report = rt.replay(session.id, agent=desk.make(tmp_path, instructions="You are a rude desk."))
    assert not report.identical
    assert "model_requested" in report.summary()
    assert "rude" in report.summary()


def test_a_changed_tool_is_a_divergence(rt: Runtime, desk: Desk, tmp_path: Path) -> None:
    session = rt.new_session()
    desk.make(tmp_path).run_sync(desk.prompt, session=session)
    report = rt.replay(session.id, agent=desk.make(tmp_path, lookup_doc="Find an order."))
    assert not report.identical
    assert "model_requested" in report.summary()


def test_a_replay_without_the_agent_says_to_pass_it(
    rt: Runtime, desk: Desk, tmp_path: Path
) -> None:
    session = rt.new_session()
    desk.make(tmp_path).run_sync(desk.prompt, session=session)
    with pytest.raises(UsageError, match="pass that agent"):
        rt.replay(session.id)


def test_a_replay_called_from_async_code_runs(rt: Runtime, desk: Desk, tmp_path: Path) -> None:
    session = rt.new_session()
    agent = desk.make(tmp_path)

    async def app() -> bool:
        await agent.run(desk.prompt, session=session)
        return bool(rt.replay(session.id, agent=agent).identical)

    assert asyncio.run(app())


# --- a wait for a person's approval -----------------------------------------------------


def _waiting(tmp_path: Path, desk: Desk) -> str:
    """Run the desk whose refund needs approval to its wait; return the session's id."""
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        with pytest.raises(DurableRunFailed) as raised:
            desk.make(tmp_path, approval=True).run_sync(desk.prompt, session=session)
        outcome = raised.value.outcome
        assert "waiting" == outcome.status
        assert ["issue_refund"] == [p.tool_name for p in outcome.pending]
        assert ["call-2"] == [p.tool_call_id for p in rt.pending(session.id)]
        assert [] == ledger(tmp_path)
        return session.id


def test_an_approval_decided_by_clew_approve_in_another_process_resumes_the_run(
    tmp_path: Path, desk: Desk
) -> None:
    sid = _waiting(tmp_path, desk)
    approved = run_process(Where(tmp_path / "home", tmp_path), "approve", sid, "call-2")
    assert 0 == approved.code, approved.err
    with Runtime(tmp_path / "home", tmp_path) as rt:
        outcome = rt.resume(sid, agent=desk.make(tmp_path, approval=True))
        assert "completed" == outcome.status, outcome.error
        assert desk.answer == outcome.output
        assert 1 == len(ledger(tmp_path))
        assert 3 == calls(tmp_path)  # the two answered before the wait are not asked again
        report = rt.replay(sid, agent=desk.make(tmp_path, approval=True))
        assert report.identical, report.summary()
        assert rt.verify(sid).ok


def test_a_denied_call_never_runs_and_the_model_is_told(tmp_path: Path, desk: Desk) -> None:
    sid = _waiting(tmp_path, desk)
    denied = run_process(Where(tmp_path / "home", tmp_path), "deny", sid, "call-2",
                         "--reason", "no refunds today")  # fmt: skip
    assert 0 == denied.code, denied.err
    with Runtime(tmp_path / "home", tmp_path) as rt:
        outcome = rt.resume(sid, agent=desk.make(tmp_path, approval=True))
        assert "completed" == outcome.status, outcome.error
        assert [] == ledger(tmp_path)
        failed = [e.event for e in rt.store.iter_events(sid) if e.event_type == "tool_failed"]
        assert ["ApprovalDenied"] == [f.error_type for f in failed]
        assert rt.replay(sid, agent=desk.make(tmp_path, approval=True)).identical
