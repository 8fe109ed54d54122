"""``clew sessions --error`` and ``clew redrive``: sessions failed by a loopback provider
answering 503 are selected by what failed them, planned (--dry-run) and re-driven once it
recovers; the provider is asked again exactly the calls the plan named."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import re
from typing import Any

from _cli_helpers import Where, invoke
from fake_server import FakeServer, Reply

from actors.recording.inputs import RunInputs
from actors.recording.recorded import run_started_of
from actors.runtime.runtime import Runtime

SESSIONS = 3
ATTEMPT = re.compile(rb":brain:r[0-9]+")


def _body(raw: bytes) -> bytes:
    return ATTEMPT.sub(b":brain:r", raw)


def test_sessions_failed_by_a_503_are_planned_then_redriven(empty: Where) -> None:
    with FakeServer() as server:
        server.answer_with(
            lambda path, request: Reply(status=503, body={"error": {"message": "down"}})
        )
        sids = []
        for i in range(SESSIONS):
            ran = invoke(empty, "run", f"hello {i}", "--model", "openai:m", "--base-url",
                         server.url, "--json")  # fmt: skip
            assert "failed" == ran.json()["status"], ran.err
            sids.append(ran.json()["session_id"])
        outage = {_body(r.body) for r in server.requests}
        ok = invoke(empty, "demo")  # completed: not selected

        listed = invoke(empty, "sessions", "--status", "failed", "--error", "503", "--json")
        assert 0 == listed.code, listed.err
        assert sids == [s["session_id"] for s in listed.json()]
        plan = invoke(empty, "redrive", "--error", "HTTP 503", "--dry-run", "--json")
        assert 0 == plan.code, plan.err
        plans: list[dict[str, Any]] = plan.json()["sessions"]
        assert sids == [p["session_id"] for p in plans]
        assert {"retry"} == {p["action"] for p in plans}
        predicted = sum(c["as_recorded"] for p in plans for c in p["paid_again"])
        text = invoke(empty, "redrive", "--error", "HTTP 503", "--dry-run")
        assert f"{SESSIONS} sessions: {SESSIONS} to re-drive" in text.out

        server.answer_with(None)  # the provider is back
        server.requests.clear()
        done = invoke(empty, "redrive", "--error", "HTTP 503", "--base-url", server.url)
        asked = [_body(r.body) for r in server.requests]
    assert 0 == done.code, done.err
    assert f"{SESSIONS} sessions, {SESSIONS} completed, 0 failed again" in done.out
    assert predicted == sum(1 for body in asked if body in outage)
    assert 0 < predicted
    assert 0 == ok.code, ok.err
    for sid in sids:
        assert 0 == invoke(empty, "verify", sid).code
        replayed = invoke(empty, "replay", sid, "--json")
        assert (0, True) == (replayed.code, replayed.json()["identical"])
    again = invoke(empty, "sessions", "--status", "failed", "--json")
    assert [] == again.json()


def test_a_bad_error_pattern_is_refused_in_one_line(empty: Where) -> None:
    assert 0 == invoke(empty, "demo").code
    result = invoke(empty, "redrive", "--error", "(", "--dry-run")
    assert 2 == result.code
    assert 1 == len(result.err_lines())
    assert "not a regular expression" in result.err


def test_a_redriven_run_records_the_redrive_and_show_and_timeline_name_it(empty: Where) -> None:
    with FakeServer() as server:
        server.answer_with(
            lambda path, request: Reply(status=503, body={"error": {"message": "down"}})
        )
        ran = invoke(empty, "run", "hello", "--model", "openai:m", "--base-url", server.url,
                     "--json")  # fmt: skip
        sid = ran.json()["session_id"]
        server.answer_with(None)
        done = invoke(empty, "redrive", "--error", "HTTP 503", "--base-url", server.url)
    assert 0 == done.code, done.err
    [rid] = re.findall(r"redrive_[0-9]{8}_[0-9]{6}_[0-9a-f]{4}", done.out)

    with Runtime(empty.home, empty.project, read_only=True) as rt:
        first, second = (
            RunInputs.from_metadata(run_started_of(rt.store.read_run(sid, r)).metadata)
            for r in rt.main_runs(sid)
        )
    assert (None, 5) == (first.redrive, first.inputs_version)  # not re-driven: version 5
    assert (rid, 6) == (second.redrive, second.inputs_version)
    shown = invoke(empty, "show", sid)
    assert f"re-driven: brain:r2 by {rid}" in shown.out, shown.out
    assert rid in invoke(empty, "timeline", sid).out
    assert 0 == invoke(empty, "verify", sid).code
    replayed = invoke(empty, "replay", sid, "--json")
    assert (0, True) == (replayed.code, replayed.json()["identical"])
