"""Screenshots of the web inspector for the docs: ``docs/img/ui-*.png``.

Run from the checkout: ``PYTHONPATH=. python benchmarks/ui_screenshots.py`` (needs
``clew[ui]``, Playwright and Debian's ``/usr/bin/chromium``). It records the demo (three
workers, one depending on another) and a session waiting for an approval in a scratch
home, serves them, and saves the sessions list, the demo's session page and the
approval panel; and the waterfall of a demo whose model calls take 40 ms, with one call
opened (``… ui_screenshots.py waterfall`` makes that one only). Not a benchmark: it lives
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

from actors.runtime.runtime import Runtime  # noqa: E402
from actors.ui import UiServer  # noqa: E402

OUT = ROOT / "docs" / "img"


def main(only: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, Runtime(Path(tmp) / "home", tmp) as rt:
        slow = demo_session(rt, delay_ms=40)
        demo = demo_session(rt) if not only else ""
        waiting = waiting_session(rt, []) if not only else ""
        server = UiServer(rt, port=0).start()
        try:
            if not only:
                shoot(server.url, demo, waiting)
            shoot_waterfall(server.url, slow)
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


if __name__ == "__main__":
    main(sys.argv[1:])
