"""ClewSaver vs LangGraph's SqliteSaver: one ``MessagesState`` thread of ``--messages``
messages (default 800) through a real compiled graph.

The graph has one node answering each human message with an AI message (~300 characters
each); the thread grows by one human and one AI message per ``invoke``, so LangGraph
saves two checkpoints per turn and the ``messages`` channel grows every time. Both
savers run at the same durability (SQLite WAL, ``synchronous=NORMAL``: clew's
``durability="normal"``), one after the other in this process. Prints the bytes each
leaves on disk (database + WAL, after closing), the wall time of the whole thread, and
the ratios, and the time a fresh saver on the closed file takes to read the thread's
last checkpoint back (a cold read, best of 5: ClewSaver folds the thread's events, following their
hash chain); then checks that both read the same final state back. Each run is a fresh
child process; ``--rounds N`` alternates N runs of each and keeps each one's best time.

Not a test: numbers depend on the machine. The target (issue 23): clew ≤ 1/20 of
SqliteSaver's bytes, and faster.

    python benchmarks/bench_langgraph.py [--messages 800]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.langgraph import ClewSaver

_TEXT = "The quick brown fox jumps over the lazy dog, and then reports on it. " * 4


def _chat(state: MessagesState) -> dict[str, Any]:
    n = len(state["messages"])
    return {"messages": [AIMessage(content=f"reply {n}: {_TEXT}", id=f"ai-{n}")]}


def _graph(saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("chat", _chat)
    builder.add_edge(START, "chat")
    return builder.compile(checkpointer=saver)


def _thread(saver: BaseCheckpointSaver[Any], messages: int) -> tuple[float, list[Any]]:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "bench"}}
    t0 = time.perf_counter()
    for turn in range(messages // 2):
        human = HumanMessage(content=f"question {turn}: {_TEXT}", id=f"human-{turn}")
        graph.invoke({"messages": [human]}, config)
    elapsed = time.perf_counter() - t0
    final = graph.get_state(config).values["messages"]
    return elapsed, final


def _bytes(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


_CONFIG: Any = {"configurable": {"thread_id": "bench"}}
#: Fresh savers that read the thread back; the best time is kept.
_COLD_READS = 5


def _cold_read(saver: BaseCheckpointSaver[Any]) -> float:
    """Return the seconds ``saver`` (fresh on the written file) takes to read the last
    checkpoint back."""
    t0 = time.perf_counter()
    found = saver.get_tuple(_CONFIG)
    took = time.perf_counter() - t0
    assert found is not None
    return took


def run_clew(where: Path, messages: int) -> tuple[int, float, list[Any], float]:
    home = where / "clew-home"
    with ClewSaver.from_home(home, durability="normal") as saver:
        elapsed, final = _thread(saver, messages)
    files = [f for f in home.rglob("*") if f.is_file() and "locks" not in f.parts]
    size = _bytes(files)
    reads = []
    for _ in range(_COLD_READS):
        with ClewSaver.from_home(home, durability="normal") as saver:
            reads.append(_cold_read(saver))
    return size, elapsed, final, min(reads)


def _sqlite_saver(path: Path) -> tuple[sqlite3.Connection, SqliteSaver]:
    conn = sqlite3.connect(str(path), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn, SqliteSaver(conn)


def run_sqlite(where: Path, messages: int) -> tuple[int, float, list[Any], float]:
    path = where / "langgraph.sqlite"
    conn, saver = _sqlite_saver(path)
    elapsed, final = _thread(saver, messages)
    conn.close()
    size = _bytes([path, Path(f"{path}-wal"), Path(f"{path}-shm")])
    reads = []
    for _ in range(_COLD_READS):
        conn, saver = _sqlite_saver(path)
        reads.append(_cold_read(saver))
        conn.close()
    return size, elapsed, final, min(reads)


def _child(name: str, messages: int) -> None:
    """Run one saver's thread in this (fresh) process; print bytes, seconds, message ids."""
    run = run_clew if name == "clew" else run_sqlite
    with tempfile.TemporaryDirectory() as tmp:
        size, elapsed, final, read = run(Path(tmp), messages)
    ids = [m.id for m in final]
    print(json.dumps({"bytes": size, "seconds": elapsed, "ids": ids, "read": read}))


def _in_child(name: str, messages: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, "--messages", str(messages)],
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=1, help="alternating runs; best time")
    parser.add_argument("--child", choices=["clew", "sqlite"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.messages)
        return
    runs: dict[str, list[dict[str, Any]]] = {"sqlite": [], "clew": []}
    for _ in range(args.rounds):
        for name, results in runs.items():
            results.append(_in_child(name, args.messages))
    best = {name: min(results, key=lambda r: r["seconds"]) for name, results in runs.items()}
    base, clew = best["sqlite"], best["clew"]
    assert base["ids"] == clew["ids"], "the two savers read different final states"
    assert args.messages == len(clew["ids"])
    print(
        f"{args.messages}-message MessagesState thread, {args.messages // 2} invokes,"
        f" best of {args.rounds} run(s) each, each in a fresh process"
    )
    print(f"{'saver':<12} {'bytes on disk':>14} {'seconds':>9} {'cold read ms':>13}")
    for label, found in (("SqliteSaver", base), ("ClewSaver", clew)):
        read_ms = found["read"] * 1000
        print(f"{label:<12} {found['bytes']:>14,} {found['seconds']:>9.2f} {read_ms:>13.1f}")
    print(
        f"ratio clew/sqlite: bytes {clew['bytes'] / base['bytes']:.4f}"
        f" (1/{base['bytes'] / clew['bytes']:.0f}), time {clew['seconds'] / base['seconds']:.2f}"
        f" ({base['seconds'] / clew['seconds']:.2f}x faster)"
    )


if __name__ == "__main__":
    main()
