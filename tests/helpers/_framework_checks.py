"""The checks a framework integration's durable run passes, whichever the framework.

The Pydantic AI and the Agents SDK integrations are tested on the same support desk
(``_pyai_desk.py``, ``_oai_desk.py``: look an order up, refund it once per idempotency
key, answer with a typed ``Reply``); what their tests check alike is here, given the
framework's :class:`Desk`. The desks write their model's calls and their ledger to the
same files, read with :func:`calls` and :func:`ledger`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _processes import child_env
from fake_server import FakeServer
from fake_server import Reply as ServerReply

from actors.runtime.runtime import Runtime

#: The model calls of an uninterrupted run of the desk.
CALLS = 3
#: The run's group commits end after these events (its 20 events are committed in 7
#: groups, each flushed before a side effect; the last one holds ``run_ended``): a kill
#: after each of them but the last leaves the run interrupted at a different point.
BOUNDARIES = (3, 5, 8, 10, 13, 15)
#: A kill after each group commit but the last, before the first and the second tool.
KILL_POINTS = [
    *({"CLEW_FAULT_KILL_AFTER_EVENTS": str(k)} for k in BOUNDARIES),
    {"CLEW_FAULT_KILL_BEFORE_TOOL": "1"},
    {"CLEW_FAULT_KILL_BEFORE_TOOL": "2"},
]


@dataclass(frozen=True)
class Desk:
    """One framework's support desk."""

    #: ``make(workdir, **options)``: the durable agent (``instructions``, ``lookup_doc``,
    #: ``approval`` as the desk's ``desk``).
    make: Callable[..., Any]
    #: The desk as a script (``python SCRIPT HOME SESSION WORKDIR`` runs it in the session).
    script: Path
    #: The desk's typed answer to the prompt.
    answer: Any
    prompt: str


def calls(workdir: Path) -> int:
    """Return how many calls the desk's model was asked, in every process."""
    path = workdir / "calls.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def ledger(workdir: Path) -> list[dict[str, Any]]:
    """Return the ledger's lines."""
    path = workdir / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def event_types(rt: Runtime, sid: str) -> list[str]:
    """Return the types of the session's events, in order."""
    return [e.event_type for e in rt.store.iter_events(sid)]


# --- a run, its replay and its divergences ------------------------------------------------


def check_every_step_recorded(rt: Runtime, sid: str, workdir: Path) -> None:
    """Check a completed run of the desk recorded its three calls and two tools."""
    assert 3 == calls(workdir)
    assert 1 == len(ledger(workdir))
    types = event_types(rt, sid)
    assert 3 == types.count("model_requested") == types.count("model_responded")
    assert 3 == types.count("token_usage")
    assert 2 == types.count("tool_call_started") == types.count("tool_call_finished")
    assert "run_ended" == types[-1]
    run = rt.store.read_runs(sid)[-1]
    assert "completed" == run.status


def check_replay_identical(rt: Runtime, sid: str, agent: Any, workdir: Path) -> None:
    """Check a replay of the desk's run with ``agent`` is identical and asks nothing."""
    report = rt.replay(sid, agent=agent)
    assert report.identical, report.summary()
    assert 3 == calls(workdir)
    assert 1 == len(ledger(workdir))


# --- a crash and its resume ---------------------------------------------------------------


def crashed_session(tmp_path: Path, desk: Desk, env: Mapping[str, str]) -> tuple[Path, str]:
    """Run the desk in a child process with ``env`` (a kill point); return the home and
    the session it was SIGKILLed in."""
    home = tmp_path / "home"
    with Runtime(home, tmp_path) as rt:
        sid = rt.new_session().id
    child = subprocess.run(
        [sys.executable, str(desk.script), str(home), sid, str(tmp_path)],
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert -9 == child.returncode, child.stdout + child.stderr
    return home, sid


def resume_and_check(tmp_path: Path, desk: Desk, home: Path, sid: str) -> int:
    """Resume a crashed run to completion and check it paid no call twice, refunded once
    and replays identically; return how many calls were asked again."""
    with Runtime(home, tmp_path) as rt:
        outcome = rt.resume(sid, agent=desk.make(tmp_path))
        assert "completed" == outcome.status, outcome.error
        assert desk.answer == outcome.output
        resent = sum(
            1
            for e in rt.store.iter_events(sid)
            if e.event_type == "model_requested" and getattr(e.event, "attempt", 1) > 1
        )
        # A call committed but not answered at the kill is asked again (attempt 2): paid
        # twice only if the child had asked it before it died.
        assert resent <= 1
        assert CALLS <= calls(tmp_path) <= CALLS + resent
        assert 1 == len(ledger(tmp_path))
        report = rt.replay(sid, agent=desk.make(tmp_path))
        assert report.identical, report.summary()
        assert rt.verify(sid).ok
        return resent


class StreamKiller:
    """A loopback server's responder (``respond``, a desk's Chat Completions answers)
    that SIGKILLs the desk's child in the middle of its ``kill_in_stream``-th streamed
    response: the server sends the first parts, the child reads them and dies, then the
    stream is released."""

    def __init__(self, server: FakeServer, respond: Callable[[str, Any], Any]) -> None:
        self.server = server
        self.respond = respond
        self.kill_in_stream = 0
        self.child: subprocess.Popen[str] | None = None
        self._streams = 0

    def reply(self, path: str, body: Any) -> Any:
        answer = self.respond(path, body)
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

    def killed_session(
        self, tmp_path: Path, desk: Desk, point: Mapping[str, str]
    ) -> tuple[Path, str]:
        """Run ``desk``'s child on a new session against this server (``point``: its
        environment) until it is SIGKILLed; return the home and the session."""
        home = tmp_path / "home"
        with Runtime(home, tmp_path) as rt:
            sid = rt.new_session().id
        self.child = subprocess.Popen(
            [sys.executable, str(desk.script), str(home), sid, str(tmp_path)],
            env=child_env(DESK_BASE_URL=self.server.url, **point),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = self.child.communicate(timeout=120)
        assert -9 == self.child.returncode, out + err
        return home, sid
