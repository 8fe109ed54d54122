"""The waterfall and the call view: its endpoints (one row per run, one bar per model and
tool call, recorded durations) and the page in headless Chromium (bars as wide as their
durations, a click showing what the model was sent, markup in a message shown as text)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _ui_helpers import MARKUP, Home, markup_model, pay_model, pay_tools, waiting_session
from starlette.testclient import TestClient

from actors import Runtime
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.documents.calls import waterfall_doc
from actors.orchestration.approvals import Approve
from actors.ui import UiServer
from eventlog.events import (
    ModelRequested,
    ModelResponded,
    RunEnded,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
)
from eventlog.records import AppendRequest


def _ms(a: str, b: str) -> float:
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds() * 1000


def _recorded(rt: Runtime, sid: str) -> tuple[set[str], list[float], list[float]]:
    """The session's runs, and its model and tool calls' recorded durations."""
    events = rt.store.read_events(sid)
    runs = {e.run_id for e in events if isinstance(e.event, RunStarted)}
    starts: dict[Any, str] = {}
    model: list[float] = []
    tool: list[float] = []
    for e in events:
        match e.event:
            case ModelRequested(call_index=i, attempt=n):
                starts[(e.run_id, i, n)] = e.created_at
            case ModelResponded(call_index=i, attempt=n):
                model.append(_ms(starts[(e.run_id, i, n)], e.created_at))
            case ToolCallStarted(tool_call_id=c):
                starts[c] = e.created_at
            case ToolCallFinished(tool_call_id=c):
                tool.append(_ms(starts[c], e.created_at))
    return {r for r in runs if r}, model, tool


def test_the_waterfall_has_a_row_per_run_and_a_bar_per_call_of_recorded_length(
    client: TestClient, shared: Home, shared_rt: Runtime
) -> None:
    doc = client.get(f"/api/sessions/{shared.demo}/waterfall").json()
    runs, model, tool = _recorded(shared_rt, shared.demo)
    assert {r.removeprefix(f"{shared.demo}:") for r in runs} == {r["run"] for r in doc["runs"]}
    bars = [b for r in doc["runs"] for b in r["bars"]]

    def took(kind: str) -> list[float]:
        return sorted(round(b["end_ms"] - b["start_ms"], 3) for b in bars if b["kind"] == kind)

    assert sorted(round(m, 3) for m in model) == took("model")
    assert sorted(round(t, 3) for t in tool) == took("tool")
    assert len(model) == doc["calls"] == 9
    assert all(0 <= r["start_ms"] <= r["end_ms"] <= doc["duration_ms"] for r in doc["runs"])
    lookup = next(b for b in bars if b["kind"] == "tool" and b["label"] == "lookup")
    assert "topic" in lookup["arguments"] and "fact 1" in lookup["result"]


def test_the_call_view_is_the_call_whole_with_the_diff_to_the_previous(
    client: TestClient, shared: Home, shared_rt: Runtime
) -> None:
    calls = shared_rt.session(shared.demo).model_calls()
    second = [c for c in calls if (c.agent_id or "").endswith("/w1")][1]
    doc = client.get(f"/api/sessions/{shared.demo}/call", params={"n": second.index}).json()
    assert (second.index, True) == (doc["index"], doc["hash_matches"])
    assert len(second.request.messages) == len(doc["request"]["messages"])
    assert 2 == len(doc["diff"]["added"])
    assert 404 == client.get(f"/api/sessions/{shared.demo}/call", params={"n": 99}).status_code
    assert 400 == client.get(f"/api/sessions/{shared.demo}/call", params={"n": "x"}).status_code


# --- in the browser ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A served home with one session whose prompt and reply are markup."""
    root = tmp_path_factory.mktemp("wf")
    rt = Runtime(root / "home", root)
    sid = rt.new_session().id
    rt.session(sid).run(MARKUP, model=markup_model())
    server = UiServer(rt, port=0).start()
    yield server.url, sid
    server.stop()
    rt.close()


def test_the_waterfall_draws_each_call_as_wide_as_its_recorded_duration(
    page: Any, shared_url: str, shared: Home, shared_rt: Runtime
) -> None:
    page.goto(f"{shared_url}#/s/{shared.demo}")
    page.wait_for_selector("#waterfall .wf-bar.k-model")
    runs, model, tool = _recorded(shared_rt, shared.demo)
    rows = page.locator("#waterfall .wf-row").evaluate_all("rs => rs.map(r => r.dataset.run)")
    assert sorted(r.removeprefix(f"{shared.demo}:") for r in runs) == sorted(rows)
    assert len(model) == page.locator("#waterfall .wf-bar.k-model").count()
    assert len(tool) == page.locator("#waterfall .wf-bar.k-tool").count()
    bars = page.locator("#waterfall .wf-bar").evaluate_all(
        """bs => bs.map(b => [b.dataset.kind, Number(b.dataset.ms),
            b.getBoundingClientRect().width, b.parentElement.getBoundingClientRect().width])"""
    )
    duration = waterfall_doc(shared_rt, shared.demo)["duration_ms"]
    for _kind, took, width, track in bars:
        assert abs(width - track * took / duration) < 0.75, (took, width, track)
    widths = sorted((took, width) for kind, took, width, _ in bars if kind == "model")
    assert [w for _, w in widths] == sorted(w for _, w in widths)  # longer is wider
    assert sorted(round(m, 3) for m in model) == sorted(round(t, 3) for t, _ in widths)


