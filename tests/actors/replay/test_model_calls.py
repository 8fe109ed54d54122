"""A session's model calls rebuilt from the recording: every request hashes to the recorded
``request_hash`` — a demo, a fork, a rerun, a compacted long session, sessions recorded by
an older clew, one on PostgreSQL — and each call has its reply, usage, latency and
whether a rerun served it from the recording."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from actors import Runtime, ScriptedModel
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.documents.calls import waterfall_doc
from actors.models.protocol import request_hash
from actors.replay.calls import RERUN_KEY, ModelCall, elapsed_ms
from actors.runtime import branching
from eventlog.events import ModelRequested, ModelResponded
from projections.costs import Price

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "sessions"
SUMMARY = "Summary: the user asked numbered questions; the lead answered each with 42."


def _exact(calls: list[ModelCall]) -> None:
    assert calls
    assert [(c.index, True) for c in calls] == [(c.index, c.hash_matches) for c in calls]
    assert [c.request_hash for c in calls] == [request_hash(c.request) for c in calls]


def _demo(rt: Runtime) -> str:
    s = rt.new_session()
    s.run(DEMO_PROMPT, model=demo_model(3), tools=demo_tools(rt.project_dir))
    return s.id


def test_every_call_of_the_demo_is_rebuilt_exactly_with_its_reply_and_timing(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = _demo(rt)
        calls = rt.session(sid).model_calls()
        _exact(calls)
        events = rt.store.read_events(sid)
    requested = [e for e in events if isinstance(e.event, ModelRequested)]
    answered = {
        (e.run_id, e.event.call_index): e for e in events if isinstance(e.event, ModelResponded)
    }
    assert [e.event_id for e in requested] == [c.event_id for c in calls]
    assert list(range(1, len(calls) + 1)) == [c.index for c in calls]
    assert {"reference"} == {c.recorded_as for c in calls}
    assert "router" == calls[0].role
    price = Price(input=1.0, output=2.0)
    u = calls[0].usage
    assert (u.input_tokens + 2 * u.output_tokens) / 1e6 == calls[0].cost({"demo": price})
    assert calls[0].cost({}) is None
    for c in calls:
        reply = answered[(c.run_id, c.call_index)]
        assert isinstance(reply.event, ModelResponded)
        assert (reply.event.content, reply.event.usage) == (c.content, c.usage)
        assert elapsed_ms(c.requested_at, reply.created_at) == c.latency_ms
        assert not c.served
    assert 9 == len(calls)


def test_a_run_s_calls_are_its_own_and_its_workers(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = _demo(rt)
        worker = f"{sid}:brain:r1/w1:r1"
        assert 2 == len(rt.session(sid).model_calls(run=worker))
        assert 9 == len(rt.session(sid).model_calls(run=f"{sid}:brain:r1"))


def test_a_fork_s_calls_are_rebuilt_from_the_nodes_it_copied(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        fork = rt.session(_demo(rt)).fork()
        fork.run("And a follow-up?", model=demo_model(3), tools=demo_tools(rt.project_dir))
        calls = fork.model_calls()
        _exact(calls)
        lead = next(c for c in calls if c.role == "lead")
        # The lead's conversation starts with the parent's path: the prefix the fork copied.
        assert DEMO_PROMPT in str(lead.request.messages[0].content)


def test_a_rerun_s_calls_are_exact_and_say_which_the_recording_served(tmp_path: Path) -> None:
    assert branching.RERUN_KEY == RERUN_KEY
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = _demo(rt)
        report = rt.session(sid).rerun(model=demo_model(3), tools=demo_tools(rt.project_dir))
        calls = rt.session(report.session_id).model_calls()
        _exact(calls)
        assert report.served_calls == sum(c.served for c in calls) == 9
        # Another lead: its call goes live (and the review of its answer), the rest served.
        changed = rt.session(sid).rerun(
            models={"lead": ScriptedModel({"rules": [{"replies": [{"text": "Other."}]}]})},
            tools=demo_tools(rt.project_dir),
        )
        again = rt.session(changed.session_id).model_calls()
        _exact(again)
        assert changed.served_calls == sum(c.served for c in again) == 7
        assert {"lead", "reviewer"} == {c.role for c in again if not c.served}
        assert not any(c.served for c in rt.session(sid).model_calls())


def test_a_long_compacted_session_s_calls_are_exact(tmp_path: Path) -> None:
    rules = [
        {"role": "router", "replies": [{"json": {"primary_role": "lead", "workers": []}}]},
        {"role": "summarizer", "phase": "compact", "replies": [{"text": SUMMARY}]},
        {"role": "lead", "replies": [{"text": "The answer is 42, as before. " * 4}]},
    ]
    with Runtime(tmp_path / "home", tmp_path) as rt:
        s = rt.new_session()
        for i in range(1, 25):
            out = s.run(
                f"Question {i}: six times seven?",
                model=ScriptedModel({"rules": rules}, context_window=900),
            )
            assert "completed" == out.status
        calls = s.model_calls()
        fall = waterfall_doc(rt, s.id)
    _exact(calls)
    assert any(c.phase == "compact" for c in calls)
    bars = [b for r in fall["runs"] for b in r["bars"]]
    compactions = [c.index for c in calls if c.phase == "compact"]
    assert compactions == [b["call"] for b in bars if b["kind"] == "compaction"]
    leads = [c for c in calls if c.role == "lead"]
    assert any(SUMMARY in str(c.request.messages) for c in leads)


@pytest.mark.parametrize("name", ["demo", "interrupted", "interrupted_tool", "scripted"])
def test_sessions_recorded_by_an_older_clew_are_rebuilt_exactly(name: str, tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / name, tmp_path / name)
    home = tmp_path / name
    with Runtime(home / "home", home / "project", read_only=True) as rt:
        for row in rt.store.list_sessions():
            calls = rt.session(row.session_id).model_calls()
            _exact(calls)
            assert {"value"} == {c.recorded_as for c in calls}
            if name == "interrupted":
                assert calls[-1].content is None and calls[-1].latency_ms is None


def test_a_session_on_postgresql_is_rebuilt_exactly(tmp_path: Path, pg_url: str) -> None:
    with Runtime(tmp_path / "home", tmp_path, store=pg_url) as rt:
        sid = _demo(rt)
        _exact(rt.session(sid).model_calls())
        fork = rt.session(sid).rerun(model=demo_model(3), tools=demo_tools(rt.project_dir))
        calls = rt.session(fork.session_id).model_calls()
        _exact(calls)
        assert all(c.served for c in calls)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_store_reads_the_events_of_a_few_types_as_a_filter_of_the_whole_log(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = request.getfixturevalue("pg_url") if backend == "postgres" else None
    with Runtime(tmp_path / "home", tmp_path, store=store) as rt:
        sid = _demo(rt)
        wanted = ("model_responded", "tool_call_started", "run_ended")
        every = [e for e in rt.store.iter_events(sid) if e.event_type in wanted]
        assert every == rt.store.read_events_of_types(sid, wanted)
        assert [] == rt.store.read_events_of_types(sid, ())
