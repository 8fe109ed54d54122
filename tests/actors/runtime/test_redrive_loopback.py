"""Re-drive after an outage of a real HTTP provider: 30 sessions run through clew's OpenAI
adapter against a loopback server that answers 503 and fail; once it answers again, the
dry run's predicted calls asked again are the ones the server then counts, every session
completes, verifies and replays identically, and each new run names the re-drive."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from fake_server import FakeServer, Reply, default_reply

from actors.models.providers import HttpOptions, OpenAIChatModel, RetryPolicy
from actors.recording.inputs import RunInputs
from actors.recording.recorded import run_started_of
from actors.runtime.redrive import RETRY, RedriveApp, plan_session, redrive
from actors.runtime.runtime import Runtime
from actors.runtime.status import SessionFilter, select_sessions

SESSIONS = 30
ATTEMPT = re.compile(rb":brain:r[0-9]+")


def test_thirty_sessions_failed_by_a_loopback_server_answering_503_are_redriven(
    tmp_path: Path,
) -> None:
    down = threading.Event()
    down.set()

    def answer(path: str, request: Any) -> Reply:
        if down.is_set():
            return Reply(status=503, body={"error": {"message": "Service Unavailable"}})
        return default_reply(path, request)

    once = HttpOptions(retry=RetryPolicy(max_attempts=1), timeout=30.0)
    with FakeServer() as server, Runtime(tmp_path / "home", tmp_path) as rt:
        server.answer_with(answer)
        model = OpenAIChatModel("m", base_url=server.url + "/v1", options=once)
        sids = []
        for i in range(SESSIONS):
            session = rt.new_session()
            assert "failed" == session.run(f"question {i}", model=model).status
            sids.append(session.id)
        outage = {ATTEMPT.sub(b"", r.body) for r in server.requests}

        chosen = select_sessions(rt, SessionFilter(status="failed", error="503"))
        plans = [plan_session(rt, s.session_id) for s in chosen]
        assert (sids, {RETRY}) == ([s.session_id for s in chosen], {p.action for p in plans})
        predicted = sum(c.as_recorded for p in plans for c in p.paid_again)

        down.clear()  # the provider is back
        server.requests.clear()
        report = redrive(rt, plans, RedriveApp(model=model), concurrency=4)
        asked = Counter(ATTEMPT.sub(b"", r.body) for r in server.requests)

        assert predicted == sum(n for body, n in asked.items() if body in outage)
        assert 0 < predicted
        assert SESSIONS == report.counts()["completed"]
        for sid in sids:
            session = rt.session(sid)
            assert "completed" == session.info().status
            assert session.verify().ok
            assert session.replay().identical
            last = session.main_runs()[-1]
            inputs = RunInputs.from_metadata(run_started_of(rt.store.read_run(sid, last)).metadata)
            assert report.redrive_id == inputs.redrive
