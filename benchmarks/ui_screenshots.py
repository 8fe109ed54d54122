"""Screenshots of the web inspector for the docs: ``docs/img/ui-*.png``.

Run from the checkout: ``PYTHONPATH=. python benchmarks/ui_screenshots.py`` (needs
``clew[ui]``, Playwright and Debian's ``/usr/bin/chromium``). It records the demo (three
workers, one depending on another) and a session waiting for an approval in a scratch
home, serves them, and saves the sessions list, the demo's session page and the
approval panel; the waterfall of a demo whose model calls take 40 ms, with one call
opened; and the page of a re-drive of three sessions an outage failed (``…
ui_screenshots.py waterfall redrive`` makes only those named). Not a benchmark: it lives
here with the other scripts that drive the tree from outside.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench_ui import ARGS, CHROMIUM
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from _ui_helpers import demo_session, waiting_session  # noqa: E402

from actors.demo import DEMO_PROMPT, demo_model, demo_tools  # noqa: E402
from actors.models.protocol import ModelRequest, ModelResponse  # noqa: E402
from actors.runtime.redrive import RedriveApp, plan_session, redrive  # noqa: E402
from actors.runtime.runtime import Runtime  # noqa: E402
from actors.ui import UiServer  # noqa: E402
from eventlog.errors import ModelError  # noqa: E402

OUT = ROOT / "docs" / "img"


def main(only: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, Runtime(Path(tmp) / "home", tmp) as rt:
        slow = demo_session(rt, delay_ms=40) if not only or "waterfall" in only else ""
        demo = demo_session(rt) if not only else ""
        waiting = waiting_session(rt, []) if not only else ""
        rid = redriven(rt, Path(tmp)) if not only or "redrive" in only else ""
        server = UiServer(rt, port=0).start()
        try:
            if not only:
                shoot(server.url, demo, waiting)
            if slow:
                shoot_waterfall(server.url, slow)
            if rid:
                shoot_redrive(server.url, rid)
        finally:
            server.stop()
    print(f"saved {', '.join(sorted(p.name for p in OUT.glob('ui-*.png')))} in {OUT}")


def shoot(url: str, demo: str, waiting: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 760})
        page.goto(url)
        page.wait_for_selector("#sessions tr[data-sid]")
        page.screenshot(path=OUT / "ui-sessions.png")
        page.goto(f"{url}#/s/{demo}")
        page.wait_for_selector("#tree .node.active .excerpt.ready")
        page.locator('#tree .node[data-node="brain:r1/w1:r1:n1"] .fold').click()
        page.locator('#tree .node[data-node="brain:r1/w1:r1:n2"]').click()
        page.wait_for_selector("#node .block")
        page.wait_for_selector("svg.dag .task")
        page.wait_for_selector("svg.chart")
        page.screenshot(path=OUT / "ui-session.png", full_page=False)
        page.locator("#dag-panel").scroll_into_view_if_needed()
        page.locator("#dag-panel").screenshot(path=OUT / "ui-dag.png")
        page.locator("#usage-panel").screenshot(path=OUT / "ui-usage.png")
        page.goto(f"{url}#/s/{waiting}")
        page.wait_for_selector("#waits .pending")
        page.locator("#waits").screenshot(path=OUT / "ui-approval.png")
        browser.close()


def shoot_waterfall(url: str, demo: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"{url}#/s/{demo}")
        page.wait_for_selector("#waterfall .wf-bar.k-model")
        page.locator('#waterfall .wf-bar.k-model[data-call="3"]').click()
        page.wait_for_selector("#call .last-user")
        page.locator("#waterfall-panel").scroll_into_view_if_needed()
        page.locator("#waterfall-panel").screenshot(path=OUT / "ui-waterfall.png")
        browser.close()


class _Outage:
    """The demo's model behind a provider that answers 503 while ``down``."""

    def __init__(self) -> None:
        self.inner, self.down = demo_model(2), True
        self.name = self.inner.name

    def complete(self, request: ModelRequest) -> ModelResponse:
        if self.down and request.role != "router":
            raise ModelError("HTTP 503: Service Unavailable", status=503, error_type="HTTP503")
        return self.inner.complete(request)


def redriven(rt: Runtime, project: Path) -> str:
    """Three sessions an outage failed, re-driven once it is over; the re-drive's id."""
    model, tools = _Outage(), demo_tools(project)
    sids = [rt.new_session().id for _ in range(3)]
    for sid in sids:
        rt.session(sid).run(DEMO_PROMPT, model=model, tools=tools)
    model.down = False
    plans = [plan_session(rt, sid) for sid in sids]
    return redrive(rt, plans, RedriveApp(model=model, tools=tools)).redrive_id


def shoot_redrive(url: str, rid: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 320})
        page.goto(f"{url}#/r/{rid}")
        page.wait_for_selector("#redrive-sessions tbody tr")
        page.screenshot(path=OUT / "ui-redrive.png")
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
