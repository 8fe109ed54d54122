"""Issue 32 item 16: the inspector answers only the names it serves (DNS rebinding), checks
``Origin`` against an allow-list, and scopes its token cookie by port — plain HTTP with a
forged ``Host``/``Origin``, and real headless Chromium at a name resolving to 127.0.0.1."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _ui_helpers import CHROMIUM, CHROMIUM_ARGS, waiting_session

from actors import Runtime
from actors.ui import UiServer

EVIL = "evil.example"


def _request(
    port: int, method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        payload = None if body is None else json.dumps(body)
        conn.request(method, path, body=payload, headers=headers)
        reply = conn.getresponse()
        return reply.status, reply.read().decode()
    finally:
        conn.close()


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[tuple[Runtime, str, str]]:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, [])
        (pending,) = rt.pending(sid)
        yield rt, sid, pending.tool_call_id


def test_the_inspector_refuses_a_forged_host_and_a_foreign_origin_over_http(
    waiting: tuple[Runtime, str, str],
) -> None:
    rt, sid, call = waiting
    server = UiServer(rt, port=0).start()
    port = server.port
    try:
        own = {"Host": f"127.0.0.1:{port}"}
        status, page = _request(port, "GET", "/", own)
        assert 200 == status
        csrf = re.search(r'name="clew-csrf" content="([^"]+)"', page)
        assert csrf is not None, page[:500]
        token = csrf.group(1)
        for host in (f"{EVIL}:{port}", EVIL, f"127.0.0.1:{port + 1}", "", "127.0.0.1@evil"):
            status, text = _request(port, "GET", "/api/sessions", {"Host": host})
            assert 421 == status, (host, status, text)
            assert sid not in text
            status, text = _request(port, "GET", "/", {"Host": host})
            assert 421 == status and token not in text, host
        assert 200 == _request(port, "GET", "/api/sessions", {"Host": f"localhost:{port}"})[0]
        assert 200 == _request(port, "GET", "/api/sessions", {"Host": f"[::1]:{port}"})[0]
        decide = f"/api/sessions/{sid}/decide"
        body = {"call_id": call, "decision": "approve"}
        for origin in (f"http://{EVIL}:{port}", "null", f"http://127.0.0.1:{port + 1}"):
            headers = {
                **own,
                "Origin": origin,
                "X-Clew-CSRF": token,
                "Content-Type": "application/json",
            }
            status, text = _request(port, "POST", decide, headers, body)
            assert 403 == status, (origin, status, text)
            # A forged Host that matches the forged Origin is refused before either is read.
            forged = {**headers, "Host": f"{EVIL}:{port}"}
            assert 421 == _request(port, "POST", decide, forged, body)[0]
        assert [call] == [p.tool_call_id for p in rt.pending(sid)]  # nothing was decided
    finally:
        server.stop()


def test_a_page_under_a_rebound_name_cannot_read_or_approve_and_ports_keep_their_tokens(
    waiting: tuple[Runtime, str, str], browser: Any
) -> None:
    rt, sid, call = waiting
    token_a, token_b = "token-of-a-0123456789abcdef", "token-of-b-0123456789abcdef"
    open_server = UiServer(rt, port=0).start()
    a = UiServer(rt, port=0, token=token_a).start()
    b = UiServer(rt, port=0, token=token_b).start()
    rebinding = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {EVIL} 127.0.0.1"]
    try:
        # A second Chromium of the same Playwright, its resolver mapping the attacker's name.
        rebound = browser.browser_type.launch(executable_path=str(CHROMIUM), args=rebinding)
        try:
            page = rebound.new_page()
            # The attacker's page: its name resolves to the inspector's address.
            evil_root = f"http://{EVIL}:{open_server.port}/"
            assert 421 == page.goto(evil_root).status
            assert sid not in page.content()
            approved = page.evaluate(
                """async ([url, call]) => {
                    const r = await fetch(url, {method: "POST",
                        headers: {"Content-Type": "application/json"},
                        body: JSON.stringify({call_id: call, decision: "approve"})});
                    return r.status;
                }""",
                [f"{evil_root}api/sessions/{sid}/decide", call],
            )
            assert 421 == approved
            assert [call] == [p.tool_call_id for p in rt.pending(sid)]

            # Two tokened inspectors on two ports, one browser: neither logs the other out.
            assert 200 == page.goto(a.url).status
            assert 200 == page.goto(b.url).status
            for server in (a, b):
                again = page.goto(f"http://127.0.0.1:{server.port}/api/sessions")
                assert 200 == again.status, server.port
        finally:
            rebound.close()
    finally:
        for server in (open_server, a, b):
            server.stop()
