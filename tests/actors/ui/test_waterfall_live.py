"""The waterfall's time axis (labelled ticks at millisecond and second scales) and its
live updates: a page fetches the whole document once, then only what came after the last
event it drew (``/waterfall?after=SEQ``), and adds it."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import copy
import itertools
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from _ui_helpers import Home

from actors import Runtime
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.documents.calls import waterfall_doc, waterfall_since
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


class Clocked:
    """Appends events to one session, ``step_ms`` apart on a recorded clock."""

    def __init__(self, rt: Runtime, step_ms: float = 1.0) -> None:
        self.rt = rt
        self.sid = rt.new_session().id
        self.t0 = datetime.fromisoformat(rt.clock.now())
        self.n = 0
        self.step = step_ms

    def add(self, *events: tuple[Any, str]) -> None:
        futures = []
        for event, run in events:
            self.n += 1
            at = (self.t0 + timedelta(milliseconds=self.step * self.n)).isoformat()
            futures.append(self.rt.writer.submit(AppendRequest(
                session_id=self.sid, event=event, created_at=at,
                agent_id=f"{self.sid}:brain", run_id=run,
            )))  # fmt: skip
        for f in futures:
            f.get(timeout=120)


def _merged(doc: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with ``delta`` added the way the page adds it (waterfall.js, extend)."""
    out = copy.deepcopy(doc)
    rows = {r["run"]: r for r in out["runs"]}
    open_bars = {b["key"]: b for r in out["runs"] for b in r["bars"] if "key" in b}
    for r in delta["runs"]:
        known = rows.get(r["run"])
        if known is None:
            out["runs"].append(r)
            rows[r["run"]] = r
        else:
            known["bars"] += r["bars"]
            known["roles"] += [x for x in r["roles"] if x not in known["roles"]]
            known["phase"] = r["phase"] or known["phase"]
            if r["end_ms"] is not None:
                known["end_ms"], known["status"] = r["end_ms"], r["status"]
                delta["ends"].append({"key": f"{r['run']}|cancel", "end_ms": r["end_ms"]})
        open_bars.update({b["key"]: b for b in r["bars"] if "key" in b})
    for e in delta["ends"]:
        bar = open_bars.pop(e["key"], None)
        if bar is not None:
            bar.update(e)
            del bar["key"]
    out["runs"].sort(key=lambda r: r["start_ms"])
    out.update(calls=delta["calls"], last_seq=delta["last_seq"])
    out["duration_ms"] = delta["duration_ms"]
    return out


