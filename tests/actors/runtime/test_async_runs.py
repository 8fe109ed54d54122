"""Async runs: ``await session.arun``, ``async for … in session.astream``, async models.

Every model here is an async client (``httpx.AsyncClient``) of a real HTTP server on
loopback (``asyncio`` streams) that answers with a scripted model; each test runs its
own event loop (``asyncio.run``). Every session replays identically and verifies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
from _async_models import HttpModel, HttpStreamingModel, ModelServer, Ticker, server_thread
from _live_helpers import ended_well, main_end, three_workers
from _runtime_helpers import route, rule, scripted, worker

from actors import Role, RunSettings, Runtime, StoredEvent, Team, TextDelta, UsageError
from actors.runtime.start import STREAM_CLOSED, TASK_CANCELLED
from eventlog.events import ModelFailed, ModelRequested, ModelResponded, RunEnded


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    project = tmp_path / "project"
    project.mkdir()
    with Runtime(tmp_path / "home", project) as runtime:
        yield runtime


def _runs(rt: Runtime, sid: str) -> dict[str, list[str]]:
    """Each run's events as JSON with the session id blanked out, sorted (the Brain
    receives its concurrent workers' results in the order they happened to finish)."""
    out: dict[str, list[str]] = {}
    for e in rt.store.read_events(sid):
        if e.run_id is not None:
            out.setdefault(e.run_id.replace(sid, "SID"), []).append(_blanked(e, sid))
    return {run: sorted(events) for run, events in out.items()}


def _blanked(e: StoredEvent, sid: str) -> str:
    """The event's payload as JSON, without what derives from the session id."""
    payload = msgspec.to_builtins(e.event)
    payload.pop("rng_seed", None)  # seeded from the run id
    payload.pop("request_hash", None)  # of a request that holds the session id
    if isinstance(payload.get("node"), dict):
        payload["node"].pop("token_count", None)  # estimated over text holding the id
    return msgspec.json.encode(payload).decode().replace(sid, "SID")


# --- arun -------------------------------------------------------------------------------


def test_an_async_model_over_http_drives_a_multi_worker_run_and_records_what_a_sync_one_does(
    rt: Runtime,
) -> None:
    session = rt.new_session()

    async def main() -> tuple[str, HttpModel, int]:
        async with (
            ModelServer(three_workers()) as server,
            httpx.AsyncClient(verify=False, trust_env=False) as client,
        ):
            model = HttpModel(server.url, client=client)
            outcome = await session.arun("plan it", model=model)
            assert "completed" == outcome.status
            assert 3 == len(outcome.worker_results)
            return outcome.answer, model, id(asyncio.get_running_loop())

    answer, model, loop_id = asyncio.run(main())

    assert "The final answer, from every worker's summary." == answer
    assert {loop_id} == model.loops  # every call ran on the loop the run was started from
    ended_well(rt, session.id)

    # A sync model with the same replies records the very same events, run by run.
    same = rt.new_session()
    assert "completed" == same.run("plan it", model=three_workers()).status
    assert _runs(rt, same.id) == _runs(rt, session.id)


def test_the_event_loop_stays_free_while_a_run_runs(rt: Runtime) -> None:
    session = rt.new_session()
    ticker = Ticker()

    async def main() -> int:
        # The server answers each call only after the ticker ticked 3 more times: a run
        # that blocked the loop would never end (the wait_for turns that into a failure).
        ticking = asyncio.create_task(ticker.run())
        script = three_workers()
        async with ModelServer(script, before_reply=lambda: ticker.more(3)) as server:
            outcome = await asyncio.wait_for(
                session.arun("plan it", model=HttpModel(server.url)), 120
            )
            answered = sum(server.answered.values())
        ticking.cancel()
        assert "completed" == outcome.status
        return answered

    answered = asyncio.run(main())
    calls = [e for e in rt.store.read_events(session.id) if isinstance(e.event, ModelResponded)]
    assert 5 == answered == len(calls)  # router, three workers, lead
    assert ticker.count >= 3 * answered
    ended_well(rt, session.id)


def test_an_async_model_in_a_roles_chain_and_a_sync_run_use_the_runtimes_loop(
    rt: Runtime,
) -> None:
    session = rt.new_session()
    with server_thread(three_workers()) as server:
        lead = HttpModel(server.url)
        roles = [Role(name=name) for name in "abc"]
        team = Team(roles=[*roles, Role(name="lead", model=lead)])
        outcome = session.run("plan it", model=HttpModel(server.url), team=team)

    assert "completed" == outcome.status
    assert {"clew-async-models"} == lead.threads  # the runtime's own loop thread
    assert 1 == len(lead.loops)
    ended_well(rt, session.id)


def test_an_async_call_past_its_timeout_is_cancelled_and_the_chain_falls_back(
    rt: Runtime,
) -> None:
    session = rt.new_session()
    script = scripted(route([worker("w1", "a", "look")]), rule("a", {"text": "found"}))

    async def main() -> HttpModel:
        async with ModelServer(script, hang=frozenset({"a"})) as server:
            slow = HttpModel(server.url, name="slow")
            outcome = await session.arun(
                "plan it",
                model={"default": HttpModel(server.url), "a": [slow, script]},
                # Loose enough for a loaded machine's loopback calls; "slow" never answers.
                settings=RunSettings(model_timeout_s=2.0),
            )
            assert "completed" == outcome.status
            await asyncio.to_thread(slow.cancelled.wait, 30)
        return slow

    slow = asyncio.run(main())
    assert slow.cancelled.is_set()  # the given-up call's task was cancelled on its loop
    [failed] = [
        e.event for e in rt.store.read_events(session.id) if isinstance(e.event, ModelFailed)
    ]
    assert ("slow", "ModelTimeout", True) == (failed.model, failed.error_type, failed.will_fallback)
    ended_well(rt, session.id)


