"""PostgreSQL vs SQLite, both durable, measured in the same run on the same machine.

Run: ``python benchmarks/bench_postgres.py [--events N] [--steps K]``. It starts its own
throwaway PostgreSQL server (``fsync=on``, ``synchronous_commit=on``, loopback TCP: the
``tests/helpers/_postgres.py`` server with ``fsync=True``), and SQLite runs with
``durability="full"`` (the WAL fsynced at each commit) in a temporary directory on the
same disk. Ratios are against SQLite's number in the same run; never gate CI on them.

- append throughput: the Writer actor, one producer pipelining 512 requests, N events
  of ~300 B into one session (group commit: few, large transactions);
- one durable step: a producer that waits for each event's commit before the next
  (what a run does at a model or tool step boundary): K steps, the mean latency;
- processes: 1, 2 and 4 processes, each with its own Writer on the same PostgreSQL
  database, each appending N/p events to its own session, and (4, one session) all to
  the same session (its row lock serialises them: gapless seq).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "helpers")]

from _postgres import bin_dir, fresh_database, start_server  # noqa: E402

from eventlog.events import SessionCreated, TodoUpdated  # noqa: E402
from eventlog.records import AppendRequest  # noqa: E402
from eventlog.store import EventStore  # noqa: E402
from eventlog.writer import CommitFuture, Writer  # noqa: E402

CREATED_AT = "2026-01-01T00:00:00.000000+00:00"
OUTSTANDING = 512


def _request(sid: str, producer: int, i: int) -> AppendRequest:
    note = f"{i:08d} " + "x" * 215  # ≈ 300 bytes of payload, like a small model/tool event
    return AppendRequest(
        session_id=sid,
        event=TodoUpdated(todo_id=f"todo_{producer}", status="running", note=note),
        created_at=CREATED_AT,
        agent_id=f"a{producer}",
        run_id=f"{sid}:run{producer}",
    )


def _created(sid: str) -> AppendRequest:
    event = SessionCreated(session_id=sid, cwd="/", root_agent_id="a0")
    return AppendRequest(session_id=sid, event=event, created_at=CREATED_AT)


def _open(location: str) -> EventStore:
    if location.startswith("postgresql://"):
        from eventlog.postgres import PostgresStore  # noqa: PLC0415

        return PostgresStore(location)
    from eventlog.sqlite import SQLiteStore  # noqa: PLC0415

    return SQLiteStore(location, durability="full")


def append_throughput(location: str, sid: str, n: int, producer: int = 0) -> tuple[float, float]:
    """Append ``n`` events pipelined through a Writer; return (start, end) wall times."""
    writer = Writer(_open(location))
    if not writer.store.session_exists(sid):
        with contextlib.suppress(Exception):
            writer.append(_created(sid))
    requests = [_request(sid, producer, i) for i in range(n)]
    start = time.time()
    outstanding: list[CommitFuture] = []
    for r in requests:
        outstanding.append(writer.submit(r))
        if len(outstanding) >= OUTSTANDING:
            for f in outstanding:
                f.get()
            outstanding.clear()
    for f in outstanding:
        f.get()
    end = time.time()
    writer.stop()
    writer.store.close()
    return start, end


def durable_steps(location: str, sid: str, k: int) -> float:
    """Append ``k`` events one at a time, each waited for; return the mean seconds per step."""
    writer = Writer(_open(location))
    writer.append(_created(sid))
    start = time.perf_counter()
    for i in range(k):
        writer.append(_request(sid, 0, i))
    elapsed = time.perf_counter() - start
    writer.stop()
    writer.store.close()
    return elapsed / k


def processes(url: str, count: int, n: int, *, same_session: bool, tag: str) -> float:
    """``count`` processes append ``n`` events in all; return events/s over the wall span."""
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", url,
             f"sess_bench_{tag}" + ("" if same_session else f"_{p}"), str(n // count), str(p)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for p in range(count)
    ]  # fmt: skip
    spans = []
    for c in children:
        out, _ = c.communicate()
        assert c.returncode == 0, out
        spans.append(tuple(float(x) for x in out.split()))
    return (n // count * count) / (max(e for _, e in spans) - min(s for s, _ in spans))


def compare(server: str, n: int, k: int) -> None:
    """Print the SQLite vs PostgreSQL table."""
    with tempfile.TemporaryDirectory() as tmp:
        lite = str(Path(tmp) / "bench.sqlite")

        def rate(loc: str) -> float:
            start, end = append_throughput(loc, f"sess_t_{time.monotonic_ns()}", n)
            return n / (end - start)

        def step_ms(loc: str) -> float:
            return 1000 * durable_steps(loc, f"sess_s_{time.monotonic_ns()}", k)

        cases: list[tuple[str, str, Callable[[str], float]]] = [
            ("append throughput, 1 producer", "events/s", rate),
            ("one durable step (commit latency)", "ms", step_ms),
        ]
        rows = [(name, unit, run(lite), run(fresh_database(server))) for name, unit, run in cases]
    print(
        f"{n} events of ~300 B; {k} durable steps; SQLite durability=full,"
        " PostgreSQL 15 fsync=on synchronous_commit=on over loopback TCP"
    )
    head = f"| {'case':<34} | {'unit':<8} | {'SQLite':>9} | {'PostgreSQL':>10} | {'PG/SQLite':>9} |"
    print(head)
    print(f"|{'-' * 36}|{'-' * 10}|{'-' * 11}|{'-' * 12}|{'-' * 11}|")
    for name, unit, base, pg in rows:
        print(f"| {name:<34} | {unit:<8} | {base:>9,.1f} | {pg:>10,.1f} | {pg / base:>9.2f} |")


def scale(server: str, n: int) -> None:
    """Print the 1, 2, 4 processes table."""
    cases: list[tuple[str, float]] = []
    for label, count, shared in (
        ("1", 1, False),
        ("2", 2, False),
        ("4", 4, False),
        ("4, one shared session", 4, True),
    ):
        tag = f"p{count}" + ("s" if shared else "")
        db = fresh_database(server)
        cases.append((label, processes(db, count, n, same_session=shared, tag=tag)))
    one = cases[0][1]
    print("PostgreSQL, several processes on one database (each its own Writer):")
    print(f"| {'processes':<24} | {'events/s':>10} | {'x 1 process':>11} |")
    print(f"|{'-' * 26}|{'-' * 12}|{'-' * 13}|")
    for label, value in cases:
        print(f"| {label:<24} | {value:>10,.0f} | {value / one:>11.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        url, sid, n, producer = args.child
        start, end = append_throughput(url, sid, int(n), int(producer))
        print(start, end)
        return
    found = bin_dir()
    if found is None:
        raise SystemExit("PostgreSQL is not installed (initdb not found)")
    server = start_server(found, fsync=True)
    compare(server, args.events, args.steps)
    print()
    scale(server, args.events)


if __name__ == "__main__":
    main()
