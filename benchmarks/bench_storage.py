"""Storage benchmark: bytes on disk per durable step (a node and its ``node_appended`` event).

Run: ``python benchmarks/bench_storage.py [--steps 2000]``

Appends ``--steps`` steps to one session through the real ``Writer`` (one commit each),
alternating a user message (~240 bytes of text) and an assistant reply (~480 bytes), as
``benchmarks/peers`` case 1 does. Then checkpoints the WAL into the database
(``wal_checkpoint(TRUNCATE)``) and prints the bytes of the file and its WAL, per step,
and where they are: each table's and index's bytes from SQLite's ``dbstat`` (when the
SQLite build has it), and the median time of ``read_nodes`` and ``read_active_path``
(the whole chain: every node is on it) over that session. Run it with another checkout
on ``PYTHONPATH`` to compare versions.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import apsw
from bench_replay import prose

from eventlog.blocks import TextBlock
from eventlog.events import Node, NodeAppended, SessionCreated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.writer import Writer

SID = "sess_storage"


def write_steps(db: Path, steps: int) -> None:
    """Append a session and ``steps`` nodes, one commit each."""
    rng = random.Random(17)
    writer = Writer(SQLiteStore(db, durability="normal"))
    at = "2026-06-12T15:00:00.000000+00:00"
    writer.append(
        AppendRequest(
            session_id=SID,
            event=SessionCreated(session_id=SID, cwd="/", root_agent_id="main"),
            created_at=at,
        )
    )
    tip: str | None = None
    for i in range(steps):
        node = Node(
            node_id=f"{SID}:main:r1:n{i + 1}",
            parent_id=tip,
            agent_id="main",
            run_id=f"{SID}:main:r1",
            role="user" if i % 2 == 0 else "assistant",
            content=[TextBlock(text=prose(rng, 240 if i % 2 == 0 else 480))],
            token_count=60 if i % 2 == 0 else 120,
        )
        writer.append(
            AppendRequest(
                session_id=SID,
                event=NodeAppended(node=node, activate=True),
                created_at=at,
                agent_id="main",
                run_id=f"{SID}:main:r1",
            )
        )
        tip = node.node_id
    writer.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=21)
    args = ap.parse_args()
    db = Path(tempfile.mkdtemp(prefix="clew_storage_")) / "sessions.sqlite"
    write_steps(db, args.steps)
    store = SQLiteStore(db, read_only=True)
    for name, read in (
        ("read_nodes", store.read_nodes),
        ("read_active_path", store.read_active_path),
    ):
        samples = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            read(SID)
            samples.append(time.perf_counter() - t0)
        per_node = statistics.median(samples) / args.steps * 1e6
        print(f"{name}: median {statistics.median(samples) * 1000:.2f} ms ({per_node:.2f} µs/node)")
    store.close()
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    wal = db.with_name(db.name + "-wal")
    total = db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    print(f"{args.steps} steps: file + WAL after checkpoint {total:,} bytes")
    print(f"per step: {total / args.steps:,.0f} bytes\n")
    try:
        rows = list(
            conn.execute(
                "SELECT name, SUM(pgsize), SUM(payload) FROM dbstat"
                " WHERE name LIKE ? GROUP BY name ORDER BY 2 DESC",
                (f"%{SID}%",),
            )
        )
    except apsw.SQLError:
        print("(this SQLite has no dbstat: no per-table breakdown)")
        return
    print("| table or index | pages (bytes) | payload bytes | per step |")
    print("|---|---|---|---|")
    for name, pages, payload in rows:
        print(f"| {name} | {pages:,} | {payload:,} | {pages / args.steps:,.0f} |")


if __name__ == "__main__":
    main()
