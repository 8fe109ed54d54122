"""Model calls benchmark: the waterfall of a 100k-event session, and ``clew call`` of one
of its calls.

Run from the checkout: ``PYTHONPATH=. python benchmarks/bench_calls.py [--events 100000]
[--repeats 3]``.

Prints, measured in this one run, on one session of ``--events`` events (bench_replay's
synthetic mix, written through the real store — thousands of runs, model and tool calls):

- building the **waterfall document** (``actors.documents.calls.waterfall_doc``, what
  ``/api/sessions/{sid}/waterfall`` serves) in-process, and its size as JSON; the goal of
  issue 33 is ≤ 1 s; and the endpoint itself over HTTP from a running ``clew ui`` server
  (the document, its JSON encoding and the transfer: what the page waits for), with a
  live page's update after the last event (``?after=``);
- **``clew call SESSION N --json``** of a call in the middle of the session, and of the
  last, as processes (``python -m actors``); the goal is ≤ 0.5 s on an idle machine;
- **``clew calls SESSION --json``** as a process (every call, its request rebuilt);
- the **baselines** of each: ``python -c pass`` (starting an interpreter, which no
  process avoids) and ``clew timeline SESSION --limit 50`` as a process — the price of
  starting the CLI, opening the home and reading a page — and, for the in-process
  document, reading and decoding every event (``store.iter_events``).

Not a test: the numbers depend on the machine; only the ratios travel.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import tempfile
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import bench_replay
import msgspec
from _timing import best_of
from bench_cli import CLEW, PEAK_AT_EXIT, TIMELINE_SID, build_timeline_home, child

from actors.documents.calls import waterfall_doc
from actors.replay.calls import pair_calls
from actors.runtime.runtime import Runtime
from actors.ui import UiServer
from eventlog.records import AppendRequest

#: Issue 33's goals on an idle machine.
WATERFALL_GOAL_S = 1.0
CALL_GOAL_S = 0.5


class ClockedWriter(bench_replay.SessionWriter):
    """bench_replay's writer with timestamps a clock would give (3 ms an event), so the
    waterfall parses real times and draws real durations, as on a recorded session."""

    START = datetime(2026, 6, 12, 15, 0, tzinfo=UTC)

    def add(self, event: Any, agent: str | None = None, run: str | None = None) -> None:
        self.t += 1
        at = (self.START + timedelta(milliseconds=3 * self.t)).isoformat()
        self.futures.append(
            self.writer.submit(
                AppendRequest(
                    session_id=self.sid, event=event, created_at=at, agent_id=agent, run_id=run
                )
            )
        )
        self.events += 1
        if len(self.futures) > 5000:
            self.drain()


def bench(base: Path, events: int, repeats: int) -> None:
    home = base / "home"
    bench_replay.SessionWriter = ClockedWriter  # type: ignore[misc]  # the builder's clock
    build_timeline_home(home, events)
    with Runtime(home, base, read_only=True) as rt:
        n = rt.store.count_events(TIMELINE_SID)
        calls = len(pair_calls(rt.store.iter_events(TIMELINE_SID)))
        floor = best_of(repeats, lambda: sum(1 for _ in rt.store.iter_events(TIMELINE_SID)))[0]
        took, doc = best_of(repeats, lambda: waterfall_doc(rt, TIMELINE_SID))
        floor_cpu = cpu_of(repeats, lambda: sum(1 for _ in rt.store.iter_events(TIMELINE_SID)))
        took_cpu = cpu_of(repeats, lambda: waterfall_doc(rt, TIMELINE_SID))
        size = len(msgspec.json.encode(doc))
        served, update = over_http(rt, doc, repeats)
    where = ["--home", str(home), "--project", str(base)]

    def process(*args: str, python: bool = False) -> tuple[float, float]:
        """Best wall and best CPU seconds (user + system) of ``clew ARGS`` as a process
        (``python``: of ``python ARGS``)."""
        walls, cpus = [], []
        for _ in range(repeats):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            walls.append(child(list(args) if python else [*CLEW, *args, *where])[0])
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        return min(walls), min(cpus)

    bare = process("-c", PEAK_AT_EXIT + "pass", python=True)  # (child reads the peak)
    limited = process("timeline", TIMELINE_SID, "--limit", "50")
    middle = process("call", TIMELINE_SID, str(calls // 2), "--json")
    last = process("call", TIMELINE_SID, "last", "--json")
    listed = process("calls", TIMELINE_SID, "--json")
    bars = sum(len(r["bars"]) for r in doc["runs"])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"## model calls of one session of {n:,} events, {calls:,} calls (best of {repeats})")
    print(f"\nload average {load} (CPU seconds travel better than wall seconds on a busy box)\n")
    print("| case | wall s | × baseline | CPU s | × baseline | goal |")
    print("|---|---|---|---|---|---|")
    print(
        f"| read + decode every event (`iter_events`), baseline | {floor:.3f} | 1.00"
        f" | {floor_cpu:.3f} | 1.00 | |"
    )
    print(
        f"| waterfall document, in-process ({len(doc['runs']):,} rows, {bars:,} bars,"
        f" {size / 1e6:.1f} MB JSON) | {took:.3f} | {took / floor:.2f} | {took_cpu:.3f}"
        f" | {took_cpu / floor_cpu:.2f} | ≤ {WATERFALL_GOAL_S} s |"
    )
    print(
        f"| `GET …/waterfall` from `clew ui` (document, JSON, HTTP) | {served:.3f}"
        f" | {served / floor:.2f} | | | ≤ {WATERFALL_GOAL_S} s |"
    )
    print(f"| `GET …/waterfall?after=` a live page's update (nothing new) | {update:.3f} | | | | |")
    wall0, cpu0 = limited
    print(
        f"| `clew timeline --limit 50`, process, baseline | {wall0:.3f} | 1.00"
        f" | {cpu0:.3f} | 1.00 | |"
    )
    for name, (wall, cpu), goal in (
        (f"`clew call {calls // 2} --json`, process", middle, f"≤ {CALL_GOAL_S} s"),
        ("`clew call last --json`, process", last, f"≤ {CALL_GOAL_S} s"),
        ("`clew calls --json`, process", listed, ""),
    ):
        print(
            f"| {name} | {wall:.3f} | {wall / wall0:.2f} | {cpu:.3f} | {cpu / cpu0:.2f} | {goal} |"
        )
    wall1, cpu1 = bare
    print("\nthe same processes against `python -c pass` in this run:\n")
    print("| case | wall s | × `python -c pass` | CPU s | × `python -c pass` |")
    print("|---|---|---|---|---|")
    for name, (wall, cpu) in (
        ("`python -c pass`, baseline", bare),
        ("`clew timeline --limit 50`", limited),
        (f"`clew call {calls // 2} --json`", middle),
        ("`clew call last --json`", last),
        ("`clew calls --json`", listed),
    ):
        print(f"| {name} | {wall:.3f} | {wall / wall1:.2f} | {cpu:.3f} | {cpu / cpu1:.2f} |")
    print()


def fetch(url: str) -> int:
    """GET ``url`` whole; return its size in bytes."""
    with urllib.request.urlopen(url, timeout=120) as reply:
        return len(reply.read())


def over_http(rt: Runtime, doc: dict[str, Any], repeats: int) -> tuple[float, float]:
    """Best seconds of ``GET /waterfall`` from a ``clew ui`` server, and of a live page's
    update after the document's last event."""
    server = UiServer(rt, port=0).start()
    try:
        url = f"{server.url.rstrip('/')}/api/sessions/{TIMELINE_SID}/waterfall"
        served = best_of(repeats, lambda: fetch(url))[0]
        after = f"{url}?after={doc['last_seq']}&calls={doc['calls']}"
        return served, best_of(repeats, lambda: fetch(after))[0]
    finally:
        server.stop()


def cpu_of(repeats: int, fn: Callable[[], object]) -> float:
    """Best CPU seconds of this process running ``fn`` (a full collection before each)."""
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench(Path(tmp), args.events, args.repeats)


if __name__ == "__main__":
    main()
