"""The inspector end to end in headless Chromium (Debian's, driven by Playwright): the
sessions list, a demo session's tree, active path and DAG, a live run, an approval that
lets the run continue, markup shown as text, and the token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _ui_helpers import MARKUP, Home, big_session, pay_model, pay_tools, waiting_session

from actors import Runtime
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.ui import UiServer


#: Milliseconds a page may take to show what a test waits for (a bound, not a measure).
def test_the_sessions_list_opens_a_demo_session_its_tree_and_dag(
    page: Any, shared_url: str, shared: Home
) -> None:
    page.goto(shared_url)
    row = page.locator(f'#sessions tr[data-sid="{shared.demo}"]')
    assert "completed" == row.locator(".badge").inner_text()
    assert "Plan a small offline-first notes app" in row.locator(".title").inner_text()
    page.fill("#search", "say something")
    page.wait_for_selector(f'#sessions tr[data-sid="{shared.demo}"]', state="detached")
    assert [shared.markup] == page.locator("#sessions tr[data-sid]").evaluate_all(
        "rows => rows.map(r => r.dataset.sid)"
    )
    page.fill("#search", shared.demo[:12])
    page.click(f'#sessions tr[data-sid="{shared.demo}"] a')
    page.wait_for_selector("#tree .node.active")
    on_path = page.locator("#tree .node.on-path").evaluate_all("ns => ns.map(n => n.dataset.node)")
    assert [f"brain:r1:n{i}" for i in range(1, 7)] == on_path  # flow 2: board nodes too
    assert "brain:r1:n6" == page.locator("#tree .node.active").get_attribute("data-node")
    # A worker's chain starts folded; unfolding it shows its nodes.
    worker = page.locator('#tree .node[data-node="brain:r1/w1:r1:n1"]')
    assert "false" == worker.locator(".fold").get_attribute("aria-expanded")
    assert 0 == page.locator('#tree .node[data-node="brain:r1/w1:r1:n2"]').count()
    worker.locator(".fold").click()
    page.locator('#tree .node[data-node="brain:r1/w1:r1:n2"]').click()
    page.wait_for_selector("#node .block-tool.call")
    assert 2 == page.locator("#node .block-tool.call").count()
    tasks = page.locator("svg.dag .task").evaluate_all(
        "ts => ts.map(t => [t.dataset.task, t.dataset.status])"
    )
    assert {
        ("w1", "completed"),
        ("w2", "completed"),
        ("w3", "completed"),
        ("primary", "completed"),
        ("review", "completed"),
    } == {tuple(t) for t in tasks}
    assert 3 == page.locator("svg.chart").count()
    assert 100 == page.locator("#timeline tbody tr[data-seq]").count()
    page.click("#tl-next")
    page.wait_for_selector('#timeline tr[data-seq="101"]')
    page.select_option("#f-type", "run_ended")
    page.wait_for_selector('#timeline tr[data-seq="101"]', state="detached")
    types = page.locator("#timeline tbody tr[data-seq]").evaluate_all(
        "rs => rs.map(r => r.dataset.type)"
    )
    assert ["run_ended"] * 5 == types


def test_a_model_reply_holding_markup_is_shown_as_text(
    page: Any, shared_url: str, shared: Home
) -> None:
    page.goto(f"{shared_url}#/s/{shared.markup}")
    page.wait_for_selector("#tree .node.active .excerpt.ready")
    page.locator("#tree .node.active").click()
    text = page.locator("#node pre.text")
    assert MARKUP == text.inner_text()
    assert MARKUP[:40] in page.locator("#tree .node.active .excerpt").inner_text()
    assert 0 == page.locator("#app script, #app img").count()
    assert page.evaluate("window.__clew_pwned") is None


def test_a_live_run_shows_up_while_the_page_is_open(page: Any, tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = rt.new_session().id
        server = UiServer(rt, port=0).start()
        try:
            page.goto(f"{server.url}#/s/{sid}")
            page.wait_for_selector('#timeline tr[data-type="session_created"]')
            page.wait_for_selector("#conn.on")
            assert 1 == page.locator("#timeline tbody tr[data-seq]").count()
            handle = rt.start(
                sid, DEMO_PROMPT, model=demo_model(3, delay_ms=50), tools=demo_tools(tmp_path)
            )
            page.wait_for_selector('#timeline tr[data-seq="60"]')
            page.wait_for_selector("#head .badge.st-completed")
            assert "completed" == handle.result().status
            page.wait_for_selector('#tree .node.active[data-node="brain:r1:n6"]')
            page.wait_for_selector('svg.dag .task[data-task="review"][data-status="completed"]')
        finally:
            server.stop()


def test_approving_a_pending_call_lets_the_run_continue(page: Any, tmp_path: Path) -> None:
    paid: list[int] = []

    def resumer(rt: Runtime, sid: str) -> None:
        rt.resume(sid, model=pay_model(), tools=pay_tools(paid))

    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, paid)
        (pending,) = rt.pending(sid)
        server = UiServer(rt, port=0, resumer=resumer).start()
        try:
            page.goto(f"{server.url}#/s/{sid}")
            box = page.locator(f'#waits .pending[data-call="{pending.tool_call_id}"]')
            assert '"amount": 42' in box.locator("pre.args").inner_text()
            assert "waiting" == page.locator("#head .badge").inner_text()
            box.locator("button.approve").click()
            page.wait_for_selector("#head .badge.st-completed")
            assert "the run continues" in page.locator("#note").inner_text()
            assert 0 == page.locator("#waits .pending").count()
        finally:
            server.stop()
        assert [42] == paid
        assert "All paid." in [
            b.text for n in rt.store.read_nodes(sid) for b in n.content if hasattr(b, "text")
        ]


def test_a_tree_of_1500_nodes_keeps_only_the_rows_in_view(page: Any, tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = big_session(rt)
        server = UiServer(rt, port=0).start()
        try:
            page.goto(f"{server.url}#/s/{sid}")
            # The active node — the 1,500th of the chain — is in view at once.
            active = page.locator('#tree .node.active[data-node="brain:r1:n1500"]')
            active.wait_for()
            assert active.is_visible()
            assert page.locator("#tree .node").count() < 100  # of 1,570 nodes
            # Each side branch starts folded at its branch point, with its size.
            # Rows are 24 px: the branch at node 100 is the 101st row.
            page.locator("#tree").evaluate("t => { t.scrollTop = 95 * 24; }")
            start = page.locator('#tree .node[data-node="brain:b101:n1"]')
            assert "5 nodes" in start.inner_text()
            assert "⑂2" in page.locator('#tree .node[data-node="brain:r1:n100"]').inner_text()
            start.locator(".fold").click()
            page.locator('#tree .node[data-node="brain:b101:n5"]').wait_for()
            path = page.locator('#tree .node[data-node="brain:r1:n100"]')
            assert "on-path" in (path.get_attribute("class") or "")
            side = page.locator('#tree .node[data-node="brain:b101:n3"]')
            assert "on-path" not in (side.get_attribute("class") or "")
        finally:
            server.stop()


def test_without_the_token_the_page_is_refused(page: Any, shared_rt: Runtime) -> None:
    token = "browser-test-token-0123456789"
    server = UiServer(shared_rt, port=0, token=token).start()
    try:
        bare = f"http://127.0.0.1:{server.port}/"
        refused = page.goto(bare)
        assert 401 == refused.status
        assert "token" in page.locator("body").inner_text()
        assert 401 == page.goto(f"{bare}?token=wrong-{token}").status
        page.goto(server.url)
        page.wait_for_selector("#sessions tr[data-sid]")
        page.wait_for_selector("#conn.on")  # the SSE stream carries the cookie too
    finally:
        server.stop()
