"""The run digest's cost: demo runs with clew's info logs off (the baseline) and on.

Run from the checkout: ``PYTHONPATH=. python benchmarks/bench_logs.py [--runs 20]
[--repeat 3] [--dir DIR]``. Prints one table; the ratio is to the baseline measured in
the same run, so only it travels (never gate CI on the absolute numbers).

- off: no log output asked for (a library's default: the stdlib ``clew.run`` logger is
  not enabled for info), so the engine subscribes no commit listener at all;
- on, console / json: clew's own stderr output at info (``eventlog.logs.set_output``),
  stderr sent to ``/dev/null``: the writer's listener queues each batch and the digest
  thread renders one line per run, worker, model call and tool call.

Each case opens a fresh home and runs ``--runs`` demo sessions (3 workers) one after the
other; the best of ``--repeat`` is shown.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

from _timing import best_of

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime.runtime import Runtime
from eventlog.logs import LogFormat, LogOutput, set_output


def _runs(base: Path, runs: int) -> int:
    home = Path(tempfile.mkdtemp(dir=base))
    try:
        with Runtime(home / "home", home) as rt:
            tools = demo_tools(home)
            for _ in range(runs):
                outcome = rt.new_session().run(DEMO_PROMPT, model=demo_model(3), tools=tools)
                assert outcome.status == "completed"
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return runs


def _case(base: Path, runs: int, repeat: int, fmt: LogFormat | None) -> float:
    set_output(None if fmt is None else LogOutput(level=logging.INFO, format=fmt))
    with Path(os.devnull).open("w") as devnull, contextlib.redirect_stderr(devnull):
        seconds, _ = best_of(repeat, lambda: _runs(base, runs))
    set_output(None)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="demo runs per case")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; best is shown")
    parser.add_argument("--dir", type=Path, default=None, help="where the homes go (disk!)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        _runs(base, 2)  # warm-up: imports, first connections
        rows = [
            ("off (baseline)", _case(base, args.runs, args.repeat, None)),
            ("on, console", _case(base, args.runs, args.repeat, "console")),
            ("on, json", _case(base, args.runs, args.repeat, "json")),
        ]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    baseline = rows[0][1]
    print(f"{args.runs} demo runs (3 workers), best of {args.repeat}")
    print(f"{'case':<16} {'s':>8} {'ms/run':>8} {'ratio':>7}")
    for name, seconds in rows:
        per_run = seconds / args.runs * 1000
        print(f"{name:<16} {seconds:>8.3f} {per_run:>8.1f} {seconds / baseline:>6.2f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