def test_the_update_after_a_cursor_holds_what_came_since_and_ends_the_open_bars(
    tmp_path: Path,
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        s = Clocked(rt)
        r1, r2 = f"{s.sid}:brain:r1", f"{s.sid}:brain:r2"
        s.add(
            (RunStarted(run_id=r1, agent_id=f"{s.sid}:brain", phase="primary"), r1),
            (ModelRequested(call_index=1, model="m", role="lead", request_hash="h"), r1),
            (ModelResponded(call_index=1, model="m", content=[]), r1),
            (ModelRequested(call_index=2, model="m", role="lead", request_hash="h"), r1),
            (ToolCallStarted(tool_call_id="c1", tool_name="lookup", arguments={"q": 1}), r1),
        )
        before = waterfall_doc(rt, s.sid)
        keys = {b["key"] for r in before["runs"] for b in r["bars"] if "key" in b}
        assert {"brain:r1|call|2|1", "brain:r1|tool|c1"} == keys  # the open bars
        s.add(
            (ToolCallFinished(tool_call_id="c1", tool_name="lookup", content=[]), r1),
            (ModelResponded(call_index=2, model="m", content=[]), r1),
            (RunEnded(run_id=r1, status="completed", end_reason="completed"), r1),
            (RunStarted(run_id=r2, agent_id=f"{s.sid}:brain", phase="primary"), r2),
            (ModelRequested(call_index=1, model="m", role="lead", request_hash="h"), r2),
        )

        delta = waterfall_since(rt, s.sid, before["last_seq"], before["calls"])
        after = waterfall_doc(rt, s.sid)

        assert keys == {e["key"] for e in delta["ends"]}  # the tool, the call: begun before
        assert [3] == [b["call"] for r in delta["runs"] for b in r["bars"]]  # numbered on
        assert after == _merged(before, delta)
        nothing = waterfall_since(rt, s.sid, after["last_seq"], after["calls"])
        assert ([], [], None) == (nothing["runs"], nothing["ends"], nothing["duration_ms"])
        assert after["last_seq"] == nothing["last_seq"]


def test_the_update_from_the_start_is_the_whole_waterfall(shared: Home, shared_rt: Runtime) -> None:
    whole = waterfall_doc(shared_rt, shared.demo)
    since = waterfall_since(shared_rt, shared.demo, 0, 0)
    assert [] == since.pop("ends")
    assert whole == since


# --- in the browser ---------------------------------------------------------------------


def _axis(page: Any) -> list[tuple[float, str, float, float, float, float]]:
    """Each tick: its ms, its label, its centre and extent, and the track's left and width."""
    out: list[tuple[float, str, float, float, float, float]] = page.locator(
        "#wf-axis .wf-tick"
    ).evaluate_all(
        """ts => ts.map(t => { const r = t.getBoundingClientRect(),
              a = t.parentElement.getBoundingClientRect();
              const x = t.classList.contains('first') ? r.left : r.left + r.width / 2;
              return [Number(t.dataset.ms), t.textContent, x, r.right, a.left, a.width]; })"""
    )
    return out


def _check_axis(page: Any, duration: float, unit: str) -> list[str]:
    marks = _axis(page)
    assert 3 <= len(marks) <= 9, marks
    assert 0 == marks[0][0]
    right = -1.0
    for v, label, x, end, left, width in marks:
        assert abs(x - (left + width * v / duration)) < 1.0, (v, label)  # placed at its time
        if v:
            assert label.endswith(unit), label
        assert x - (end - x if v else 0) > right, marks  # labels never overlap
        right = end
    steps = {round(b[0] - a[0], 6) for a, b in itertools.pairwise(marks)}
    assert 1 == len(steps)  # even spacing
    return [label for _, label, *_ in marks]


def test_the_axis_is_labelled_in_ms_below_a_second_and_in_s_above(
    page: Any, tmp_path: Path
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        short, medium, long = Clocked(rt, 1.0), Clocked(rt, 20.0), Clocked(rt, 100.0)
        for s in (short, medium, long):
            run = f"{s.sid}:brain:r1"
            s.add((RunStarted(run_id=run, agent_id=f"{s.sid}:brain", phase="primary"), run))
            for i in range(1, 31):
                s.add(
                    (ModelRequested(call_index=i, model="m", role="lead", request_hash="h"), run),
                    (ModelResponded(call_index=i, model="m", content=[]), run),
                )
            s.add((RunEnded(run_id=run, status="completed", end_reason="completed"), run))
        server = UiServer(rt, port=0).start()
        try:
            for s, unit in ((short, " ms"), (medium, " s"), (long, " s")):
                page.goto(f"{server.url}#/s/{s.sid}")
                page.wait_for_selector("#waterfall .wf-bar.k-model")
                duration = waterfall_doc(rt, s.sid)["duration_ms"]
                labels = _check_axis(page, duration, unit)
                want = {short: "20 ms", medium: "0.4 s", long: "2 s"}[s]
                assert want in labels, labels  # 61 ms: each 10 ms; 1.22 s: 0.2 s; 6.1 s: 1 s
        finally:
            server.stop()


def test_a_live_page_fetches_only_what_came_after_the_last_event_drawn(
    page: Any, tmp_path: Path
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = rt.new_session().id
        server = UiServer(rt, port=0).start()
        asked: list[str] = []
        page.on(
            "request",
            lambda r: (
                asked.append(r.url)
                if "/waterfall?" in r.url or r.url.endswith("/waterfall")
                else None
            ),
        )
        try:
            page.goto(f"{server.url}#/s/{sid}")
            page.wait_for_selector("#conn.on")
            handle = rt.start(
                sid, DEMO_PROMPT, model=demo_model(3, delay_ms=50), tools=demo_tools(tmp_path)
            )
            assert "completed" == handle.result().status
            page.wait_for_selector('#waterfall .wf-row[data-run="brain:r1/review:r1"]')
            page.wait_for_function(
                "() => !document.querySelector('#waterfall .wf-bar.open')"
                " && document.querySelectorAll('#waterfall .wf-bar.k-model').length === 9"
            )
            live = _bars(page)
            page.reload()
            page.wait_for_selector('#waterfall .wf-bar.k-model[data-call="9"]')
            fresh = _bars(page)
        finally:
            server.stop()
    assert fresh == live  # what the updates drew is what a fresh load draws
    whole = [u for u in asked if "after=" not in u]
    assert 2 == len(whole)  # the first load and the reload; every update was a delta
    assert 1 <= len(asked) - len(whole)


def _bars(page: Any) -> list[tuple[str, str, str, str]]:
    out: list[tuple[str, str, str, str]] = page.locator("#waterfall .wf-bar").evaluate_all(
        "bs => bs.map(b => [b.closest('.wf-row').dataset.run, b.dataset.kind,"
        " b.dataset.call, Number(b.dataset.ms).toFixed(3)])"
    )
    return sorted(out)
