"""The support desk on the SDK's Chat Completions model against a loopback server that
counts requests: SIGKILLed after every group commit, before each tool, inside each tool
and in the middle of a streamed response, it resumes to completion; the server sees an
uninterrupted run's requests plus at most the one in flight at the kill; the refund is in
the ledger once; replay identical (and sends nothing), verify ok."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("agents")
pytest.importorskip("openai")

from _framework_checks import KILL_POINTS, StreamKiller, ledger
from _oai_desk import ANSWER, DESK, PROMPT, Reply, _streamed, desk, openai_desk_reply
from fake_server import FakeServer

from actors.runtime.runtime import Runtime

#: The requests an uninterrupted run sends.
REQUESTS = 3
#: A kill after each group commit but the last, before each tool, inside each tool.
POINTS = [*KILL_POINTS, {"DESK_KILL_IN_LOOKUP": "1"}, {"DESK_KILL_IN_REFUND": "1"}]


@pytest.fixture
def loop() -> Iterator[StreamKiller]:
    with FakeServer() as server:
        killer = StreamKiller(server, openai_desk_reply)
        server.answer_with(killer.reply)
        yield killer


def _run_child(tmp_path: Path, loop: StreamKiller, point: dict[str, str]) -> tuple[Path, str]:
    return loop.killed_session(tmp_path, DESK, point)


def _resume_and_check(tmp_path: Path, loop: StreamKiller, home: Path, sid: str) -> None:
    runner = desk(tmp_path, base_url=loop.server.url)
    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=runner)
        assert "completed" == outcome.status, outcome.error
        assert Reply(**ANSWER) == outcome.output
        assert REQUESTS <= loop.posts <= REQUESTS + 1
        assert 1 == len(ledger(tmp_path))
        sent = loop.posts
        report = rt.replay(sid, agent=runner)
        assert report.identical, report.summary()
        assert rt.verify(sid).ok
        assert sent == loop.posts  # the replay sent nothing


def test_an_uninterrupted_run_sends_three_requests_and_replays_offline(
    tmp_path: Path, loop: StreamKiller
) -> None:
    runner = desk(tmp_path, base_url=loop.server.url)
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        result = runner.run_sync(PROMPT, session=session)
        assert Reply(**ANSWER) == result.final_output
        assert REQUESTS == loop.posts
        assert rt.replay(session.id, agent=runner).identical
        assert REQUESTS == loop.posts


def test_a_streamed_run_sends_three_streamed_requests_and_replays_offline(
    tmp_path: Path, loop: StreamKiller
) -> None:
    runner = desk(tmp_path, base_url=loop.server.url)
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        assert Reply(**ANSWER) == asyncio.run(_streamed(runner, session))
        assert [True] * REQUESTS == [r.json().get("stream") for r in loop.server.requests]
        assert rt.replay(session.id, agent=runner).identical
        assert REQUESTS == loop.posts


def test_a_kill_in_the_middle_of_a_streamed_response_resumes(
    tmp_path: Path, loop: StreamKiller
) -> None:
    loop.kill_in_stream = 2
    home, sid = _run_child(tmp_path, loop, {"DESK_STREAM": "1"})
    _resume_and_check(tmp_path, loop, home, sid)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 3])
def test_a_kill_in_the_middle_of_any_streamed_response_resumes(
    tmp_path: Path, loop: StreamKiller, n: int
) -> None:
    loop.kill_in_stream = n
    home, sid = _run_child(tmp_path, loop, {"DESK_STREAM": "1"})
    _resume_and_check(tmp_path, loop, home, sid)


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_a_kill_resumes_with_at_most_the_request_in_flight_sent_again(
    tmp_path: Path, loop: StreamKiller, point: dict[str, str]
) -> None:
    home, sid = _run_child(tmp_path, loop, point)
    _resume_and_check(tmp_path, loop, home, sid)
