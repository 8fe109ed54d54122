"""CLI benchmark: the CLI's start, ``clew timeline`` of a large session and ``clew verify
--all`` of many.

Run from the checkout: ``PYTHONPATH=. python benchmarks/bench_cli.py [--events 100000]
[--sessions 2000] [--repeats 3] [--startup-only]`` (without ``PYTHONPATH`` an installed
clew — an editable install of another checkout — would be measured instead; the script
refuses to).

Prints, measured in this one run:

- **startup** (issue 34: ``clew --version`` ≤ 4×, ``clew sessions`` of a 100-session home
  ≤ 6× the baseline): ``clew --version``, ``clew --help`` and ``clew sessions`` as real
  processes (``python -m actors``), best of ``--repeats``, against the baseline of
  starting the interpreter itself (``python -c pass``), interleaved so load moves both.
- **timeline** of a session of ``--events`` events (bench_replay's synthetic mix, written
  through the real store): the table and ``--json``, in-process (stdout to /dev/null)
  against the baseline of reading and decoding the same events (``store.iter_events``,
  the part no rendering avoids); then as real processes (``python -m actors``): wall
  time, peak RSS (the child's ``ru_maxrss``) and the time until the first row arrives on
  a pipe (the first 4 KB: the header and the first rows, or the JSON's first rows).
- **timeline's first page** (issue 19: "the first page appears in < 1 s on a 100k-event
  session"): the time until the first 4 KB are written, in-process (after the imports)
  and as a process, against the baseline of starting a process that only imports the CLI
  (``python -c "import actors.cli.main"``, then 4 KB written): what no command avoids.
- **verify --all** of a home of ``--sessions`` small sessions (each a copy of one real
  scripted run: route → lead answer, 19 events and a Task WAL) against the baseline of
  ``Runtime.verify(one session)`` in the same home, × the number of sessions (mean of a
  sample, after a warm-up). A ratio near 1 means a session costs what it holds, not what
  the home holds.

Not a test: the numbers depend on the machine; only the ratios travel.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import io
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw
import structlog
from _timing import best_of
from bench_replay import build_replay_session

import actors
from actors.cli import main as clew
from actors.models.scripted import ScriptedModel
from actors.runtime.runtime import Runtime
from eventlog.codec import decode_event, encode_event
from eventlog.ids import session_id_at
from eventlog.records import AppendRequest
from eventlog.sqlite import SQLiteStore
from eventlog.taskwal import wal_dir
from eventlog.writer import Writer

ROOT = Path(__file__).resolve().parents[1]
TIMELINE_SID = "sess_20260612_150000_7131"
#: The scripted run each small session records: the router plans no worker, the lead answers.
SMALL_RUN = {
    "rules": [
        {
            "role": "router",
            "phase": "route",
            "replies": [{"json": {"primary_role": "lead", "workers": [], "review": False}}],
        },
        {"role": "lead", "replies": [{"text": "done"}]},
    ]
}


# --- building the data ------------------------------------------------------------------


def build_timeline_home(home: Path, events: int) -> None:
    """Write one session of ``events`` events (bench_replay's mix) into ``home``."""
    store = SQLiteStore(home / "sessions.sqlite")
    writer = Writer(store)
    try:
        build_replay_session(writer, TIMELINE_SID, events, random.Random(7))
        writer.flush()
    finally:
        writer.stop()
        store.close()
    checkpoint(home)


def checkpoint(home: Path) -> None:
    """Move the database's ``-wal`` into the file, so the first case measured does not pay
    for reading 100k fresh events through the WAL index (it made the baseline 3× slower)."""
    conn = apsw.Connection(str(home / "sessions.sqlite"))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def build_small_sessions(home: Path, project: Path, n: int) -> list[str]:
    """Record one real scripted session, then copy it ``n - 1`` times under fresh ids.

    Copies, not runs: running 2,000 sessions takes ~16 min here, because every new
    session adds tables and each live connection re-parses the schema. A copy is the same
    events (the template's id replaced, same length) appended through the real store, and
    the same Task WAL under the new id.
    """
    with Runtime(home, project) as rt:
        template = rt.new_session().id
        outcome = rt.session(template).run("hello", model=ScriptedModel(SMALL_RUN))
        assert outcome.status == "completed", outcome
        recorded = rt.store.read_events(template)
    wals = list(wal_dir(project, template).iterdir())
    old = template.encode()
    ids = [template]
    store = SQLiteStore(home / "sessions.sqlite")
    try:
        for i in range(1, n):
            sid = session_id_at("2026-06-12T16:00:00", f"{i:04x}")
            new = sid.encode()

            def moved(ident: str | None, sid: str = sid) -> str | None:
                return None if ident is None else ident.replace(template, sid)

            requests = [
                AppendRequest(
                    session_id=sid,
                    event=decode_event(encode_event(e.event).replace(old, new)),
                    created_at=e.created_at,
                    agent_id=moved(e.agent_id),
                    run_id=moved(e.run_id),
                )
                for e in recorded
            ]
            for result in store.append_batch(requests):
                if isinstance(result, Exception):
                    raise result
            target = wal_dir(project, sid)
            target.mkdir(parents=True)
            for wal in wals:
                shutil.copyfile(wal, target / wal.name.replace(template, sid))
            ids.append(sid)
    finally:
        store.close()
    checkpoint(home)
    return ids


# --- measuring ---------------------------------------------------------------------------


def in_process(fn: list[str], repeats: int) -> float:
    """Best time of ``clew ARGS`` run in this process, stdout to /dev/null."""

    def once() -> None:
        with Path(os.devnull).open("w") as sink, contextlib.redirect_stdout(sink):
            code = clew(fn)
        assert code == 0, (fn, code)

    return best_of(repeats, once)[0]


#: Run by every measured child at exit: print its peak RSS. Not ``ru_maxrss`` (of
#: ``wait4`` or ``getrusage``): on Linux that keeps the high-water mark of the image before
#: ``exec`` — the benchmark's own, large after an in-process run; ``VmHWM`` is the new one's.
PEAK_AT_EXIT = (
    "import atexit, sys\n"
    "def _peak():\n"
    "    with open('/proc/self/status') as f:\n"
    "        kb = next(line.split()[1] for line in f if line.startswith('VmHWM'))\n"
    "    sys.stderr.write(f'peak_kb={kb}\\n')\n"
    "atexit.register(_peak)\n"
)
#: ``python -m actors ARGS``, with the peak printed at exit.
CLEW = ["-c", PEAK_AT_EXIT + "import runpy; runpy.run_module('actors', run_name='__main__')"]


_PYCACHE: list[str] = []


def child_env() -> dict[str, str]:
    """The environment of a measured child: this checkout first, its bytecode cached in a
    directory of this run (as an installed clew has it; with ``PYTHONDONTWRITEBYTECODE``
    set every start compiled ~85 modules from source, 0.15-0.19 s of each command)."""
    if not _PYCACHE:
        _PYCACHE.append(tempfile.mkdtemp(prefix="clew-bench-pycache-"))
        atexit.register(shutil.rmtree, _PYCACHE[0], True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": _PYCACHE[0]}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def child(args: list[str]) -> tuple[float, float]:
    """Run ``python ARGS`` to the end, stdout to /dev/null; return (wall s, peak RSS MB)."""
    env = child_env()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        check=False,
    )
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, (args, proc.stderr)
    lines = proc.stderr.splitlines()
    peak = next(int(x.removeprefix(b"peak_kb=")) for x in lines if x.startswith(b"peak_kb="))
    return wall, peak / 1024


def first_page(args: list[str]) -> float:
    """Seconds until ``python ARGS`` has printed its first 4 KB (or ended)."""
    env = child_env()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    proc.stdout.read(4096)
    took = time.perf_counter() - t0
    proc.kill()
    proc.communicate()
    return took


READ_ONLY = PEAK_AT_EXIT + (
    "import sys\n"
    "from eventlog.sqlite import SQLiteStore\n"
    "store = SQLiteStore(sys.argv[1])\n"
    "n = sum(1 for _ in store.iter_events(sys.argv[2]))\n"
    "store.close()\n"
)


def bench_timeline(base: Path, events: int, repeats: int) -> None:
    home = base / "timeline"
    build_timeline_home(home, events)
    store = SQLiteStore(home / "sessions.sqlite")
    n = store.count_events(TIMELINE_SID)
    floor = best_of(repeats, lambda: sum(1 for _ in store.iter_events(TIMELINE_SID)))[0]
    store.close()
    cli = ["timeline", TIMELINE_SID, "--home", str(home), "--project", str(base)]
    table = in_process(cli, repeats)
    as_json = in_process([*cli, "--json"], repeats)
    print(f"## timeline of one session of {n:,} events (best of {repeats})\n")
    print("| case | s | × read+decode |")
    print("|---|---|---|")
    print(f"| read + decode (`iter_events`), baseline | {floor:.3f} | 1.00 |")
    print(f"| `clew timeline` (table) | {table:.3f} | {table / floor:.2f} |")
    print(f"| `clew timeline --json` | {as_json:.3f} | {as_json / floor:.2f} |")
    print()
    db = str(home / "sessions.sqlite")
    rows = [
        ("read + decode only (python -c)", ["-c", READ_ONLY, db, TIMELINE_SID], False),
        ("`clew timeline` (table)", [*CLEW, *cli], True),
        ("`clew timeline --json`", [*CLEW, *cli, "--json"], True),
    ]
    print("| process | wall s | peak RSS MB | first 4 KB out s |")
    print("|---|---|---|---|")
    for name, args, rows_out in rows:
        wall, rss = child(args)
        first = f"{first_page(args):.3f}" if rows_out else "-"
        print(f"| {name} | {wall:.2f} | {rss:.0f} | {first} |")
    print()


class FirstPage(io.StringIO):
    """A stdout that notes when the first 4 KB arrive, then ends the command like a reader
    that leaves (``clew timeline | head``): ``main`` stops quietly on ``BrokenPipeError``."""

    def __init__(self) -> None:
        super().__init__()
        self.start = time.perf_counter()
        self.took: float | None = None
        self.size = 0

    def write(self, text: str) -> int:
        self.size += len(text)
        if self.size >= 4096 and self.took is None:
            self.took = time.perf_counter() - self.start
            raise BrokenPipeError
        return len(text)


def first_page_in_process(args: list[str], repeats: int) -> float:
    """Best time until ``clew ARGS`` run in this process has written its first 4 KB."""
    times = []
    for _ in range(repeats):
        sink = FirstPage()
        with contextlib.redirect_stdout(sink):
            assert clew(args) == 0
        assert sink.took is not None, "fewer than 4 KB written"
        times.append(sink.took)
    return min(times)


def bench_first_page(home: Path, base: Path, repeats: int) -> None:
    """The first page of ``clew timeline`` of the big session: in-process and as a process,
    against the cost of starting a process that imports the CLI."""
    cli = ["timeline", TIMELINE_SID, "--home", str(home), "--project", str(base)]
    # Measured like the command: until 4 KB arrive on the pipe (not until the process
    # exits, which adds the interpreter's shutdown).
    imports_only = "import sys, actors.cli.main; sys.stdout.write('x' * 4096); sys.stdout.flush()"
    startup = min(first_page(["-c", imports_only]) for _ in range(repeats))
    inside = first_page_in_process(cli, repeats)
    process = min(first_page([*CLEW, *cli]) for _ in range(repeats))
    limited = min(child([*CLEW, *cli, "--limit", "50"])[0] for _ in range(repeats))
    print(f"## timeline's first page (best of {repeats})\n")
    print("| case | s | × startup |")
    print("|---|---|---|")
    print(f"| start a process, import the CLI (baseline) | {startup:.3f} | 1.00 |")
    print(f"| first 4 KB, in-process (after the imports) | {inside:.3f} | {inside / startup:.2f} |")
    print(f"| first 4 KB, `clew timeline` process | {process:.3f} | {process / startup:.2f} |")
    print(
        f"| `clew timeline --limit 50`, whole process | {limited:.3f} | {limited / startup:.2f} |"
    )
    print()


def bench_startup(base: Path, repeats: int) -> None:
    """The CLI's start as processes, against ``python -c pass`` in the same run."""
    home, project = base / "startup", base / "startup-project"
    project.mkdir()
    build_small_sessions(home, project, 100)
    where = ["--home", str(home), "--project", str(project)]
    cases = {
        "`python -c pass` (baseline)": ["-c", "pass"],
        "`clew --version`": ["-m", "actors", "--version"],
        "`clew --help`": ["-m", "actors", "--help"],
        "`clew sessions` (100 sessions)": ["-m", "actors", "sessions", *where],
        "`clew sessions --limit 50`": ["-m", "actors", "sessions", "--limit", "50", *where],
        "`clew sessions --json`": ["-m", "actors", "sessions", "--json", *where],
        "`clew show last`": ["-m", "actors", "show", "last", *where],
    }
    # Bytecode cached (in a directory of this run), as an installed clew has it: compiling
    # every module from source on each start would be measured instead (it doubled the
    # time of `clew show` here, with PYTHONDONTWRITEBYTECODE set).
    env = child_env()
    best = dict.fromkeys(cases, float("inf"))
    # Interleaved, best of each: a burst of load on a shared machine slows one round of
    # every case, not every run of one case. The first round also writes the bytecode.
    for _ in range(max(repeats, 5) + 1):
        for name, args in cases.items():
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, *args], stdout=subprocess.DEVNULL, env=env, check=False
            )
            took = time.perf_counter() - t0
            assert proc.returncode == 0, (args, proc.returncode)
            best[name] = min(best[name], took)
    floor = best["`python -c pass` (baseline)"]
    print(f"## startup: the CLI as a process (best of {max(repeats, 5)}, interleaved)\n")
    print("| case | s | × `python -c pass` | target |")
    print("|---|---|---|---|")
    targets = {"`clew --version`": "≤ 4", "`clew sessions` (100 sessions)": "≤ 6"}
    for name, took in best.items():
        print(f"| {name} | {took:.3f} | {took / floor:.2f} | {targets.get(name, '-')} |")
    print()


