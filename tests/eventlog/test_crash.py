"""Crash safety from the outside: a real child process appends and is killed with SIGKILL."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import apsw

from eventlog.sqlite import SQLiteStore

CHILD = Path(__file__).with_name("_crash_child.py")
REPO = Path(__file__).resolve().parents[2]
SID = "sess_crash"


def _run_and_kill(db: Path, tag: str, kill_after: int) -> list[int]:
    """Start the child, SIGKILL it once it reported ``kill_after`` seqs; return every seq."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    seqs: list[int] = []
    with subprocess.Popen(
        [sys.executable, str(CHILD), str(db), tag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        try:
            while len(seqs) < kill_after:
                line = child.stdout.readline()
                if not line:
                    raise AssertionError(f"child exited early: {child.stderr.read().decode()}")
                seqs.append(int(line))
            # Mid-stream: the child has transactions in flight and futures outstanding.
            child.send_signal(signal.SIGKILL)
            rest = child.stdout.read()
        finally:
            child.kill()
            child.wait()
    assert -signal.SIGKILL == child.returncode
    # Lines already in the pipe were printed before the kill; a torn last line is not a seq.
    seqs.extend(int(line) for line in rest.split(b"\n") if line.strip().isdigit())
    return seqs


def _assert_consistent(db: Path) -> int:
    conn = apsw.Connection(str(db))
    assert "ok" == conn.execute("PRAGMA integrity_check").fetchone()[0]  # type: ignore[index]
    conn.close()
    store = SQLiteStore(db)
    events = list(store.iter_events(SID))
    assert list(range(1, len(events) + 1)) == [e.seq for e in events]
    runs: dict[str, list[int]] = {}
    for e in events:
        if e.run_id is not None:
            runs.setdefault(e.run_id, []).append(e.run_seq or 0)
    for run_seqs in runs.values():
        assert list(range(1, len(run_seqs) + 1)) == run_seqs
    nodes = store.read_nodes(SID)
    appended = {e.node_id for e in events if e.event_type == "node_appended"}
    assert {n.node_id for n in nodes} == appended
    assert list(range(1, len(nodes) + 1)) == [n.node_seq for n in nodes]
    active = store.read_session(SID).active_node_id
    assert active is None or active in appended
    store.close()
    return len(events)


def test_every_event_reported_committed_survives_sigkill_and_nothing_is_half_written(
    tmp_path: Path,
) -> None:
    db = tmp_path / "sessions.sqlite"
    total_reported = 0
    # Three lives on the same file: each restart must also pick up the counters correctly.
    for life, kill_after in enumerate((400, 1500, 3000)):
        printed = _run_and_kill(db, f"life{life}", kill_after)
        total_reported += len(printed)
        in_file = _assert_consistent(db)
        store = SQLiteStore(db)
        stored_seqs = {e.seq for e in store.iter_events(SID)}
        store.close()
        assert set(printed) <= stored_seqs
        assert in_file >= max(printed)
    assert total_reported >= 4900
