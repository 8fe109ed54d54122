"""Helpers of the live-run tests: a streaming wrapper over a scripted model, a tool that
waits to be cancelled, and a process that runs a slow session."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
from _processes import child_env
from _runtime_helpers import route, rule, scripted, worker

from actors import Runtime, ScriptedModel, ToolContext, tool
from actors.models.protocol import ModelRequest, ModelResponse, StreamItem
from eventlog.blocks import TextBlock
from eventlog.errors import ModelError
from eventlog.events import RunEnded


class NoArgs(pydantic.BaseModel):
    """A tool without arguments."""


class Streaming:
    """A scripted model that streams its reply text word by word.

    ``piece_s``: a pause before each piece. ``cut_first``: the first streamed call of
    each role in the set is cut after two pieces (``StreamInterrupted``).
    """

    def __init__(
        self, inner: ScriptedModel, piece_s: float = 0.0, cut_first: frozenset[str] = frozenset()
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.piece_s = piece_s
        self.cut_first = set(cut_first)
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest) -> ModelResponse:
        return self.inner.complete(request)

    def stream(self, request: ModelRequest) -> Iterator[StreamItem]:
        response = self.inner.complete(request)
        text = "".join(b.text for b in response.content if isinstance(b, TextBlock))
        with self._lock:
            cut = request.role in self.cut_first
            self.cut_first.discard(request.role)
        for i, piece in enumerate(re.findall(r"\S+\s*", text)):
            if cut and i == 2:
                raise ModelError("the stream was cut", error_type="StreamInterrupted")
            time.sleep(self.piece_s)
            yield piece
        yield response


def three_workers(delay_ms: int = 0, lead_delay_ms: int = 0) -> ScriptedModel:
    """A plan of three workers (w2 waits for w1) answering in text, then the lead."""
    reply: dict[str, Any] = {"text": "Found three useful facts for the plan."}
    if delay_ms:
        reply["delay_ms"] = delay_ms
    lead: dict[str, Any] = {"text": "The final answer, from every worker's summary."}
    if lead_delay_ms:
        lead["delay_ms"] = lead_delay_ms
    return scripted(
        route(
            [worker("w1", "a", "look"), worker("w2", "b", "think", ["w1"]), worker("w3", "c", "go")]
        ),
        rule("a", reply),
        rule("b", reply),
        rule("c", reply),
        rule("lead", lead),
    )


def calls_tool(name: str) -> ScriptedModel:
    """One worker that calls tool ``name`` twice in one reply, then answers."""
    call = {"name": name, "arguments": {}}
    return scripted(
        route([worker("w1", "a", "use the tool")]),
        rule("a", {"tool_calls": [call, call]}, {"text": "done"}),
    )


def until_cancelled(started: threading.Event, limit_s: float = 60.0) -> Any:
    """A tool that sets ``started``, then waits (up to ``limit_s``) until its run is
    cancelled, and returns."""

    @tool(NoArgs, name="wait_for_cancel")
    def body(args: NoArgs, ctx: ToolContext) -> str:
        """Wait for the run to be cancelled."""
        started.set()
        deadline = time.monotonic() + limit_s
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        return "stopped early" if ctx.cancelled else "never cancelled"

    return body


SLOW_SESSION = """
import sys
from actors import Runtime
from actors.demo import demo_model, demo_tools
from pathlib import Path
home, project = Path(sys.argv[1]), Path(sys.argv[2])
with Runtime(home, project) as rt:
    s = rt.new_session()
    print(s.id, flush=True)
    try:
        out = s.run("plan it", model=demo_model(3, int(sys.argv[3])), tools=demo_tools(project))
        print("outcome", out.status, out.error, flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
"""


def slow_session(home: Path, project: Path, delay_ms: int) -> subprocess.Popen[str]:
    """Start a process running a demo session with ``delay_ms`` per model call; its first
    stdout line is the session id, its last one the outcome."""
    return subprocess.Popen(
        [sys.executable, "-c", SLOW_SESSION, str(home), str(project), str(delay_ms)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=project,
    )


def ended_well(rt: Runtime, sid: str) -> None:
    """The session replays identically, verifies, and has no open run."""
    report = rt.replay(sid)
    assert report.identical, report.summary()
    assert rt.verify(sid).ok
    assert not rt.interrupted_runs(sid)
    assert all(r.status not in ("running", "pending") for r in rt.store.read_runs(sid))


def main_end(rt: Runtime, sid: str, n: int = 1) -> RunEnded:
    """The ``run_ended`` of the session's ``n``-th main run."""
    [end] = [
        e.event
        for e in rt.store.read_events(sid)
        if isinstance(e.event, RunEnded) and e.run_id == f"{sid}:brain:r{n}"
    ]
    return end