def test_clicking_a_call_shows_its_last_user_message_and_a_tool_its_result(
    page: Any, shared_url: str, shared: Home, shared_rt: Runtime
) -> None:
    calls = shared_rt.session(shared.demo).model_calls()
    lead = next(c for c in calls if c.role == "lead")
    user = [m for m in lead.request.messages if m.role == "user"][-1]
    text = next(b.text for b in user.content if hasattr(b, "text"))
    page.goto(f"{shared_url}#/s/{shared.demo}")
    page.locator(f'#waterfall .wf-bar.k-model[data-call="{lead.index}"]').click()
    page.wait_for_selector("#call .last-user pre.text")
    assert text == page.locator("#call .last-user pre.text").last.inner_text()
    assert f"call {lead.index}" in page.locator("#call h3").inner_text()
    page.locator("#waterfall .wf-bar.k-tool").first.click()
    page.wait_for_selector("#call pre.tool-result")
    assert "topic" in page.locator("#call pre.tool-args").inner_text()


def test_markup_inside_a_message_is_shown_as_text(page: Any, marked: tuple[str, str]) -> None:
    url, sid = marked
    page.goto(f"{url}#/s/{sid}")
    page.locator('#waterfall .wf-bar.k-model[data-call="1"]').click()
    page.wait_for_selector("#call .last-user pre.text")
    assert MARKUP == page.locator("#call .last-user pre.text").inner_text()
    page.locator('#waterfall .wf-bar.k-model[data-call="2"]').click()
    page.wait_for_selector("#call .response pre.text")
    assert MARKUP == page.locator("#call .response pre.text").inner_text()
    assert 0 == page.locator("#app script, #app img").count()
    assert page.evaluate("window.__clew_pwned") is None


def _many_runs(rt: Runtime, runs: int, calls: int) -> str:
    """A session of ``runs`` worker-less runs of ``calls`` model calls each, 1 ms apart."""
    sid = rt.new_session().id
    t0 = datetime.fromisoformat(rt.clock.now())
    tick = iter(range(1, 10**9))
    requests = []

    def add(event: Any, run: str) -> None:
        at = (t0 + timedelta(milliseconds=next(tick))).isoformat()
        requests.append(
            AppendRequest(
                session_id=sid, event=event, created_at=at, agent_id=f"{sid}:brain", run_id=run
            )
        )

    for r in range(1, runs + 1):
        run = f"{sid}:brain:r{r}"
        add(RunStarted(run_id=run, agent_id=f"{sid}:brain", phase="primary"), run)
        for i in range(1, calls + 1):
            add(ModelRequested(call_index=i, model="m", role="lead", request_hash="h"), run)
            add(ModelResponded(call_index=i, model="m", content=[]), run)
        add(RunEnded(run_id=run, status="completed", end_reason="completed"), run)
    for f in [rt.writer.submit(q) for q in requests]:
        f.get(timeout=120)
    return sid


def test_a_session_of_2000_calls_keeps_only_the_rows_in_view_in_the_page(
    page: Any, tmp_path: Path
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = _many_runs(rt, runs=500, calls=4)
        server = UiServer(rt, port=0).start()
        try:
            page.goto(f"{server.url}#/s/{sid}")
            page.wait_for_selector("#waterfall .wf-bar.k-model")
            assert "500 runs · 2,000 model calls" in page.locator("#wf-line").inner_text()
            shown = page.locator("#waterfall .wf-row").count()
            assert 0 < shown < 60
            page.locator("#waterfall").evaluate("w => { w.scrollTop = w.scrollHeight; }")
            page.wait_for_selector('#waterfall .wf-row[data-run="brain:r500"]')
            assert 0 == page.locator('#waterfall .wf-row[data-run="brain:r1"]').count()
            page.locator('#waterfall .wf-row[data-run="brain:r500"] .wf-bar').last.click()
            page.wait_for_selector("#call h3")
            assert "call 2000" in page.locator("#call h3").inner_text()
        finally:
            server.stop()


def test_a_live_run_extends_the_waterfall_as_it_goes(page: Any, tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = rt.new_session().id
        server = UiServer(rt, port=0).start()
        try:
            page.goto(f"{server.url}#/s/{sid}")
            page.wait_for_selector("#conn.on")
            assert 0 == page.locator("#waterfall .wf-row").count()
            handle = rt.start(
                sid, DEMO_PROMPT, model=demo_model(3, delay_ms=50), tools=demo_tools(tmp_path)
            )
            page.wait_for_selector('#waterfall .wf-row[data-run="brain:r1/w1:r1"]')
            assert "completed" == handle.result().status
            page.wait_for_selector('#waterfall .wf-bar.k-model[data-call="9"]')
            page.wait_for_selector('#waterfall .wf-row[data-run="brain:r1/review:r1"]')
            assert 9 == page.locator("#waterfall .wf-bar.k-model").count()
        finally:
            server.stop()


def test_an_approval_and_the_run_s_wait_are_bars_of_their_own(tmp_path: Path) -> None:
    paid: list[int] = []
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, paid)
        s = rt.session(sid)
        (pending,) = s.pending()
        s.decide(pending.tool_call_id, Approve())
        s.resume_waiting(model=pay_model(), tools=pay_tools(paid))
        doc = waterfall_doc(rt, sid)
    bars = {(b["kind"], b.get("detail")) for r in doc["runs"] for b in r["bars"]}
    assert ("approval", "approve") in bars
    waits = [b for r in doc["runs"] for b in r["bars"] if b["kind"] == "wait"]
    assert waits and all(b["end_ms"] is not None for b in waits)
    assert [42] == paid
