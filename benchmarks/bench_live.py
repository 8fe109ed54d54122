"""Live-run benchmark: what watching a run costs, and the run path itself.

Prints, in one run, the time of ``--runs`` demo main runs (``--workers`` workers each,
zero-latency scripted model, durability normal) in one session:

- ``run``: ``Session.run`` — nobody streams (the path every embedding takes);
- ``stream``: ``Session.start`` + consuming ``stream()`` (every committed event, and
  the text pieces of a streaming model) — and its ratio to ``run``;
- per model call: the cost of running the call on a helper thread (so a cancel never
  waits for a model) against calling it directly, measured on a no-op call.

Run it on two commits to compare the run path before/after a change (same machine,
alternately). Not a test: numbers depend on the machine.

    python benchmarks/bench_live.py [--runs 20] [--workers 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _timing import best_of

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime


def _runs(home: Path, project: Path, runs: int, workers: int, stream: bool) -> float:
    shutil.rmtree(home, ignore_errors=True)
    with Runtime(home, project) as rt:
        session = rt.new_session()
        tools = demo_tools(project)
        t0 = time.perf_counter()
        for _ in range(runs):
            model = demo_model(workers)
            if stream:
                handle = session.start(DEMO_PROMPT, model=model, tools=tools)
                for _item in handle.stream():
                    pass
                assert handle.result().status == "completed"
            else:
                assert session.run(DEMO_PROMPT, model=model, tools=tools).status == "completed"
        return time.perf_counter() - t0


def _helper_thread_cost(calls: int) -> tuple[float, float]:
    try:
        from actors.models.calls import call_off_thread  # noqa: PLC0415 - absent before #14
    except ImportError:
        return 0.0, 0.0

    def noop() -> int:
        return 1

    t0 = time.perf_counter()
    for _ in range(calls):
        noop()
    direct = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(calls):
        call_off_thread(noop, name="bench")
    return direct / calls, (time.perf_counter() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="clew-bench-live-"))
    project = base / "project"
    project.mkdir()
    try:
        plain, _ = best_of(a.repeats, lambda: _runs(base / "h", project, a.runs, a.workers, False))
        print(
            f"run     {a.runs} main runs x {a.workers} workers: {plain:.3f} s"
            f" ({plain / a.runs * 1000:.1f} ms per main run)"
        )
        if hasattr(Runtime, "start"):
            watched, _ = best_of(
                a.repeats, lambda: _runs(base / "h", project, a.runs, a.workers, True)
            )
            print(
                f"stream  the same, streamed: {watched:.3f} s = {watched / plain:.2f}x run"
                " (target: <= 1.10)"
            )
        direct, helper = _helper_thread_cost(20_000)
        if helper:
            print(
                f"model call on a helper thread: {helper * 1e6:.1f} us vs {direct * 1e6:.2f} us"
                " direct (the price of a cancel that never waits for a model)"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
