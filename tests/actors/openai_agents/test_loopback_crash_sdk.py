"""The support desk on the SDK's Chat Completions model against a loopback server that
counts requests: SIGKILLed after every group commit, before each tool, inside each tool
and in the middle of a streamed response, it resumes to completion; the server sees an
uninterrupted run's requests plus at most the one in flight at the kill; the refund is in
the ledger once; replay identical (and sends nothing), verify ok."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("openai")

from _framework_checks import KILL_POINTS, ledger
from _oai_desk import ANSWER, PROMPT, Reply, _streamed, desk, openai_desk_reply
from _processes import child_env
from fake_server import FakeServer
from fake_server import Reply as ServerReply

from actors.runtime.runtime import Runtime

DESK = Path(__file__).resolve().parents[2] / "helpers" / "_oai_desk.py"
#: The requests an uninterrupted run sends.
REQUESTS = 3
#: A kill after each group commit but the last, before each tool, inside each tool.
POINTS = [*KILL_POINTS, {"DESK_KILL_IN_LOOKUP": "1"}, {"DESK_KILL_IN_REFUND": "1"}]


class _Desk:
    """The loopback server, and the child the server kills in the middle of the n-th
    streamed response (``kill_in_stream``)."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.kill_in_stream = 0
        self.child: subprocess.Popen[str] | None = None
        self._streams = 0

    def reply(self, path: str, body: Any) -> Any:
        answer = openai_desk_reply(path, body)
        if not body.get("stream"):
            return answer
        self._streams += 1
        if self._streams != self.kill_in_stream or self.child is None:
            return answer
        release = threading.Event()
        child = self.child

        def kill() -> None:  # the child has read the first parts of the stream
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            release.set()

        threading.Timer(0.3, kill).start()
        return ServerReply(content_type=answer.content_type, parts=answer.parts,
                           stall_after=2, release=release)  # fmt: skip

    @property
    def posts(self) -> int:
        return sum(1 for r in self.server.requests if r.path.endswith("/chat/completions"))


@pytest.fixture
def loop() -> Iterator[_Desk]:
    with FakeServer() as server:
        desk_server = _Desk(server)
        server.answer_with(desk_server.reply)
        yield desk_server


def _run_child(tmp_path: Path, loop: _Desk, point: dict[str, str]) -> tuple[Path, str]:
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    loop.child = subprocess.Popen(
        [sys.executable, str(DESK), str(home), sid, str(tmp_path)],
        env=child_env(DESK_BASE_URL=loop.server.url, **point),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = loop.child.communicate(timeout=120)
    assert -9 == loop.child.returncode, out + err
    return home, sid


def _resume_and_check(tmp_path: Path, loop: _Desk, home: Path, sid: str) -> None:
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
    tmp_path: Path, loop: _Desk
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
    tmp_path: Path, loop: _Desk
) -> None:
    runner = desk(tmp_path, base_url=loop.server.url)
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        assert Reply(**ANSWER) == asyncio.run(_streamed(runner, session))
        assert [True] * REQUESTS == [r.json().get("stream") for r in loop.server.requests]
        assert rt.replay(session.id, agent=runner).identical
        assert REQUESTS == loop.posts


def test_a_kill_in_the_middle_of_a_streamed_response_resumes(tmp_path: Path, loop: _Desk) -> None:
    loop.kill_in_stream = 2
    home, sid = _run_child(tmp_path, loop, {"DESK_STREAM": "1"})
    _resume_and_check(tmp_path, loop, home, sid)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 3])
def test_a_kill_in_the_middle_of_any_streamed_response_resumes(
    tmp_path: Path, loop: _Desk, n: int
) -> None:
    loop.kill_in_stream = n
    home, sid = _run_child(tmp_path, loop, {"DESK_STREAM": "1"})
    _resume_and_check(tmp_path, loop, home, sid)


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_a_kill_resumes_with_at_most_the_request_in_flight_sent_again(
    tmp_path: Path, loop: _Desk, point: dict[str, str]
) -> None:
    home, sid = _run_child(tmp_path, loop, point)
    _resume_and_check(tmp_path, loop, home, sid)
