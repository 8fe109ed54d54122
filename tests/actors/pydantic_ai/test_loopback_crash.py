"""The support desk on Pydantic AI's OpenAI model against a loopback server that counts
requests: SIGKILLed at every commit boundary, before each tool, inside the refund and in
the middle of a streamed response (``run_stream``), it resumes to completion; the server
sees an uninterrupted run's requests plus at most the one in flight at the kill; the
refund is in the ledger once; replay identical, verify ok."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("openai")

from _framework_checks import KILL_POINTS, StreamKiller, crashed_session, ledger
from _pyai_desk import DESK, PROMPT, Reply, desk, openai_desk_reply, streamed
from fake_server import FakeServer

from actors.runtime.runtime import Runtime

#: The requests an uninterrupted run sends.
REQUESTS = 3
#: A kill after each group commit but the last, before the first and the second tool,
#: inside the refund.
POINTS = [*KILL_POINTS, {"DESK_KILL_IN_REFUND": "1"}]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        s.answer_with(openai_desk_reply)
        yield s


def _posts(server: FakeServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


def test_an_uninterrupted_run_sends_three_requests_and_replays_offline(
    tmp_path: Path, server: FakeServer
) -> None:
    agent = desk(tmp_path, base_url=server.url)
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        result = agent.run_sync(PROMPT, session=session)
        assert Reply(answer="Refunded 42.50 for A-17.", refunded=42.5) == result.output
        assert REQUESTS == _posts(server)
        assert rt.replay(session.id, agent=agent).identical
        assert REQUESTS == _posts(server)


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_a_kill_resumes_with_at_most_the_request_in_flight_sent_again(
    tmp_path: Path, server: FakeServer, point: dict[str, str]
) -> None:
    home, sid = crashed_session(tmp_path, DESK, {"DESK_BASE_URL": server.url, **point})
    agent = desk(tmp_path, base_url=server.url)
    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=agent)
        assert "completed" == outcome.status, outcome.error
        assert REQUESTS <= _posts(server) <= REQUESTS + 1
        assert 1 == len(ledger(tmp_path))
        sent = _posts(server)
        assert rt.replay(sid, agent=agent).identical
        assert rt.verify(sid).ok
        assert sent == _posts(server)  # the replay sent nothing


@pytest.fixture
def loop() -> Iterator[StreamKiller]:
    with FakeServer() as server:
        killer = StreamKiller(server, openai_desk_reply)
        server.answer_with(killer.reply)
        yield killer


def test_a_streamed_run_streams_every_request_and_replays_offline(
    tmp_path: Path, loop: StreamKiller
) -> None:
    agent = desk(tmp_path, base_url=loop.server.url)
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        assert Reply(answer="Refunded 42.50 for A-17.", refunded=42.5) == asyncio.run(
            streamed(agent, session)
        )
        assert [True] * REQUESTS == [r.json().get("stream") for r in loop.server.requests]
        assert rt.replay(session.id, agent=agent).identical
        assert REQUESTS == loop.posts


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_kill_in_the_middle_of_a_streamed_response_resumes(
    tmp_path: Path, loop: StreamKiller, n: int
) -> None:
    loop.kill_in_stream = n
    home, sid = loop.killed_session(tmp_path, DESK, {"DESK_STREAM": "1"})
    agent = desk(tmp_path, base_url=loop.server.url)
    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=agent)
        assert "completed" == outcome.status, outcome.error
        assert Reply(answer="Refunded 42.50 for A-17.", refunded=42.5) == outcome.output
        # the stream cut at the kill is asked again (not streamed: a resume runs the agent
        # with Agent.run); what the dead process had been answered is not
        assert REQUESTS <= loop.posts <= REQUESTS + 1
        assert 1 == len(ledger(tmp_path))
        sent = loop.posts
        assert rt.replay(sid, agent=agent).identical
        assert rt.verify(sid).ok
        assert sent == loop.posts  # the replay sent nothing
