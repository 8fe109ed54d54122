"""``clew ui`` shows re-drives: the home's list under the sessions list, one re-drive's
page (each session's outcome, the calls served and asked live, its status now) and, on a
re-driven session's page, the re-drive that continued it — in headless Chromium; a
failure's text holding markup is shown as text."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _ui_helpers import CSRF, MARKUP
from starlette.testclient import TestClient

from actors import Runtime
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.models.protocol import Model, ModelRequest, ModelResponse
from actors.runtime.redrive import RedriveApp, plan_session, redrive
from actors.ui import UiServer, create_app
from eventlog.errors import ModelError


class Flaky:
    """A model whose provider is down (its error message markup) until it is not."""

    def __init__(self, inner: Model) -> None:
        self.name = inner.name
        self._inner = inner
        self.down = True

    def complete(self, request: ModelRequest) -> ModelResponse:
        if self.down:
            raise ModelError(f"503 {MARKUP}", status=503, error_type="HTTP503")
        return self._inner.complete(request)


@pytest.fixture(scope="module")
def redriven(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, str, list[str]]]:
    """A home where three sessions failed in an outage and one re-drive continued them
    (the third's provider still down: it failed again); a fourth session, never failed,
    is in no re-drive."""
    root = tmp_path_factory.mktemp("redrives")
    rt = Runtime(root / "home", root)
    model, tools = Flaky(demo_model(2)), demo_tools(root)
    models = (model, model, Flaky(demo_model(2)))  # the third stays down
    sids = []
    for m in models:
        s = rt.new_session()
        assert "failed" == s.run(DEMO_PROMPT, model=m, tools=tools).status
        sids.append(s.id)
    rt.new_session().run(DEMO_PROMPT, model=demo_model(2), tools=tools)
    model.down = False
    apps = {sid: RedriveApp(model=m, tools=tools) for sid, m in zip(sids, models, strict=True)}
    report = redrive(rt, [plan_session(rt, sid) for sid in sids], apps.__getitem__)
    assert (2, 1) == (report.counts()["completed"], report.counts()["failed again"])
    yield rt, report.redrive_id, sids
    rt.close()


def test_the_redrive_endpoints_list_them_and_name_each_session_s_outcome(
    redriven: tuple[Runtime, str, list[str]],
) -> None:
    rt, rid, sids = redriven
    with TestClient(create_app(rt, csrf=CSRF, hosts=["testserver"])) as client:
        [line] = client.get("/api/redrives").json()["redrives"]
        one = client.get(f"/api/redrives/{rid}").json()
        mine = client.get("/api/redrives", params={"session": sids[0]}).json()["redrives"]
        other = rt.store.list_sessions()
        untouched = next(r.session_id for r in other if r.session_id not in sids)
        none = client.get("/api/redrives", params={"session": untouched}).json()["redrives"]
        missing = client.get("/api/redrives/redrive_20000101_000000_0000")
        bad = client.get("/api/redrives", params={"session": "../x"})
        head = client.get(f"/api/sessions/{sids[0]}").json()
    assert (rid, 3, 2) == (line["redrive_id"], line["sessions"], line["counts"]["completed"])
    assert sids == [r["session_id"] for r in one["results"]]
    again = ("failed again", "failed", "brain:r2")
    assert [("completed", "completed", "brain:r2")] * 2 + [again] == [
        (r["outcome"], r["status"], r["run"]) for r in one["results"]
    ]
    assert MARKUP in one["results"][2]["detail"]
    assert [(rid, "completed", "brain:r2")] == [
        (r["redrive_id"], r["result"]["outcome"], r["result"]["run"]) for r in mine
    ]
    assert ([], 404, 400) == (none, missing.status_code, bad.status_code)
    assert [None, rid] == [r["redrive"] for r in head["runs_list"] if r["main"]]


def test_the_inspector_shows_a_redrive_and_its_sessions(
    page: Any, redriven: tuple[Runtime, str, list[str]]
) -> None:
    rt, rid, sids = redriven
    server = UiServer(rt, port=0).start()
    try:
        page.goto(f"{server.url}#/")
        page.wait_for_selector(f'#redrives tr[data-redrive="{rid}"]')
        row = page.locator(f'#redrives tr[data-redrive="{rid}"]').inner_text()
        assert "2 completed, 1 failed again" in row
        page.locator(f'#redrives a[href="#/r/{rid}"]').click()
        page.wait_for_selector("#redrive-sessions tbody tr")
        assert rid in page.locator("h1").inner_text()
        summary = page.locator("#redrive-summary").inner_text()
        assert "3 sessions: 2 completed, 1 failed again" in summary
        rows = page.locator("#redrive-sessions tbody tr")
        assert sids == rows.evaluate_all("rs => rs.map(r => r.dataset.sid)")
        assert ["completed", "completed", "failed again"] == page.locator(
            "#redrive-sessions td.outcome"
        ).all_inner_texts()
        assert 2 == page.locator("#redrive-sessions .badge.st-completed").count()
        detail = page.locator(f'#redrive-sessions tr[data-sid="{sids[2]}"] td.detail')
        assert MARKUP in detail.inner_text()  # shown as text
        assert 0 == page.locator("#app script, #app img").count()
        page.locator(f'#redrive-sessions a[href="#/s/{sids[0]}"]').click()
        page.wait_for_selector("#redriven a")
        line = page.locator("#redriven").inner_text()
        assert f"re-driven by {rid} (retry: completed, run brain:r2)" == line
        page.locator("#redriven a").click()
        page.wait_for_selector("#redrive-sessions")
        assert 0 == page.locator("#app script, #app img").count()
        assert page.evaluate("window.__clew_pwned") is None
    finally:
        server.stop()


def test_a_home_without_redrives_shows_no_redrive_section(page: Any, tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        rt.new_session().run(DEMO_PROMPT, model=demo_model(2), tools=demo_tools(tmp_path))
        server = UiServer(rt, port=0).start()
        try:
            page.goto(f"{server.url}#/")
            page.wait_for_selector("#sessions tbody tr[data-sid]")
            assert 0 == page.locator("#redrives").count()
            page.goto(f"{server.url}#/r/redrive_20000101_000000_0000")
            page.wait_for_selector("#app .error")
            assert "not found" in page.locator("#app .error").inner_text()
        finally:
            server.stop()
