"""The inspector's actions go through the CLI's Runtime calls and are recorded the same
way; the live stream carries what lands; ``clew ui`` refuses what it cannot serve."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from _processes import child_env
from _ui_helpers import CSRF, pay_model, pay_tools, waiting_session
from starlette.testclient import TestClient

from actors import Runtime, ScriptedModel
from actors.cli import main
from actors.ui import UiServer, create_app
from eventlog.events import ActiveNodeSwitched, ApprovalDecided, ClarificationAnswered

HEADERS = {"X-Clew-CSRF": CSRF}


def _decided(rt: Runtime, sid: str) -> list[ApprovalDecided]:
    return [e.event for e in rt.store.read_events(sid) if isinstance(e.event, ApprovalDecided)]


def test_approving_records_what_clew_approve_records_and_resumes(tmp_path: Path) -> None:
    paid: list[int] = []
    done = threading.Event()

    def resumer(rt: Runtime, sid: str) -> None:
        rt.resume(sid, model=pay_model(), tools=pay_tools(paid))
        done.set()

    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, paid)
        (pending,) = rt.pending(sid)
        with TestClient(create_app(rt, csrf=CSRF, resumer=resumer, hosts=["testserver"])) as c:
            doc = c.get(f"/api/sessions/{sid}").json()
            assert ("waiting", [pending.tool_call_id]) == (
                doc["status"],
                [p["tool_call_id"] for p in doc["waiting"][0]["pending"]],
            )
            out = c.post(
                f"/api/sessions/{sid}/decide",
                json={"call_id": pending.tool_call_id, "decision": "approve"},
                headers=HEADERS,
            ).json()
            assert ([], True) == (out["still_pending"], out["resumed"])
            assert done.wait(60)
            again = c.post(
                f"/api/sessions/{sid}/decide",
                json={"call_id": pending.tool_call_id, "decision": "approve"},
                headers=HEADERS,
            )
            assert 400 == again.status_code
        assert [ApprovalDecided(tool_call_id=pending.tool_call_id, decision="approve")] == _decided(
            rt, sid
        )
        assert ("completed", [42]) == (rt.info(rt.store.read_session(sid)).status, paid)
        assert rt.replay(sid).identical


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"decision": "deny", "reason": " "}, "reason"),
        ({"decision": "edit", "arguments": [1]}, "JSON object"),
        ({"decision": "maybe"}, "unknown decision"),
        ({"decision": "approve", "call_id": "call_nope"}, "call_nope"),
    ],
)
def test_bad_decisions_are_refused_and_nothing_is_written(
    tmp_path: Path, body: dict[str, Any], error: str
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, [])
        (pending,) = rt.pending(sid)
        with TestClient(create_app(rt, csrf=CSRF, hosts=["testserver"])) as c:
            out = c.post(
                f"/api/sessions/{sid}/decide",
                json={"call_id": pending.tool_call_id, **body},
                headers=HEADERS,
            )
        assert 400 == out.status_code
        assert error in out.json()["error"]
        assert [] == _decided(rt, sid)


def test_an_edit_and_a_denial_are_recorded_like_the_cli(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, [])
        (pending,) = rt.pending(sid)
        with TestClient(create_app(rt, csrf=CSRF, hosts=["testserver"])) as c:
            out = c.post(
                f"/api/sessions/{sid}/decide",
                json={
                    "call_id": pending.tool_call_id,
                    "decision": "edit",
                    "arguments": {"amount": 7},
                },
                headers=HEADERS,
            ).json()
            assert (False, {"type": "edit", "arguments": {"amount": 7}}) == (
                out["resumed"],
                out["decision"],
            )
            resume = c.post(f"/api/sessions/{sid}/resume", json={}, headers=HEADERS)
            assert 400 == resume.status_code and "clew resume" in resume.json()["error"]
        (decided,) = _decided(rt, sid)
        assert ("edit", {"amount": 7}) == (decided.decision, decided.arguments)


def test_switching_the_active_node_records_active_node_switched(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, [])
        first = rt.store.read_nodes(sid)[0].node_id
        with TestClient(create_app(rt, csrf=CSRF, hosts=["testserver"])) as c:
            url = f"/api/sessions/{sid}/switch"
            assert 404 == c.post(url, json={"node_id": "brain:r7:n1"}, headers=HEADERS).status_code
            out = c.post(url, json={"node_id": "brain:r1:n1"}, headers=HEADERS).json()
            assert first == out["active_node_id"]
            assert first == rt.store.read_session(sid).active_node_id
            cancelled = c.post(f"/api/sessions/{sid}/cancel", json={}, headers=HEADERS)
        switched = [
            e.event for e in rt.store.read_events(sid) if isinstance(e.event, ActiveNodeSwitched)
        ]
        assert [first] == [e.to_node_id for e in switched]
        # A waiting run can be cancelled (issue 32, item 18): it is re-executed to its wait
        # and recorded cancelled there.
        assert 200 == cancelled.status_code, cancelled.text
        assert "cancelled" == rt.session(sid).info().status


def _messages(lines: Any, wanted: int) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    event = ""
    for line in lines:
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            out.append((event, json.loads(line[6:])))
            if len(out) == wanted:
                return out
    return out


def test_the_session_stream_carries_events_as_they_land(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, [])
        last = rt.store.count_events(sid)
        server = UiServer(rt, port=0).start()
        try:
            url = f"http://127.0.0.1:{server.port}/api/sessions/{sid}/stream"
            with (
                httpx.Client(timeout=60) as http,
                http.stream("GET", url, params={"after": last}) as r,
            ):
                lines = r.iter_lines()
                assert [("hello", {"session_id": sid, "after": last})] == _messages(lines, 1)
                rt.switch_node(sid, rt.store.read_nodes(sid)[0].node_id)
                ((kind, rows),) = _messages(lines, 1)
            assert ("events", ["active_node_switched"], last + 1) == (
                kind,
                [row["type"] for row in rows],
                rows[0]["seq"],
            )
        finally:
            server.stop()


def test_the_sessions_stream_says_when_a_session_appears(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        rt.new_session()
        server = UiServer(rt, port=0).start()
        try:
            url = f"http://127.0.0.1:{server.port}/api/stream"
            with httpx.Client(timeout=60) as http, http.stream("GET", url) as r:
                lines = r.iter_lines()
                assert [("sessions", {"count": 1})] == _messages(lines, 1)
                rt.new_session()
                assert [("sessions", {"count": 2})] == _messages(lines, 1)
        finally:
            server.stop()


def test_clew_ui_refuses_a_port_in_use_and_a_missing_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert 2 == main(["ui", "--home", str(tmp_path / "none"), "--project", str(tmp_path)])
    assert "holds no sessions" in capsys.readouterr().err
    with Runtime(tmp_path / "home", tmp_path) as rt:
        rt.new_session()
        server = UiServer(rt, port=0)
        try:
            code = main(
                [
                    "ui",
                    "--home",
                    str(tmp_path / "home"),
                    "--project",
                    str(tmp_path),
                    "--port",
                    str(server.port),
                ]
            )
        finally:
            server.socket.close()
    err = capsys.readouterr().err
    assert 2 == code
    assert f"cannot listen on 127.0.0.1:{server.port}" in err
    assert 1 == len(err.strip().splitlines())
    assert 2 == main(["ui", "--home", str(tmp_path / "home"), "--token", "short"])


def test_clew_ui_read_only_serves_pages_and_refuses_actions(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = waiting_session(rt, [])
        (pending,) = rt.pending(sid)
    home = tmp_path / "home"
    child = subprocess.Popen(
        [sys.executable, "-m", "actors", "ui", "--read-only", "--port", "0", "--home", str(home)],
        env=child_env(),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = re.search(r"http://\S+/", child.stdout.readline())
        assert url is not None
        with httpx.Client(timeout=60, base_url=url.group(0)) as http:
            page = http.get("/")
            csrf = re.search(r'name="clew-csrf" content="([^"]+)"', page.text)
            assert csrf is not None
            waits = http.get(f"/api/sessions/{sid}").json()["waiting"]
            refused = http.post(
                f"/api/sessions/{sid}/decide",
                json={"call_id": pending.tool_call_id, "decision": "approve"},
                headers={"X-Clew-CSRF": csrf.group(1)},
            )
        assert [pending.tool_call_id] == [p["tool_call_id"] for p in waits[0]["pending"]]
        assert 400 == refused.status_code
        assert "read-only" in refused.json()["error"]
    finally:
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)
    with Runtime(home, tmp_path) as rt:
        assert [pending] == rt.pending(sid)


def test_clew_ui_on_postgresql_names_the_store_without_its_password(
    tmp_path: Path, pg_url: str
) -> None:
    with Runtime(tmp_path / "home", tmp_path, store=pg_url) as rt:
        rt.new_session()
    scheme, rest = pg_url.split("://", 1)
    user, host = rest.split("@", 1)
    secret = f"{scheme}://{user}:hunter2secret@{host}"  # trust auth: the password is unused
    child = subprocess.Popen(
        [sys.executable, "-m", "actors", "ui", "--port", "0", "--store", secret,
         "--home", str(tmp_path / "home")],
        env=child_env(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
    finally:
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)
    assert line.startswith(f"clew ui: serving {pg_url} at http://127.0.0.1:"), line
    assert "hunter2secret" not in line


ASK = {
    "rules": [
        {
            "role": "router",
            "phase": "route",
            "replies": [
                {
                    "json": {
                        "primary_role": "lead",
                        "workers": [],
                        "clarification": {"required": True, "question": "Which invoice?"},
                    }
                },
                {"json": {"primary_role": "lead", "workers": []}},
            ],
        },
        {"role": "lead", "replies": [{"text": "Paid invoice 7."}]},
    ]
}


def test_answering_the_question_records_it_and_the_run_goes_on(tmp_path: Path) -> None:
    done = threading.Event()

    def resumer(rt: Runtime, sid: str) -> None:
        rt.resume(sid, model=ScriptedModel(ASK))
        done.set()

    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        assert "needs_clarification" == session.run("Pay it.", model=ScriptedModel(ASK)).status
        with TestClient(create_app(rt, csrf=CSRF, resumer=resumer, hosts=["testserver"])) as c:
            (wait,) = c.get(f"/api/sessions/{session.id}").json()["waiting"]
            assert ("Which invoice?", False) == (wait["question"], wait["answered"])
            url = f"/api/sessions/{session.id}/answer"
            assert 400 == c.post(url, json={"text": "  "}, headers=HEADERS).status_code
            out = c.post(url, json={"text": "number 7"}, headers=HEADERS).json()
            assert (True, True) == (out["answered"], out["resumed"])
            assert done.wait(60)
        answers = [
            e.event.answer
            for e in rt.store.read_events(session.id)
            if isinstance(e.event, ClarificationAnswered)
        ]
        assert ["number 7"] == answers
        assert "completed" == rt.info(rt.store.read_session(session.id)).status


def test_clew_ui_serves_a_home_and_beyond_loopback_only_with_its_token(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        sid = rt.new_session().id
    child = subprocess.Popen(
        [sys.executable, "-m", "actors", "ui", "--host", "0.0.0.0", "--port", "0"],
        env=child_env(CLEW_HOME=str(tmp_path / "home")),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        url = re.search(r"http://\S+", first)
        assert url is not None, first + (child.stderr.read() if child.stderr else "")
        parts = urlsplit(url.group(0))
        token = parse_qs(parts.query)["token"][0]
        assert 24 <= len(token)
        api = f"http://127.0.0.1:{parts.port}/api/sessions"
        with httpx.Client(timeout=60) as http:
            assert 401 == http.get(api).status_code
            listed = http.get(api, headers={"Authorization": f"Bearer {token}"}).json()
        assert [sid] == [s["session_id"] for s in listed["sessions"]]
    finally:
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    assert (0, "") == (child.returncode, err)  # Ctrl-C stops it: exit 0, nothing on stderr
    assert "clew ui: stopped" in out