def bench_verify(base: Path, sessions: int, repeats: int) -> None:
    home, project = base / "many", base / "many-project"
    project.mkdir()
    t0 = time.perf_counter()
    ids = build_small_sessions(home, project, sessions)
    built = time.perf_counter() - t0
    # A fresh sample of 50 sessions, spread over the home, for each repeat: re-verifying the
    # same few would time SQLite's warm page cache, not a session's cost.
    step = max(1, len(ids) // 50)
    samples = iter([ids[r + 1 :: step][:50] for r in range(repeats)])
    with Runtime(home, project) as rt:
        rt.verify(ids[0])  # warm-up: the connections parse the schema once

        def singles() -> int:
            sample = next(samples)
            for sid in sample:
                assert rt.verify(sid).ok
            return len(sample)

        took, count = best_of(repeats, singles)
        one = took / count
        every, report = best_of(repeats, rt.verify)
        assert report.ok and len(report.sessions) == sessions
    where = ["--home", str(home), "--project", str(project)]
    cli, _ = child([*CLEW, "verify", "--all", *where])
    single_cli, _ = child([*CLEW, "verify", ids[-1], *where])
    baseline = one * sessions
    print(f"## verify --all of {sessions:,} small sessions (built in {built:.0f} s)\n")
    print("| case | s | ms per session | × (one session × N) |")
    print("|---|---|---|---|")
    name = f"`Runtime.verify(sid)` × {sessions:,}, baseline"
    print(f"| {name} | {baseline:.2f} | {one * 1000:.2f} | 1.00 |")
    print(
        f"| `Runtime.verify()` (all) | {every:.2f} | {every / sessions * 1000:.2f}"
        f" | {every / baseline:.2f} |"
    )
    print(f"| `clew verify --all` (process) | {cli:.2f} | {cli / sessions * 1000:.2f} | - |")
    print(f"| `clew verify SID` (process, one session) | {single_cli:.2f} | - | - |")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--sessions", type=int, default=2_000, help="0: skip verify --all")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build the data here and keep it")
    ap.add_argument("--startup-only", action="store_true", help="only the CLI's start")
    args = ap.parse_args()
    if Path(actors.__file__).resolve().parents[1] != ROOT:
        sys.exit(f"measuring {actors.__file__}, not this checkout: run with PYTHONPATH=.")
    # The library logs a line per Task WAL opened at info; the CLI renders warnings only.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_cli_"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        bench_startup(base, args.repeats)
        if args.startup_only:
            return
        bench_timeline(base, args.events, args.repeats)
        bench_first_page(base / "timeline", base, args.repeats)
        if args.sessions:
            bench_verify(base, args.sessions, args.repeats)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
