"""Issue 32 item 15: on one PostgreSQL store, every command of another home respects the
session leases of the home running the session (two real processes, two homes)."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from _cli_helpers import CliResult, Where, run_process, script_model, spawn

from actors.runtime.runtime import Runtime
from eventlog.events import NodeAppended
from projections import verify


def _clew(where: Where, url: str, *args: str) -> CliResult:
    return run_process(where, *args, CLEW_STORE=url)


def _home(tmp_path: Path, name: str) -> Where:
    project = tmp_path / f"proj-{name}"
    project.mkdir()
    return Where(tmp_path / f"home-{name}", project)


def test_commands_from_another_home_respect_the_session_lease_on_postgres(
    pg_url: str, tmp_path: Path
) -> None:
    a, b = _home(tmp_path, "a"), _home(tmp_path, "b")
    model = script_model(tmp_path / "m.json", {"replies": [{"text": "hi"}]})
    running = spawn(a, "demo", "--slow", "12000", CLEW_STORE=pg_url)
    try:
        assert running.stdout is not None
        first = running.stdout.readline().split()
        assert "session" == first[0], first
        sid = first[1]
        with Runtime(b.home, b.project, store=pg_url, read_only=True) as rt:
            deadline = time.monotonic() + 60
            nodes: list[str] = []
            while not nodes and time.monotonic() < deadline:
                events = rt.store.read_events(sid)
                nodes = [e.event.node.node_id for e in events if isinstance(e.event, NodeAppended)]
                time.sleep(0.2)
            assert nodes

        listed = _clew(b, pg_url, "sessions", "--json")
        assert 0 == listed.code, listed.err
        [row] = [s for s in listed.json() if s["session_id"] == sid]
        assert "running" == row["status"], row

        refused = {
            "resume": _clew(b, pg_url, "resume", sid),
            "run --session": _clew(b, pg_url, "run", "again", "--session", sid, "--model", model),
            "switch-node": _clew(b, pg_url, "switch-node", sid, nodes[0]),
            "delete": _clew(b, pg_url, "delete", sid, "--yes"),
            "cancel": _clew(b, pg_url, "cancel", sid),
        }
        assert None is running.poll(), "the run ended before every command was tried"
        for what, result in refused.items():
            assert 2 == result.code, (what, result.code, result.out, result.err)
            assert any(w in result.err for w in ("leas", "in use", "owns")), (what, result.err)
        running.send_signal(signal.SIGINT)  # Ctrl-C: home A records the run cancelled
        _, err = running.communicate(timeout=120)
        assert 130 == running.returncode, err[-2000:]
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    with Runtime(b.home, b.project, store=pg_url, read_only=True) as rt:
        report = verify(rt.store, sid)
        assert report.ok, report.lines()
        assert rt.replay(sid).identical
        assert "cancelled" == rt.store.read_runs(sid)[-1].status
    listed = _clew(b, pg_url, "sessions", "--json")
    assert ["cancelled"] == [s["status"] for s in json.loads(listed.out) if s["session_id"] == sid]
