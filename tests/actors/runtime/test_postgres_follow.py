"""Live follow on PostgreSQL: a follower in this process wakes on ``NOTIFY`` when a writer
in another process commits, instead of sleeping out its poll interval."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path

from _processes import child_env

from actors.runtime.runtime import Runtime
from eventlog.postgres import PostgresStore
from eventlog.postgres.notify import CommitWaiter
from eventlog.records import StoredEvent
from tests.eventlog.store_conformance import SID, append, created

_WRITER = Path(__file__).parents[2] / "helpers" / "_pg_writer.py"
#: Far longer than the test waits for a batch: only a NOTIFY can wake the follower in time.
POLL_S = 600.0
#: A guard against hanging, not a measurement: a woken follower needs milliseconds.
GUARD_S = 60.0


def test_a_follower_wakes_on_each_commit_of_a_writer_in_another_process(
    pg_url: str, tmp_path: Path
) -> None:
    store = PostgresStore(pg_url)
    append(store, created())
    store.close()
    with subprocess.Popen(
        [sys.executable, str(_WRITER), pg_url, SID],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    ) as writer:
        _follow_the_writer(writer, pg_url, tmp_path)


def _follow_the_writer(writer: subprocess.Popen[str], pg_url: str, tmp_path: Path) -> None:
    assert writer.stdin is not None and writer.stdout is not None
    seen: queue.Queue[StoredEvent] = queue.Queue()
    done = threading.Event()
    rt = Runtime(tmp_path / "home", tmp_path, store=pg_url, read_only=True)
    follower = threading.Thread(
        target=lambda: [seen.put(e) for e in rt.follow(SID, poll_s=POLL_S, stop=done.is_set)],
        daemon=True,
    )
    follower.start()
    assert 1 == seen.get(timeout=GUARD_S).seq  # caught up: now it waits
    seqs = [1]
    for size in (3, 1, 5):
        writer.stdin.write(f"{size}\n")
        writer.stdin.flush()
        assert "ok" == writer.stdout.readline().strip()
        seqs += [seen.get(timeout=GUARD_S).seq for _ in range(size)]
    assert list(range(1, 11)) == seqs
    done.set()
    writer.stdin.write("1\n")  # one more commit wakes it to see the stop
    writer.stdin.close()
    follower.join(timeout=GUARD_S)
    assert not follower.is_alive()
    assert 0 == writer.wait(timeout=GUARD_S)
    rt.close()


def test_a_waiter_ignores_other_sessions_and_times_out(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    append(store, created(), created("sess_other"))
    waiter = CommitWaiter(pg_url, SID)
    append(store, created("sess_third"))
    assert not waiter.wait(after_seq=1, timeout=0.2)
    waiter.close()
    store.close()
