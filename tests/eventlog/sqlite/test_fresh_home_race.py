"""Processes that open the same new (or old) store at the same moment all succeed: the
schema is created and migrated once, whoever gets there first (eventlog/sqlite/schema.py).

Each round starts 8 real processes, lets each import and wait on its stdin, then
releases them together; every one opens the store and creates its own session.
Before the fix about 1 in 9 such processes failed with "table sessions already exists".
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from _processes import child_env

from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.schema import SCHEMA_VERSION
from tests.eventlog.sqlite._files import raw

PROCESSES = 8
ROUNDS = 4
GOLDEN_DEMO = Path(__file__).resolve().parents[2] / "golden" / "sessions" / "demo"

#: Wait for "go" on stdin, then open the store at argv[1] and create session argv[2].
CHILD = """
import sys
from eventlog.events import SessionCreated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore

path, sid = sys.argv[1], sys.argv[2]
sys.stdin.readline()
store = SQLiteStore(path)
event = SessionCreated(session_id=sid, cwd="/", root_agent_id="a1")
[result] = store.append_batch([AppendRequest(session_id=sid, event=event, created_at="t")])
store.close()
if isinstance(result, Exception):
    raise result
"""


def open_together(path: Path, tag: str) -> list[tuple[int, str]]:
    """Open the store at ``path`` from PROCESSES processes at once; return (code, stderr)."""
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), f"sess_20260101_000000_{tag}{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        for i in range(PROCESSES)
    ]
    time.sleep(1.0)  # every child is past its imports, blocked on stdin
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    outcomes = []
    for child in children:
        _, err = child.communicate(timeout=60)
        outcomes.append((child.returncode, err.strip().splitlines()[-1:]))
    return [(code, "".join(last)) for code, last in outcomes]


def test_processes_opening_a_home_that_does_not_exist_yet_all_succeed(tmp_path: Path) -> None:
    for r in range(ROUNDS):
        path = tmp_path / f"round{r}" / "home" / "sessions.sqlite"
        outcomes = open_together(path, f"r{r}p")
        assert [(0, "")] * PROCESSES == outcomes
        store = SQLiteStore(path)
        assert PROCESSES == len(store.list_sessions())
        store.close()
        conn = raw(path)
        assert SCHEMA_VERSION == conn.pragma("user_version")
        conn.close()


def test_processes_opening_an_old_home_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = Path(shutil.copy(GOLDEN_DEMO / "home" / "sessions.sqlite", tmp_path / "s.sqlite"))
    outcomes = open_together(path, "p")
    assert [(0, "")] * PROCESSES == outcomes
    store = SQLiteStore(path)
    assert 1 + PROCESSES == len(store.list_sessions())
    assert all(store.check_chain(s.session_id) for s in store.list_sessions())
    store.close()
