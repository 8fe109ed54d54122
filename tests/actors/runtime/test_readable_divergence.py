"""A replay's divergence report names the first divergence by its changed text and folds
its consequences; with live tools, idempotent tools run again and are compared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.cli.render import replay_lines
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.errors import UsageError
from actors.models.tools import FunctionTool, Tool
from actors.runtime.runtime import Runtime
from eventlog.clock import ManualClock
from eventlog.events import ModelRequested, ToolCallFinished


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, str, Path]]:
    """One recorded demo session (3 workers), shared: replays never write."""
    tmp = tmp_path_factory.mktemp("demo")
    rt = Runtime(tmp / "home", tmp / "proj", clock=ManualClock())
    session = rt.new_session()
    out = session.run(DEMO_PROMPT, model=demo_model(3), tools=demo_tools(tmp / "proj"))
    assert "completed" == out.status
    try:
        yield rt, session.id, tmp / "proj"
    finally:
        rt.close()


def _first_request_seq(rt: Runtime, sid: str, run_suffix: str) -> int:
    return min(
        e.seq
        for e in rt.store.read_events(sid)
        if isinstance(e.event, ModelRequested) and e.run_id and e.run_id.endswith(run_suffix)
    )


def test_a_changed_tool_description_shows_the_description_text_not_only_the_hash(
    demo: tuple[Runtime, str, Path],
) -> None:
    rt, sid, proj = demo
    tools = demo_tools(proj)
    tools[0].description = "Look up facts (from the cache)."
    report = rt.replay(sid, tools=tools)
    first = report.first_divergence
    assert first is not None
    assert ("model_requested", "tools[lookup].description") == (first.event_type, first.field)
    assert [
        "@@ -1 +1 @@",
        "-Look up facts about a topic (read-only, safe to repeat).",
        "+Look up facts (from the cache).",
    ] == first.diff
    # the earliest request that saw the tool: the first worker's
    assert _first_request_seq(rt, sid, "/w1:r1") == first.seq
    assert "tools[lookup].description changed: -Look up facts about a topic" in report.summary()
    lines = replay_lines(report)
    assert "  tools[lookup].description changed:" in lines
    assert "    +Look up facts (from the cache)." in lines


def test_a_renamed_model_is_one_divergence_and_a_folded_count_of_what_was_not_reached(
    demo: tuple[Runtime, str, Path],
) -> None:
    rt, sid, _ = demo
    model = demo_model(3)
    model.name = "scripted:renamed"
    report = rt.replay(sid, model=model)
    first, then = report.first_divergence, report.consequences
    assert first is not None and then is not None
    brain = f"{sid}:brain:r1"
    assert (brain, "model", "scripted:demo", "scripted:renamed") == (
        first.run_id,
        first.field,
        first.recorded,
        first.current,
    )
    assert _first_request_seq(rt, sid, ":brain:r1") == first.seq
    events = rt.store.read_events(sid)
    after = [e for e in events if e.run_id == brain and e.seq > first.seq]
    workers = [e for e in events if e.run_id and e.run_id.startswith(f"{brain}/")]
    assert len(after) + len(workers) == then.count
    assert 4 == len(then.runs_not_reached)  # three workers and the review
    assert [] == then.other_divergences
    summary = report.summary()
    assert summary.endswith(f"and {then.count} later events not reached (4 runs never reached)")
    assert 1 == summary.count("scripted:renamed")
    # the same structure in --json, under stable keys
    doc = report.to_json()
    assert {"seq", "run_id", "run_seq", "event_type", "current_type", "field", "recorded"} <= set(
        doc["first_divergence"]
    )
    assert {"current", "diff", "fields"} <= set(doc["first_divergence"])
    assert then.count == doc["consequences"]["count"]


def test_an_identical_replay_has_no_first_divergence(demo: tuple[Runtime, str, Path]) -> None:
    rt, sid, _ = demo
    report = rt.replay(sid)
    assert report.identical
    assert (None, None) == (report.first_divergence, report.consequences)


# --- live tools ---------------------------------------------------------------------------


def _counting(tools: list[Tool], calls: dict[str, int], lookup: Any = None) -> list[Tool]:
    """Today's tools with the same specs, counting their calls; ``lookup`` replaces lookup's."""
    out: list[Tool] = []
    for t in tools:
        inner = lookup if (lookup is not None and t.name == "lookup") else t.call

        def call(args: Any, *, _inner: Any = inner, _name: str = t.name) -> Any:
            calls[_name] = calls.get(_name, 0) + 1
            return _inner(args)

        out.append(
            FunctionTool(
                t.name, call, t.args_model, description=t.description, idempotent=t.idempotent
            )
        )
    return out


def test_live_tools_run_the_idempotent_tool_again_and_never_the_other_one(
    demo: tuple[Runtime, str, Path],
) -> None:
    rt, sid, proj = demo
    calls: dict[str, int] = {}
    recorded = {
        e.event.tool_name
        for e in rt.store.read_events(sid)
        if isinstance(e.event, ToolCallFinished)
    }
    assert {"lookup", "save_note"} <= recorded
    report = rt.replay(sid, tools=_counting(demo_tools(proj), calls), live_tools=True)
    assert report.identical, report.summary()
    assert report.live_tools is not None
    assert calls.get("lookup", 0) == report.live_tools.ran > 0
    assert 0 == calls.get("save_note", 0)  # not idempotent: never run
    assert report.live_tools.not_run > 0


def test_a_changed_idempotent_tool_output_is_a_divergence_with_the_diff(
    demo: tuple[Runtime, str, Path],
) -> None:
    rt, sid, proj = demo
    calls: dict[str, int] = {}

    def lookup(args: Any) -> dict[str, Any]:
        return {"topic": args.topic, "facts": [f"{args.topic} fact {i}" for i in (1, 2, 4)]}

    before = rt.store.count_events(sid)
    report = rt.replay(sid, tools=_counting(demo_tools(proj), calls, lookup), live_tools=True)
    assert before == rt.store.count_events(sid)
    first = report.first_divergence
    assert first is not None
    assert ("tool_call_finished", "tool_call_finished") == (first.event_type, first.current_type)
    assert first.field is not None and first.field.endswith(".facts[2]")
    assert (str(first.recorded).endswith("fact 3"), str(first.current).endswith("fact 4")) == (
        True,
        True,
    )
    assert ["@@ -1 +1 @@"] == first.diff[:1]
    assert 0 == calls.get("save_note", 0)


def test_without_live_tools_a_changed_tool_output_still_replays_identically(
    demo: tuple[Runtime, str, Path],
) -> None:
    rt, sid, proj = demo
    calls: dict[str, int] = {}
    report = rt.replay(sid, tools=_counting(demo_tools(proj), calls, lambda a: "other"))
    assert report.identical
    assert {} == calls
    assert report.live_tools is None


def test_live_tools_without_tools_to_run_is_refused(demo: tuple[Runtime, str, Path]) -> None:
    rt, sid, _ = demo
    with pytest.raises(UsageError, match="live tools needs today"):
        rt.replay(sid, live_tools=True)
