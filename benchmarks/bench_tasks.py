"""Benchmark the Task WAL: changes/s through the actor, replay lines/s.

Run: ``python benchmarks/bench_tasks.py``. Prints a table; every rate has the
baseline it is compared to, measured in the same run on the same disk (the one
holding the temp dir), and the replay rate is also compared to the 200k lines/s
target. Nothing here gates CI.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from _timing import best_of

from actors.tasks.changes import CreateTask, SetStatus, TaskChange
from actors.tasks.manager import task_manager
from eventlog.clock import ManualClock
from eventlog.taskwal import (
    TaskCreated,
    TaskEvent,
    TaskStatusChanged,
    TaskWal,
    replay_wal,
    wal_path,
)
from projections.taskdag import TaskDag

SID = "sess_bench"
REPLAY_TARGET = 200_000  # lines/s, from the issue
WAL_LINES = 100_000
ACTOR_CHANGES = 1_000
BATCH = 100


def task_changes(n: int, prefix: str = "t") -> list[TaskChange]:
    """Return ``n`` changes: tasks in chains of 4, each created, started and completed."""
    changes: list[TaskChange] = []
    i = 0
    while len(changes) < n:
        deps = [f"{prefix}{i - 1}"] if i % 4 else []
        changes += [
            CreateTask(task_id=f"{prefix}{i}", title=f"step {i}", owner="worker", deps=deps),
            SetStatus(task_id=f"{prefix}{i}", to_status="running"),
            SetStatus(task_id=f"{prefix}{i}", to_status="completed", result_summary=f"done {i}"),
        ]
        i += 1
    return changes[:n]


def task_events(n: int) -> list[TaskEvent]:
    """Return the events ``task_changes(n)`` would write."""
    events: list[TaskEvent] = []
    i = 0
    while len(events) < n:
        deps = [f"t{i - 1}"] if i % 4 else []
        tid = f"t{i}"
        events += [
            TaskCreated(task_id=tid, title=f"step {i}", owner="worker", deps=deps),
            TaskStatusChanged(task_id=tid, from_status="ready", to_status="running"),
            TaskStatusChanged(
                task_id=tid, from_status="running", to_status="completed", result_summary=f"d{i}"
            ),
        ]
        i += 1
    return events[:n]


def bench_raw_fsync(tmp: Path, n: int) -> float:
    """Baseline: one small write + fsync per line, no actor, no encoding."""
    fd = os.open(tmp / "raw.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        t = time.perf_counter()
        for _ in range(n):
            os.write(fd, b'{"seq":1,"v":1,"at":"2026-01-01T00:00:00+00:00","event":{}}\n')
            os.fsync(fd)
        return n / (time.perf_counter() - t)
    finally:
        os.close(fd)


def bench_actor(tmp: Path, n: int, batch: int) -> float:
    """Return changes/s through the actor, ``batch`` changes per append (one fsync each)."""
    changes = task_changes(n)
    with task_manager(tmp / f"actor{batch}", SID, clock=ManualClock()) as tasks:
        tasks.open("bench").get()
        t = time.perf_counter()
        for i in range(0, n, batch):
            tasks.apply_changes("bench", changes[i : i + batch]).get()
        return n / (time.perf_counter() - t)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="clew-bench-") as d:
        tmp = Path(d)
        raw = bench_raw_fsync(tmp, ACTOR_CHANGES)
        single = bench_actor(tmp, ACTOR_CHANGES, 1)
        batched = bench_actor(tmp, ACTOR_CHANGES * 10, BATCH)

        path = wal_path(tmp, SID, "big")
        wal = TaskWal(path, last_seq=0, clock=ManualClock())
        events = task_events(WAL_LINES)
        for i in range(0, WAL_LINES, 10_000):
            wal.append(events[i : i + 10_000])
        wal.close()
        lines = path.read_bytes().splitlines()
        size_mb = path.stat().st_size / 1e6

        baseline, _ = best_of(3, lambda: [json.loads(x) for x in lines])
        replay, _ = best_of(5, lambda: replay_wal(path))
        records = replay_wal(path).records
        fold, _ = best_of(3, lambda: TaskDag.rebuild(r.event for r in records))

        def reopen() -> None:
            with task_manager(tmp, SID) as tasks:
                assert tasks.open("big").get().lines == WAL_LINES

        open_total, _ = best_of(3, reopen)

    rows = [
        ("actor: 1 change per fsync", f"{single:,.0f} changes/s", f"{single / raw:.2f}× raw fsync"),
        (
            f"actor: batch of {BATCH}",
            f"{batched:,.0f} changes/s",
            f"{batched / single:.1f}× single",
        ),
        ("baseline: raw write+fsync", f"{raw:,.0f} lines/s", "1.00×"),
        (
            f"replay_wal ({WAL_LINES // 1000}k lines, {size_mb:.1f} MB)",
            f"{WAL_LINES / replay:,.0f} lines/s",
            f"{WAL_LINES / replay / REPLAY_TARGET:.2f}× target 200k, "
            f"{baseline / replay:.1f}× json.loads",
        ),
        ("baseline: json.loads per line", f"{WAL_LINES / baseline:,.0f} lines/s", "1.00×"),
        ("TaskDag.rebuild (fold only)", f"{WAL_LINES / fold:,.0f} lines/s", ""),
        (
            "TaskManager.open (replay+fold)",
            f"{WAL_LINES / open_total:,.0f} lines/s",
            f"{WAL_LINES / open_total / REPLAY_TARGET:.2f}× target 200k",
        ),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(f"{'measure':<{w0}}  {'rate':>{w1}}  ratio")
    print(f"{'-' * w0}  {'-' * w1}  {'-' * 30}")
    for name, rate, ratio in rows:
        print(f"{name:<{w0}}  {rate:>{w1}}  {ratio}")


if __name__ == "__main__":
    main()
