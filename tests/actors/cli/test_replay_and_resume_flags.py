"""``clew replay --live-tools`` and ``clew resume --from-divergence`` on real sessions."""

from __future__ import annotations

import signal

import pytest
import structlog
from _cli_helpers import Where, count_events, invoke, run_process

import actors.orchestration.worker
from eventlog.events import ResumedPastDivergence
from eventlog.sqlite.store import SQLiteStore

CHANGED = "A changed worker system prompt."


def test_replay_with_live_tools_reruns_the_demo_lookups_and_reports_them(empty: Where) -> None:
    demo = invoke(empty, "demo", "--json")
    structlog.reset_defaults()
    assert 0 == demo.code, demo.err
    sid = demo.json()["session_id"]
    replayed = invoke(empty, "replay", sid, "--live-tools", "--json")
    assert 0 == replayed.code, replayed.out + replayed.err
    doc = replayed.json()
    assert True is doc["identical"]
    assert doc["live_tools"]["ran"] > 0 < doc["live_tools"]["not_run"]
    text = invoke(empty, "replay", sid, "--live-tools")
    assert 0 == text.code
    assert "not run (not idempotent)" in text.out.splitlines()[-1]


def test_a_resume_after_a_prompt_change_is_refused_then_goes_on_with_from_divergence(
    empty: Where, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed = run_process(empty, "demo", CLEW_FAULT_KILL_AFTER_EVENTS="40")
    assert -signal.SIGKILL == killed.code
    sid = killed.out.split()[1]
    before = count_events(empty.home, sid)
    monkeypatch.setattr(actors.orchestration.worker, "WORKER_SYSTEM", CHANGED)

    refused = invoke(empty, "resume", sid)
    assert 2 == refused.code, refused.out + refused.err
    assert ["error: "] == [x[:7] for x in refused.err_lines()], refused.err
    line = refused.err_lines()[0]
    assert "resume refused" in line
    assert f"clew resume {sid} --from-divergence" in line
    assert before == count_events(empty.home, sid)

    resumed = invoke(empty, "resume", sid, "--from-divergence", "--json")
    assert 0 == resumed.code, resumed.err
    assert "completed" == resumed.json()["status"]
    store = SQLiteStore(empty.home / "sessions.sqlite", read_only=True)
    try:
        assert any(isinstance(e.event, ResumedPastDivergence) for e in store.read_events(sid))
    finally:
        store.close()
    assert 0 == invoke(empty, "verify", sid).code
    timeline = invoke(empty, "timeline", sid)
    assert "recorded events no longer followed" in timeline.out
    replayed = invoke(empty, "replay", sid, "--json")
    assert (0, True) == (replayed.code, replayed.json()["identical"]), replayed.out


def test_the_readable_divergence_is_in_the_replay_json(
    empty: Where, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = invoke(empty, "demo", "--json")
    structlog.reset_defaults()
    sid = demo.json()["session_id"]
    monkeypatch.setattr(actors.orchestration.worker, "WORKER_SYSTEM", CHANGED)
    replayed = invoke(empty, "replay", sid, "--json")
    assert 1 == replayed.code
    doc = replayed.json()
    first = doc["first_divergence"]
    assert ("model_requested", "system") == (first["event_type"], first["field"])
    assert f"+{CHANGED}" in first["diff"]
    assert CHANGED == first["current"]
    assert 3 == len(doc["consequences"]["other_divergences"])  # the other workers, the review
    assert 3 == doc["consequences"]["same_change"]
    text = invoke(empty, "replay", sid)
    assert text.out.startswith("diverged: seq ")
    assert "  system changed:" in text.out.splitlines()
