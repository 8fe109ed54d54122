"""clew side by side with eventsourcing, LangGraph (SqliteSaver) and DBOS, in one run.

Run from the checkout (see README.md beside this file)::

    python3 -m pip install '.[bench]'      # the peers; never needed by the tests
    PYTHONPATH=. python3 benchmarks/peers/run.py [--cases 1,2,3,4,5] [--quick]
    PYTHONPATH=. python3 benchmarks/peers/run.py --postgres   # one durable step on PostgreSQL

Every system writes SQLite with ``synchronous=FULL`` in WAL mode. Prints one table per
case with ratios to clew measured in the same run; a peer that cannot be imported here is
reported as "peer unavailable" and the rest still runs. Not a test: only ratios travel.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import _clew  # noqa: E402
import bench_replay  # noqa: E402
from _common import (  # noqa: E402
    CHECKPOINTS,
    TURN_WINDOW,
    Point,
    Unavailable,
    prose,
    reply_text,
    timed,
    user_text,
)

from eventlog.sqlite import SQLiteStore  # noqa: E402
from eventlog.writer import Writer  # noqa: E402
from projections import rebuild  # noqa: E402

PEERS = ("_eventsourcing", "_langgraph", "_dbos")


def load_peers() -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Import each peer's side; return (name → module, name → why unavailable)."""
    found: dict[str, ModuleType] = {}
    missing: dict[str, str] = {}
    for mod in PEERS:
        name = mod.strip("_")
        try:
            m = importlib.import_module(mod)
        except (Unavailable, ImportError) as e:
            missing[name] = str(e)
            continue
        found[m.NAME] = m
    return found, missing


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


#: Printed for a marginal cost that is not above zero: the run of 2n turns was no slower
#: than the run of n (``--quick``'s 3 turns are within one fsync's jitter), so there is no
#: time to print, and no ratio.
BELOW_NOISE = "below noise"


def marginal_ms(v: float) -> str:
    """Milliseconds of a marginal cost, or :data:`BELOW_NOISE` when it is not above zero."""
    return f"{v * 1e3:.2f}" if v > 0 else BELOW_NOISE


def marginal_ratio(a: float, b: float | None) -> str:
    """``a ÷ b`` of two marginal costs; "-" when either is below the noise."""
    return ratio(a, b) if b is not None and a > 0 and b > 0 else "-"


