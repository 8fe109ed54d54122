"""Python calls per sequential append: the Writer's CPU path, counted, not timed.

Run: ``PYTHONPATH=. python benchmarks/bench_writer_calls.py [--appends N]``. A profile
hook counts Python function calls on every thread (the producer and the writer actor)
while one producer appends ``N`` small events one by one, each waited for
(``durability="normal"``), and prints calls per append beside the floor measured in the
same run: a bare pykka actor answering the same number of asks. A count does not
depend on how loaded the machine is, which a wall-clock rate on a shared machine does.

It also counts the same events handed over as groups of ``--group`` (default 7, the events
of a worker's tool turn), each waited for: ``Writer.submit_group``, how a run's recorder
commits (issue 17). Commits are counted too.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pykka
from bench_append import CREATED_AT, SID, _event

from eventlog.events import SessionCreated
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.writer import Writer


class _Counter:
    """Counts ``call`` events while ``active``, on every thread it was installed on."""

    def __init__(self) -> None:
        self.active = False
        self.calls = 0
        self.producer = 0
        self._producer = threading.get_ident()

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.active and event == "call":
            self.calls += 1
            if threading.get_ident() == self._producer:
                self.producer += 1

    def run(self, work: Callable[[], object]) -> None:
        sys.setprofile(self.hook)
        self.active = True
        try:
            work()
        finally:
            self.active = False
            sys.setprofile(None)


def _installed(start: Callable[[], Any]) -> tuple[_Counter, Any]:
    """Start ``start()``'s threads with the counter's hook in them (inactive until run)."""
    counter = _Counter()
    threading.setprofile(counter.hook)
    try:
        return counter, start()
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]


class _Echo(pykka.ThreadingActor):
    def on_receive(self, message: Any) -> Any:
        return message


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--group", type=int, default=7)
    args = parser.parse_args()
    n, k = args.appends, args.group
    clew, commits = _count(n, lambda writer, requests: [writer.append(r) for r in requests])
    grouped, group_commits = _count(
        n,
        lambda writer, requests: [
            writer.submit_group(requests[i : i + k]).get() for i in range(0, len(requests), k)
        ],
    )
    floor, echo = _installed(_Echo.start)

    def asks() -> None:
        for i in range(n):
            echo.ask(i)

    floor.run(asks)
    echo.stop()
    print(f"{n} sequential appends, durability=normal; Python calls per append (all threads)")
    print(f"  bare pykka ask (floor): {floor.calls / n:6.1f}  (caller {floor.producer / n:.1f})")
    print(f"  Writer.append:          {clew.calls / n:6.1f}  (caller {clew.producer / n:.1f})")
    print(f"  ratio to the floor:     {clew.calls / floor.calls:6.2f}x")
    print(f"  commits:                {commits}")
    print(f"the same {n} events as groups of {k} (Writer.submit_group), each waited for")
    print(
        f"  per event:              {grouped.calls / n:6.1f}  (caller {grouped.producer / n:.1f})"
    )
    print(f"  ratio to the floor:     {grouped.calls / floor.calls:6.2f}x")
    print(f"  commits:                {group_commits}")


def _count(n: int, work: Callable[[Writer, list[AppendRequest]], object]) -> tuple[_Counter, int]:
    """Count the Python calls of ``work(writer, requests)`` over ``n`` small events; return
    the counter and the number of commits."""
    commits = [0]

    def committed(_total: int, _batch: list[Any]) -> None:
        commits[0] += 1

    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "s.sqlite", durability="normal")
        clew, writer = _installed(lambda: Writer(store, after_commit=committed))
        created = SessionCreated(session_id=SID, cwd="/", root_agent_id="a0")
        writer.append(AppendRequest(session_id=SID, event=created, created_at=CREATED_AT))
        requests = [
            AppendRequest(session_id=SID, event=_event(0, i), created_at=CREATED_AT, run_id="r")
            for i in range(n)
        ]

        commits[0] = 0
        clew.run(lambda: work(writer, requests))
        writer.stop()
    return clew, commits[0]


if __name__ == "__main__":
    main()