# --- astream ----------------------------------------------------------------------------


def test_astream_yields_the_stored_events_in_seq_order_and_the_streamed_text(
    rt: Runtime,
) -> None:
    session = rt.new_session()

    async def main() -> list[StoredEvent | TextDelta]:
        async with (
            ModelServer(three_workers()) as server,
            httpx.AsyncClient(verify=False, trust_env=False) as client,
        ):
            model = HttpStreamingModel(server.url, client=client)
            return [item async for item in session.astream("plan it", model=model)]

    items = asyncio.run(main())

    events = [i for i in items if isinstance(i, StoredEvent)]
    stored = [e for e in rt.store.read_events(session.id) if e.event_type != "session_created"]
    assert stored == events
    seqs = [e.seq for e in events]
    assert list(range(seqs[0], seqs[0] + len(seqs))) == seqs  # no gap
    assert isinstance(events[-1].event, RunEnded) and "completed" == events[-1].event.status
    texts: dict[tuple[str, int], str] = {}
    for item in items:
        if isinstance(item, TextDelta):
            key = (item.run_id, item.call_index)
            texts[key] = texts.get(key, "") + item.text
    responded = {
        (e.run_id, e.event.call_index): e.event
        for e in events
        if isinstance(e.event, ModelResponded)
    }
    assert len(texts) >= 4  # three workers and the lead (the router replies in JSON)
    for key, text in texts.items():
        assert text == "".join(getattr(b, "text", "") for b in responded[key].content)
    ended_well(rt, session.id)


def test_handle_astream_and_aresult_watch_a_started_run(rt: Runtime) -> None:
    session = rt.new_session()

    async def main() -> tuple[int, str]:
        async with ModelServer(three_workers()) as server:
            handle = session.start("plan it", model=HttpModel(server.url))
            seen = 0
            async for item in handle.astream():
                seen += isinstance(item, StoredEvent)
                break  # closing it stops watching; the run goes on
            outcome = await handle.aresult()
        return seen, outcome.status

    assert (1, "completed") == asyncio.run(main())
    ended_well(rt, session.id)


# --- cancelling the awaiting task ---------------------------------------------------------


def test_cancelling_the_task_awaiting_arun_records_the_run_cancelled_first(rt: Runtime) -> None:
    session = rt.new_session()

    async def main() -> HttpModel:
        async with ModelServer(three_workers(), hang=frozenset({"lead"})) as server:
            model = HttpModel(server.url)
            task = asyncio.create_task(session.arun("plan it", model=model))
            await asyncio.to_thread(server.hanging.wait, 60)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # Recorded before the CancelledError reached us.
            end = main_end(rt, session.id)
            assert ("cancelled", "aborted_streaming") == (end.status, end.end_reason)
            assert {"status": "cancelled", "reason": TASK_CANCELLED, "source": "handle"} == (
                end.outcome
            )
            await asyncio.to_thread(model.cancelled.wait, 30)
        return model

    model = asyncio.run(main())
    assert model.cancelled.is_set()  # the model call's task was cancelled on the loop
    assert not session.info().interrupted
    ended_well(rt, session.id)

    # A cancelled session takes a new run.
    assert "completed" == session.run("now something else", model=three_workers()).status
    ended_well(rt, session.id)


def test_cancelling_the_task_iterating_astream_cancels_the_run(rt: Runtime) -> None:
    session = rt.new_session()

    async def consume(server: ModelServer, seen: list[str], lead_asked: asyncio.Event) -> None:
        async for item in session.astream("plan it", model=HttpStreamingModel(server.url)):
            if isinstance(item, StoredEvent):
                seen.append(item.event_type)
                if isinstance(item.event, ModelRequested) and item.event.role == "lead":
                    lead_asked.set()

    async def main() -> list[str]:
        seen: list[str] = []
        lead_asked = asyncio.Event()
        async with ModelServer(three_workers(), hang=frozenset({"lead"})) as server:
            task = asyncio.create_task(consume(server, seen, lead_asked))
            await asyncio.to_thread(server.hanging.wait, 60)
            # The server holds the lead's call; its model_requested may still be on its way
            # to this task (a loaded machine): cancel once the task has it.
            await asyncio.wait_for(lead_asked.wait(), 60)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert "cancelled" == main_end(rt, session.id).status
        return seen

    seen = asyncio.run(main())
    assert "model_requested" == seen[-1]  # the lead's call, never answered
    assert TASK_CANCELLED == main_end(rt, session.id).outcome["reason"]
    ended_well(rt, session.id)


def test_closing_astream_before_its_run_ended_cancels_the_run(rt: Runtime) -> None:
    session = rt.new_session()

    async def main() -> None:
        async with ModelServer(three_workers(), hang=frozenset({"lead"})) as server:
            items = session.astream("plan it", model=HttpModel(server.url))
            async for item in items:
                event = item.event if isinstance(item, StoredEvent) else None
                if isinstance(event, ModelRequested) and event.role == "lead":
                    break
            await items.aclose()
            end = main_end(rt, session.id)
            assert ("cancelled", STREAM_CLOSED) == (end.status, end.outcome["reason"])

    asyncio.run(main())
    ended_well(rt, session.id)


def test_arun_refuses_bad_input_at_once_and_writes_nothing(rt: Runtime) -> None:
    session = rt.new_session()
    before = len(rt.store.read_events(session.id))

    async def main() -> None:
        with pytest.raises(UsageError, match="the prompt is empty"):
            await session.arun("  ", model=three_workers())
        with pytest.raises(UsageError, match="the prompt is empty"):
            async for _ in session.astream("", model=three_workers()):
                pass

    asyncio.run(main())
    assert before == len(rt.store.read_events(session.id))
