"""Python calls per worker turn with one tool: the runtime's CPU path, counted, not timed.

Run: ``PYTHONPATH=. python benchmarks/bench_turn_calls.py [--turns N]``. A profile hook
counts Python function calls on every thread (the worker, the Brain, the writer, the
helper threads of model and tool calls) while the peers benchmark's case-4 run (one
worker calling a zero-cost tool each turn, ``ScriptedModel``, ``durability="normal"``)
runs ``N`` and ``2N`` turns; the marginal count per turn is printed beside the floor
counted in the same run: a bare pykka loop of the same 7 asks a turn. A count does not
depend on how loaded the machine is, which the wall-clock ratio of
``benchmarks/peers/run.py --cases 4`` (target ≤ 4×) does a great deal on 2 shared cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "peers"))

import _clew
from _common import ASKS_PER_TURN
from bench_writer_calls import _Counter, _Echo, _installed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    n = args.turns
    counts: list[int] = []
    # One counter for every thread: the hook is in each thread started from here on (the
    # helper threads of model and tool calls are made in the warm-up run and reused).
    counter = _Counter()
    threading.setprofile(counter.hook)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _clew.worker_run(Path(tmp) / "warm", "normal", n)  # imports, helper threads
            for turns in (n, 2 * n):
                counter.calls = 0
                counter.run(
                    lambda turns=turns: _clew.worker_run(Path(tmp) / f"t{turns}", "normal", turns)
                )
                counts.append(counter.calls)
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
    per_turn = (counts[1] - counts[0]) / n
    floor, echo = _installed(_Echo.start)

    def asks() -> None:
        for i in range(n * ASKS_PER_TURN):
            echo.ask(i)

    floor.run(asks)
    echo.stop()
    floor_turn = floor.calls / n
    print(f"worker turns with one tool, durability=normal ({n} vs {2 * n} turns)")
    print(f"  bare pykka, {ASKS_PER_TURN} asks (floor): {floor_turn:8.1f} Python calls per turn")
    print(f"  clew worker turn:          {per_turn:8.1f} Python calls per turn")
    print(f"  ratio to the floor:        {per_turn / floor_turn:8.2f}x")


if __name__ == "__main__":
    main()
