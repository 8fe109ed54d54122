"""Append throughput: the Writer actor against raw apsw inserts of the same rows.

Run: ``python benchmarks/bench_append.py [--events N] [--dir DIR]``. Prints one table;
the ratio is to the floor measured in the same run on the same disk, so it means
something on any machine (never gate CI on the absolute numbers).

- floor: raw apsw, the same schema, the same row values (payload ≈ 300 B, and a
  precomputed 64-hex-digit chain hash), 100 rows per transaction, WAL with
  ``synchronous=FULL``;
- writer: :class:`eventlog.writer.Writer` on :class:`SQLiteStore` with
  ``durability="full"``; each producer pipelines — submits until 512 futures are
  outstanding, then waits for them.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from eventlog.codec import encode_event
from eventlog.events import SessionCreated, TodoUpdated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.schema import migrate, session_tables_ddl
from eventlog.writer import CommitFuture, Writer

SID = "sess_20260101_000000_bench"
CREATED_AT = "2026-01-01T00:00:00.000000+00:00"
OUTSTANDING = 512
ROWS_PER_TXN = 100


def _event(producer: int, i: int) -> TodoUpdated:
    # ≈ 300 bytes of payload_json, like a small model/tool event.
    return TodoUpdated(todo_id=f"todo_{producer}", status="running", note=f"{i:08d} " + "x" * 215)


def bench_floor(path: Path, n: int) -> float:
    """Insert ``n`` rows with raw apsw, ROWS_PER_TXN per transaction; return seconds."""
    conn = apsw.Connection(str(path))
    conn.pragma("journal_mode", "wal")
    conn.pragma("synchronous", "FULL")
    migrate(conn)
    conn.execute(session_tables_ddl(SID))
    sql = f"INSERT INTO events_{SID} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    rows = [
        (
            f"run0#{i}",
            i,
            i,
            "a0",
            "run0",
            "info",
            "todo_updated",
            None,
            None,
            encode_event(_event(0, i)).decode(),
            CREATED_AT,
            f"{i:064x}",
        )
        for i in range(1, n + 1)
    ]
    start = time.perf_counter()
    for k in range(0, n, ROWS_PER_TXN):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows[k : k + ROWS_PER_TXN])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def bench_writer(path: Path, n: int, producers: int) -> float:
    """Append ``n`` events through the Writer from ``producers`` threads; return seconds."""
    writer = Writer(SQLiteStore(path, durability="full"))
    writer.append(
        AppendRequest(
            session_id=SID,
            event=SessionCreated(session_id=SID, cwd="/", root_agent_id="a0"),
            created_at=CREATED_AT,
        )
    )
    per = n // producers
    go = threading.Barrier(producers + 1)

    def produce(p: int) -> None:
        requests = [
            AppendRequest(
                session_id=SID,
                event=_event(p, i),
                created_at=CREATED_AT,
                agent_id=f"a{p}",
                run_id=f"run{p}",
            )
            for i in range(per)
        ]
        go.wait()
        outstanding: list[CommitFuture] = []
        for r in requests:
            outstanding.append(writer.submit(r))
            if len(outstanding) >= OUTSTANDING:
                for f in outstanding:
                    f.get()
                outstanding.clear()
        for f in outstanding:
            f.get()

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    go.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    writer.stop()
    assert per * producers + 1 == SQLiteStore(path).count_events(SID)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; best is shown")
    parser.add_argument("--dir", type=Path, default=None, help="where the files go (disk!)")
    args = parser.parse_args()
    n: int = args.events
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        cases: list[tuple[str, Callable[[Path], float]]] = [
            (f"raw apsw, {ROWS_PER_TXN} rows/txn, sync=FULL (floor)", lambda p: bench_floor(p, n)),
            ("Writer, 1 producer, durability=full", lambda p: bench_writer(p, n, 1)),
            ("Writer, 8 producers, durability=full", lambda p: bench_writer(p, n, 8)),
        ]
        best = [0.0] * len(cases)
        # Interleave the repeats so a slow spell of the disk hits every case alike.
        for r in range(args.repeat):
            for i, (_, run) in enumerate(cases):
                best[i] = max(best[i], n / run(root / f"case{i}_{r}.sqlite"))
        rates = [(name, rate) for (name, _), rate in zip(cases, best, strict=True)]
    floor = rates[0][1]
    width = max(len(name) for name, _ in rates)
    print(f"{n} events of ~300 B each, best of {args.repeat} runs per case")
    print(f"| {'case':<{width}} | {'events/s':>10} | {'× floor':>7} |")
    print(f"|{'-' * (width + 2)}|{'-' * 12}|{'-' * 9}|")
    for name, rate in rates:
        print(f"| {name:<{width}} | {rate:>10,.0f} | {rate / floor:>7.2f} |")


if __name__ == "__main__":
    main()