def table(head: list[str], rows: list[list[Any]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()


# --- case 1 ----------------------------------------------------------------------------------


def case_steps(root: Path, peers: dict[str, ModuleType], steps: int, rounds: int) -> None:
    """One durable step per commit, in lockstep rounds (each round rotates the order)."""
    makers: dict[str, Callable[[Path], Any]] = {
        "clew": _clew.ClewSteps,
        "SQLite alone: INSERT + COMMIT (floor)": _clew.SqliteFloor,
    }
    if "eventsourcing" in peers:
        makers["eventsourcing"] = peers["eventsourcing"].EsSteps
    if "LangGraph" in peers:
        makers["LangGraph put"] = peers["LangGraph"].LgSteps
    if "DBOS" in peers:
        per = max(1, steps // rounds)
        makers["DBOS step"] = lambda f: peers["DBOS"].DbosSteps(f, per)
    names = list(makers)
    sides = {n: makers[n](root / f"steps_{i}") for i, n in enumerate(names)}
    spent = dict.fromkeys(names, 0.0)
    per_round = max(1, steps // rounds)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            side = sides[n]
            base = r * per_round

            def run(side: Any = side, base: int = base) -> None:
                for i in range(base, base + per_round):
                    side.step(i)

            spent[n] += timed(run)
    for side in sides.values():
        side.close()
    done = per_round * rounds
    rate = {n: done / spent[n] for n in names}
    cpu = {n: step_cpu(makers[n], root / f"cpu_{i}", done) for i, n in enumerate(names)}
    per_step = {n: user + system for n, (user, system) in cpu.items()}
    print(f"## 1. One durable step (node + event), {done} steps each, {rounds} lockstep rounds\n")
    table(
        [
            "system",
            "steps/s",
            "clew ÷ system",
            "process CPU µs per step (user + system)",
            "clew CPU ÷ system",
            "user µs",
        ],
        [
            [
                n,
                f"{rate[n]:,.0f}",
                ratio(rate["clew"], rate[n]),
                f"{per_step[n] * 1e6:,.0f}",
                ratio(per_step["clew"], per_step[n]),
                f"{cpu[n][0] * 1e6:,.0f}",
            ]
            for n in names
        ],
    )
    if "LangGraph put" in per_step:
        print(
            "target: clew's process CPU per step ≤ LangGraph put's:"
            f" {ratio(per_step['clew'], per_step['LangGraph put'])}\n"
        )


def step_cpu(make: Callable[[Path], Any], folder: Path, steps: int) -> tuple[float, float]:
    """Return the process's user and system CPU seconds per step of a side run alone.

    After the lockstep rounds, one side at a time (DBOS last: its background threads
    would count in every side's time), so the process's CPU (every thread: clew's writer
    does its work on its own) is the side's. It does not wait on the disk as the wall
    clock does; the system part holds the kernel's side of each fsync.
    """
    side = make(folder)
    try:
        gc.collect()
        t0 = resource.getrusage(resource.RUSAGE_SELF)
        for i in range(steps):
            side.step(i)
        t1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        side.close()
    return (t1.ru_utime - t0.ru_utime) / steps, (t1.ru_stime - t0.ru_stime) / steps


# --- case 2 ----------------------------------------------------------------------------------


def case_conversation(
    root: Path, peers: dict[str, ModuleType], checkpoints: tuple[int, ...]
) -> None:
    """A conversation growing to ``max(checkpoints)`` messages: time and bytes, per doubling."""
    sides: dict[str, Callable[[Path, tuple[int, ...]], list[Point]]] = {
        "clew Runtime": _clew.conversation,
        "clew eventlog, messages alone (floor)": _clew.eventlog_messages,
    }
    for name, m in peers.items():
        sides[name] = m.conversation
    # Case 5 reopens each system's conversation from conv_<first word of its name>.
    results = {
        n: fn(root / ("conv_clew_floor" if "floor" in n else f"conv_{n.split()[0]}"), checkpoints)
        for n, fn in sides.items()
    }
    print(f"## 2. A conversation of {max(checkpoints)} messages (user + reply per turn)\n")
    rows = []
    for n, points in results.items():
        for k, (msgs, secs, size, *_) in enumerate(points):
            growth = f"{size / points[k - 1][2]:.2f}" if k else "-"
            rows.append(
                [n, msgs, f"{secs:.2f}", f"{size / 1e6:.3f}", f"{size / msgs:,.0f}", growth]
            )
    table(
        [
            "system",
            "messages",
            "s (cumulative)",
            "MB on disk",
            "bytes per message",
            "× per doubling",
        ],
        rows,
    )
    last = {n: p[-1] for n, p in results.items()}
    clew = last["clew Runtime"]
    table(
        ["at the last checkpoint", "clew bytes ÷ system", "clew time ÷ system"],
        [
            [n, ratio(clew[2], v[2]), ratio(clew[1], v[1])]
            for n, v in last.items()
            if n != "clew Runtime"
        ],
    )
    # A turn's own time at the first and the last size: flat means the runtime's cost
    # does not grow with the conversation (issue 34: clew's ≤ 1.2×).
    small, large = min(checkpoints), max(checkpoints)
    # The process CPU beside the wall clock: a loaded machine's fsyncs move the wall
    # clock by several times between two sizes, not the CPU a turn uses.
    first = {n: p[0][3:] for n, p in results.items()}
    final = {n: p[-1][3:] for n, p in results.items()}
    print(f"A turn's time (median of the {TURN_WINDOW} turns before each size):\n")
    table(
        [
            "system",
            f"wall ms at {small} msgs",
            f"at {large}",
            f"{large} ÷ {small} (flat: 1)",
            f"clew ÷ system at {large}",
            f"process CPU ms at {small}",
            f"at {large}",
            f"{large} ÷ {small}",
            f"clew CPU ÷ system at {large}",
        ],
        [
            [
                n,
                f"{first[n][0] * 1e3:.2f}",
                f"{final[n][0] * 1e3:.2f}",
                ratio(final[n][0], first[n][0]),
                ratio(final["clew Runtime"][0], final[n][0]),
                f"{first[n][1] * 1e3:.2f}",
                f"{final[n][1] * 1e3:.2f}",
                ratio(final[n][1], first[n][1]),
                ratio(final["clew Runtime"][1], final[n][1]),
            ]
            for n in results
        ],
    )
    clew_first, clew_final = first["clew Runtime"], final["clew Runtime"]
    print(
        f"target: clew's turn at {large} ≤ 1.2× its turn at {small}:"
        f" {ratio(clew_final[0], clew_first[0])} wall, {ratio(clew_final[1], clew_first[1])} CPU\n"
    )


# --- case 3 ----------------------------------------------------------------------------------


def _nothing() -> None:
    pass


def case_rebuild(
    root: Path, peers: dict[str, ModuleType], n: int, dbos_n: int, repeats: int
) -> None:
    """Read back and rebuild ``n`` events: clew's rebuild and the naive fold; peers' read-all."""
    db = root / "rebuild_clew" / "sessions.sqlite"
    db.parent.mkdir(parents=True)
    writer = Writer(SQLiteStore(db))
    bench_replay.build_replay_session(writer, "replay", n, random.Random(20260612))
    writer.stop()
    store = SQLiteStore(db)
    events = store.count_events("replay")
    payload = prose(7, 300)
    counts = {"clew rebuild": events, "naive fold (floor)": events}
    cases: dict[str, Callable[[], Any]] = {
        "clew rebuild": lambda: rebuild(store.iter_events("replay"), "replay"),
        "naive fold (floor)": lambda: bench_replay.naive_fold(db, "replay"),
    }
    best: dict[str, float] = {}
    # DBOS is one per process: each peer is set up, read and closed in turn, and clew's
    # two cases are timed again beside each, so every pair shares the machine's moment.
    for name, m in {"": None, **peers}.items():
        now = dict(cases)
        close: Callable[[], Any] = _nothing
        if m is not None:
            counts[name] = dbos_n if name == "DBOS" else n
            handle = m.write_events(root / f"rebuild_{name}", counts[name], payload)
            read, close = m.reader(root / f"rebuild_{name}", handle)
            now[name] = read
        try:
            for _ in range(repeats):  # interleaved repeats, the best of each kept
                for k, fn in now.items():
                    t = timed(fn)
                    best[k] = min(best.get(k, t), t)
        finally:
            close()
    cases.update({k: (lambda: None) for k in counts if k not in cases})
    rate = {k: counts[k] / best[k] for k in cases}
    print(f"## 3. Read back and rebuild ({events:,} clew events; best of {repeats})\n")
    table(
        ["system", "events", "s", "events/s", "clew ÷ system"],
        [
            [
                k,
                f"{counts[k]:,}",
                f"{best[k]:.3f}",
                f"{rate[k]:,.0f}",
                ratio(rate["clew rebuild"], rate[k]),
            ]
            for k in cases
        ],
    )


# --- case 4 ----------------------------------------------------------------------------------


def case_turn(root: Path, peers: dict[str, ModuleType], turns: int, repeats: int) -> None:
    """Marginal cost of one agent turn with one tool: (T(2n) − T(n)) / n, best of repeats."""
    commits: dict[str, list[int]] = {}

    def clew(durability: str, group: bool) -> Callable[[Path, int], float]:
        name = f"clew worker, durability={durability}" + ("" if group else ", commit per event")
        counted = commits.setdefault(name, [])
        return lambda f, k: _clew.worker_run(f, durability, k, group_commits=group, commits=counted)

    # Group commits (issue 17) beside one commit per event, the clew before them: the
    # same run measures both, so the machine's moment is shared.
    sides: dict[str, Callable[[Path, int], float]] = {
        "clew worker, durability=full": clew("full", True),
        "clew worker, durability=normal": clew("normal", True),
        "clew worker, durability=full, commit per event": clew("full", False),
        "clew worker, durability=normal, commit per event": clew("normal", False),
    }
    if "LangGraph" in peers:
        sides["LangGraph, sync SqliteSaver"] = peers["LangGraph"].agent_run
    if "DBOS" in peers:
        sides["DBOS workflow"] = peers["DBOS"].agent_run
    # The best of each size over the repeats, then the difference: a difference per repeat
    # is at the mercy of one slow fsync in either run.
    small: dict[str, float] = {}
    large: dict[str, float] = {}
    for r in range(repeats):
        for i, (name, fn) in enumerate(sides.items()):
            a = fn(root / f"turn_{r}_{i}_a", turns)
            b = fn(root / f"turn_{r}_{i}_b", 2 * turns)
            small[name] = min(small.get(name, a), a)
            large[name] = min(large.get(name, b), b)
    marginal = {name: (large[name] - small[name]) / turns for name in sides}
    floor = min(_clew.pykka_turns(2 * turns) / (2 * turns) for _ in range(repeats))
    marginal["bare pykka loop, 7 asks"] = floor
    print(f"## 4. Marginal cost of an agent turn with one tool ({turns} vs {2 * turns} turns)\n")
    full, normal = (
        marginal["clew worker, durability=full"],
        marginal["clew worker, durability=normal"],
    )
    lg = marginal.get("LangGraph, sync SqliteSaver")
    table(
        ["system", "ms per turn", "÷ LangGraph", "÷ bare pykka"],
        [
            [n, marginal_ms(v), marginal_ratio(v, lg), marginal_ratio(v, floor)]
            for n, v in marginal.items()
        ],
    )
    print(
        f"targets: full ≤ 0.5× LangGraph: {marginal_ratio(full, lg)};"
        f" normal ≤ 4× bare pykka: {marginal_ratio(normal, floor)}\n"
    )
    # Runs alternate small, large: each side's counts are [n, 2n, n, 2n, …] (deterministic).
    table(
        ["clew side", f"commits ({turns} turns)", f"commits ({2 * turns} turns)", "per turn"],
        [
            [name, c[0], c[1], f"{(c[1] - c[0]) / turns:.2f}"]
            for name, c in commits.items()
            if len(c) >= 2
        ],
    )


# --- case 5 ----------------------------------------------------------------------------------


def case_ready(root: Path, peers: dict[str, ModuleType], repeats: int) -> None:
    """Process start → ready to resume, on the stores case 2 left (subprocess wall time)."""
    sid = _clew.interrupt(root / "conv_clew")
    argvs: dict[str, list[str]] = {
        "python -c (floor)": [sys.executable, "-c", "print('ready')"],
        "clew Runtime.resume_ready": _clew.ready_argv(root / "conv_clew", sid),
    }
    for name, m in peers.items():
        argvs[name] = m.ready_argv(root / f"conv_{name}")
    best: dict[str, float] = {}
    # The clew child must import this checkout, whatever is installed.
    repo = str(HERE.parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    for _ in range(repeats):
        for name, argv in argvs.items():
            t0 = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
            t = time.perf_counter() - t0
            if done.returncode != 0 or "ready" not in done.stdout:
                raise SystemExit(f"{name}: the ready child failed:\n{done.stderr[-2000:]}")
            best[name] = min(best.get(name, t), t)
    clew = best["clew Runtime.resume_ready"]
    print(f"## 5. Process start → ready to resume (best of {repeats})\n")
    table(
        ["system", "s", "clew ÷ system"],
        [[n, f"{v:.3f}", ratio(clew, v)] for n, v in best.items()],
    )


def make_texts(n: int) -> None:
    """Make (and cache) the workload's first ``n`` texts before anything is timed: every
    side times its own step, not the making of the text it stores."""
    for i in range(n):
        user_text(i)
        reply_text(i)


def check_durability() -> None:
    """Every peer's connection gets SQLite's built-in default unless it sets one: check it."""
    opts = {r[0] for r in sqlite3.connect(":memory:").execute("PRAGMA compile_options")}
    for want in ("DEFAULT_SYNCHRONOUS=2", "DEFAULT_WAL_SYNCHRONOUS=2"):
        if want not in opts:
            raise SystemExit(f"this sqlite3 build lacks {want}: the peers would not fsync alike")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="1,2,3,4,5")
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--rebuild-events", type=int, default=100_000)
    ap.add_argument(
        "--dbos-rebuild-events",
        type=int,
        default=2_000,
        help="DBOS writes ~40 steps/s here, so it reads back fewer (a rate)",
    )
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    check_durability()
    cases = {int(c) for c in args.cases.split(",")}
    checkpoints = CHECKPOINTS
    if args.quick:
        args.steps, args.rebuild_events, args.dbos_rebuild_events = 40, 5_000, 200
        args.turns, args.repeats, checkpoints = 3, 1, (10, 20, 40, 80)
    peers, missing = load_peers()
    root = args.keep or Path(tempfile.mkdtemp(prefix="clew_peers_"))
    print(f"# clew and its peers, one run ({time.strftime('%Y-%m-%d %H:%M')}, {root})\n")
    for name, why in missing.items():
        print(f"- {name}: peer unavailable ({why})")
    print()
    make_texts(max(args.steps, *checkpoints) + 1)
    try:
        if 1 in cases:
            case_steps(root, peers, args.steps, rounds=10)
        if 2 in cases or 5 in cases:
            case_conversation(root, peers, checkpoints)
        if 3 in cases:
            case_rebuild(root, peers, args.rebuild_events, args.dbos_rebuild_events, args.repeats)
        if 4 in cases:
            case_turn(root, peers, args.turns, args.repeats)
        if 5 in cases:
            case_ready(root, peers, args.repeats)
    finally:
        if "_dbos" in sys.modules:
            sys.modules["_dbos"].shutdown()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def main_postgres() -> None:
    """``--postgres``: the PostgreSQL peers instead (postgres_steps.py, its own options)."""
    import postgres_steps  # noqa: PLC0415 - needs psycopg, which the cases above do not

    postgres_steps.main([a for a in sys.argv[1:] if a != "--postgres"])


if __name__ == "__main__":
    if "--postgres" in sys.argv[1:]:
        main_postgres()
    else:
        main()
