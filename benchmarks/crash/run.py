"""The crash suite: one support-desk agent, killed at every step, in clew and its peers.

Usage (from the checkout; the peers are the ``bench`` extra, never needed by the tests)::

    PYTHONPATH=. python3 benchmarks/crash/run.py --jobs 2        # every system, >= 50 kills each
    PYTHONPATH=. python3 benchmarks/crash/run.py --quick         # >= 10 kills each (CI)
    PYTHONPATH=. python3 benchmarks/crash/run.py --systems clew,langgraph --seed 7 --json out.json
    PYTHONPATH=. python3 benchmarks/crash/run.py --report out.json   # the table of a --json file

For each system: an uninterrupted run first (it must answer right with exactly one refund,
else the system's row says "baseline wrong"), then one trial per kill point: a child process
runs the scenario and is SIGKILLed at the point, a second child recovers it the way the
system's docs say and runs it to the end. Each durable system is measured again with no
durability (recovery = start over) as its baseline. A system whose packages are not
installed is a row saying so. The method is in docs/reliability.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenario  # noqa: E402 - after the path insert, as the children do
from server import ModelServer  # noqa: E402

#: key → (module, the distributions it needs)
SYSTEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "clew": ("sys_clew", ("actors",)),
    "dbos": ("sys_dbos", ("dbos", "pydantic_ai")),
    "langgraph": (
        "sys_langgraph",
        ("langgraph", "langchain_openai", "langgraph.checkpoint.sqlite"),
    ),
    "agents": ("sys_agents", ("agents", "openai")),
    "clew_stream": ("sys_clew_stream", ("actors",)),
    "clew_pai": ("sys_clew_pai", ("actors", "pydantic_ai")),
    "clew_agents": ("sys_clew_agents", ("actors", "agents", "openai")),
}
#: Columns the issue asks for that clew does not have yet (printed, never run).
NOT_YET: dict[str, str] = {}
TOOL_POINTS = (
    f"{scenario.LOOKUP_TOOL}:enter",
    f"{scenario.REFUND_TOOL}:enter",
    f"{scenario.REFUND_TOOL}:written",
)


@dataclass
class KillPoint:
    """Where a trial's first child dies: a fault env, a model request, or a random instant."""

    label: str
    env: dict[str, str] = field(default_factory=dict)
    request: int | None = None
    when: str = "before"
    at: float | None = None


@dataclass
class Outcome:
    """What one kill cost."""

    point: str
    killed: bool
    recovered: bool = False
    refunds: int = 0
    refund_runs: int = 0
    repaid: int = 0
    in_flight: int = 0
    lost: int = 0
    ready_s: float | None = None
    recovery_s: float = 0.0
    bytes: int = 0
    error: str = ""


@dataclass
class Baseline:
    """The uninterrupted run's counts: what every trial is compared with."""

    ok: bool
    requests: int = 0
    committed: list[str] = field(default_factory=list)
    work_s: float = 0.0
    wall_s: float = 0.0
    bytes: int = 0
    error: str = ""


@dataclass
class Row:
    """One system (or its no-durability baseline) in the table."""

    name: str
    status: str = "ok"
    baseline: Baseline | None = None
    outcomes: list[Outcome] = field(default_factory=list)


def disk_bytes(folder: Path) -> int:
    """Return the bytes of every file under ``folder`` but SQLite's ``-shm`` index."""
    if not folder.exists():
        return 0
    return sum(
        p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.name.endswith("-shm")
    )


class Runner:
    """Runs the trials of the chosen systems against one loopback model server."""

    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.server = ModelServer(delay=args.delay).start()
        self.rng = random.Random(args.seed)
        self.counter = 0
        self.lock = threading.Lock()
        #: Every row so far, the one being measured included (``--json`` after each kill).
        self.rows: list[Row] = []

    # --- processes ----------------------------------------------------------------------

    def _env(self, extra: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLEW_FAULT_", "CRASH_"))}
        root = str(HERE.parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env.pop("CLEW_HOME", None)
        env.update(extra)
        return env

    def _spawn(self, key: str, mode: str, trial: Path, tid: str, env: dict[str, str]) -> Any:
        argv = [sys.executable, str(HERE / "child.py"), key, mode, str(trial)]
        argv.append(self.server.base_url(tid))
        return subprocess.Popen(
            argv,
            env=self._env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def _finish(self, proc: Any) -> tuple[int, dict[str, Any], str]:
        """Wait for ``proc``; return its exit code, its JSON lines merged, its stderr tail."""
        try:
            out, err = proc.communicate(timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err = f"timed out after {self.args.timeout} s; " + err
        lines: dict[str, Any] = {}
        for line in out.splitlines():
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                if isinstance(item, dict):
                    lines.update(item)
        return proc.returncode, lines, err.strip().splitlines()[-1] if err.strip() else ""

    def _new_trial(self, name: str) -> tuple[Path, str]:
        with self.lock:
            self.counter += 1
            tid = f"{self.counter}"
        trial = self.work / f"{name.replace(' ', '_')}-{tid}"
        trial.mkdir(parents=True)
        return trial, tid

    # --- one system ---------------------------------------------------------------------

    def baseline(self, key: str, system: ModuleType, durable: bool) -> Baseline:
        """Run the scenario once, uninterrupted; it must answer right with one refund."""
        trial, tid = self._new_trial(f"{key}-baseline")
        t0 = time.monotonic()
        proc = self._spawn(key, "run", trial, tid, {"CRASH_DURABLE": "1" if durable else "0"})
        rc, out, err = self._finish(proc)
        wall = time.monotonic() - t0
        seen = self.server.trial(tid)
        keys = scenario.ledger_keys(trial)
        ok = rc == 0 and scenario.is_correct(out.get("answer"), trial) and len(keys) == 1
        base = Baseline(ok=ok, requests=seen.received, wall_s=wall, bytes=disk_bytes(trial))
        # random kills land between the first model request and the last reply
        base.work_s = max(0.05, seen.last_at - seen.first_at)
        base.committed = system.committed(trial) if durable else []
        if not ok:
            base.error = f"exit {rc}, {len(keys)} refunds, answer {out.get('answer')!r}: {err}"
        return base

    def plan(self, system: ModuleType, base: Baseline, durable: bool) -> list[KillPoint]:
        """Return the kill points: every boundary, seeded random instants; fewer if quick.

        Without durability, every step boundary is the same (everything is lost), so that
        row takes ``--kills-no-durability`` points: the must-haves, then random ones.
        """
        kills = self.args.kills if durable else self.args.kills_no_durability
        generic = [KillPoint(f"tool {p}", env={scenario.KILL_TOOL: p}) for p in TOOL_POINTS]
        for k in range(1, base.requests + 1):
            generic.append(KillPoint(f"model request {k} before reply", request=k))
            generic.append(KillPoint(f"model request {k} mid reply", request=k, when="mid"))
        own = []
        if durable:
            for env in system.boundaries(base.committed, len(TOOL_POINTS) - 1):
                own.append(KillPoint(" ".join(f"{k}={v}" for k, v in env.items()), env=env))
        if self.args.quick or not durable:
            # always the refund after its ledger write and a reply cut in the middle
            must = [
                p
                for p in generic
                if p.label.endswith(":written") or p.label.endswith("2 mid reply")
            ]
            chosen = list(must)
            rest = [p for p in generic if p not in must]
            chosen += self.rng.sample(rest, min(3, len(rest)))
            chosen += self.rng.sample(own, min(5, len(own)))
            randoms = kills - len(chosen)
        else:
            chosen = generic + own
            randoms = max(10, kills - len(chosen))
        return chosen + self._randoms(base, max(2, randoms))

    def _randoms(self, base: Baseline, n: int) -> list[KillPoint]:
        """Return ``n`` seeded random instants within the baseline's model working window."""
        out = []
        for _ in range(n):
            at = round(self.rng.uniform(0.0, base.work_s), 3)
            out.append(KillPoint(f"random {at:.3f} s into the run", at=at))
        return out

    def _kill_at(self, proc: Any, tid: str, at: float) -> None:
        """SIGKILL ``proc`` ``at`` seconds after its first model request (if still alive)."""
        seen = self.server.trial(tid)
        deadline = time.monotonic() + self.args.timeout
        while seen.received == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(at)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)

    def trial(
        self, key: str, system: ModuleType, point: KillPoint, base: Baseline, durable: bool
    ) -> Outcome:
        """Kill one run at ``point``, recover it, and count what the kill cost."""
        trial, tid = self._new_trial(key)
        flag = {"CRASH_DURABLE": "1" if durable else "0"}
        if point.request is not None:
            self.server.arm(tid, point.request, point.when)
        proc = self._spawn(key, "run", trial, tid, {**flag, **point.env})
        self.server.set_pid(tid, proc.pid)
        if point.at is not None:
            self._kill_at(proc, tid, point.at)
        rc, _, err = self._finish(proc)
        if rc != -signal.SIGKILL:
            return Outcome(point.label, killed=False, error=err if rc else "")
        seen = self.server.trial(tid)
        outcome = Outcome(point.label, killed=True, in_flight=seen.received - seen.answered)
        before = system.committed(trial) if durable else []
        mode = "recover"
        if not durable:  # no durability: start over, in a fresh store
            shutil.rmtree(trial / "store", ignore_errors=True)
            mode = "run"
        t0 = time.time()
        rc, out, err = self._finish(self._spawn(key, mode, trial, tid, flag))
        outcome.recovery_s = time.time() - t0
        if "ready" in out:
            outcome.ready_s = float(out["ready"]) - t0
        keys = scenario.ledger_keys(trial)
        outcome.refunds, outcome.refund_runs = len(set(keys)), len(keys)
        outcome.recovered = rc == 0 and scenario.is_correct(out.get("answer"), trial)
        outcome.repaid = self.server.trial(tid).received - base.requests
        if durable:
            outcome.lost = len(set(before) - set(system.committed(trial)))
        outcome.bytes = disk_bytes(trial / "store")
        if not outcome.recovered:
            outcome.error = f"exit {rc}, answer {out.get('answer')!r}: {err}"[:300]
        return outcome

    def row(self, key: str, system: ModuleType, durable: bool) -> Row:
        name = system.NAME + ("" if durable else " (no durability)")
        row = Row(name)
        self.rows.append(row)
        base = self.baseline(key, system, durable)
        row.baseline = base
        if not base.ok:
            row.status = f"baseline wrong: {base.error}"[:200]
            return row
        points = self.plan(system, base, durable)

        def one(point: KillPoint) -> Outcome:
            outcome = self.trial(key, system, point, base, durable)
            with self.lock:
                row.outcomes.append(outcome)
                if self.args.json:  # a long run that dies keeps what it measured
                    write_json(self.args, self.rows)
            if self.args.verbose:
                print(f"  {name} {point.label}: {outcome}", file=sys.stderr, flush=True)
            return outcome

        target = self.args.kills if durable else self.args.kills_no_durability
        with ThreadPoolExecutor(self.args.jobs) as pool:
            list(pool.map(one, points))
            for _ in range(3):  # a random instant after the run's end kills nothing: top up
                short = target - sum(o.killed for o in row.outcomes)
                if short <= 0:
                    break
                list(pool.map(one, self._randoms(base, short)))
        return row

    def system_rows(self, key: str) -> None:
        """Measure system ``key`` (and its no-durability baseline) into :attr:`rows`."""
        module, needs = SYSTEMS[key]
        missing = [n for n in needs if not _importable(n)]
        if missing:
            status = f"not installed ({', '.join(missing)}): pip install '.[bench]'"
            self.rows.append(Row(key, status=status))
            return
        try:
            system = importlib.import_module(module)
        except ImportError as e:
            self.rows.append(Row(key, status=f"cannot import: {e}"))
            return
        self.row(key, system, durable=True)
        if not self.args.durable_only:
            self.row(key, system, durable=False)


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# --- the table ----------------------------------------------------------------------------


def summary(row: Row) -> dict[str, Any]:
    """Return the row's figures (over the kills that happened)."""
    kills = [o for o in row.outcomes if o.killed]
    n = len(kills)
    ready = [o.ready_s for o in kills if o.ready_s is not None]
    return {
        "system": row.name,
        "status": row.status,
        "kills": n,
        "missed": len(row.outcomes) - n,
        "recovered_pct": 100.0 * sum(o.recovered for o in kills) / n if n else 0.0,
        "duplicate_refunds": sum(max(0, o.refunds - 1) for o in kills),
        "missing_refunds": sum(o.refunds == 0 for o in kills),
        "refund_reruns": sum(max(0, o.refund_runs - o.refunds) for o in kills),
        "repaid_per_recovery": sum(o.repaid for o in kills) / n if n else 0.0,
        "repaid_max": max((o.repaid for o in kills), default=0),
        "repaid_beyond_in_flight": sum(max(0, o.repaid - max(1, o.in_flight)) for o in kills),
        "lost_progress": sum(o.lost for o in kills),
        "median_ready_s": statistics.median(ready) if ready else None,
        "median_recovery_s": statistics.median([o.recovery_s for o in kills]) if n else None,
        "median_bytes": statistics.median([o.bytes for o in kills]) if n else None,
        "baseline_requests": row.baseline.requests if row.baseline else None,
    }


def _fmt(value: Any, spec: str = "") -> str:
    return "—" if value is None else format(value, spec)


def table(rows: list[Row]) -> str:
    head = (
        "| system | kills | recovered | duplicate refunds | missing refunds "
        "| refund re-runs, same key | re-paid calls / recovery (max) | lost progress "
        "| median ready | median recovery | disk |"
    )
    lines = [head, "|" + "---|" * 11]
    for row in rows:
        s = summary(row)
        if row.status != "ok":
            lines.append(f"| {row.name} | {row.status} |" + " |" * 9)
            continue
        lost = _fmt(s["lost_progress"]) if "no durability" not in row.name else "— (none kept)"
        lines.append(
            f"| {row.name} | {s['kills']} | {s['recovered_pct']:.0f}% | {s['duplicate_refunds']} "
            f"| {s['missing_refunds']} | {s['refund_reruns']} "
            f"| {s['repaid_per_recovery']:.2f} ({s['repaid_max']}) "
            f"| {lost} | {_fmt(s['median_ready_s'], '.2f')} s "
            f"| {_fmt(s['median_recovery_s'], '.2f')} s "
            f"| {_fmt(s['median_bytes'] and s['median_bytes'] / 1024, '.0f')} KiB |"
        )
    return "\n".join(lines)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=">= 10 kills per system (CI)")
    p.add_argument(
        "--systems", default=",".join(SYSTEMS), help="comma-separated: " + ",".join(SYSTEMS)
    )
    p.add_argument("--seed", type=int, default=37)
    p.add_argument(
        "--kills", type=int, default=None, help="kills per system (default 50; quick 12)"
    )
    p.add_argument("--json", type=Path, default=None, help="write the raw results here")
    p.add_argument("--work", type=Path, default=None, help="keep the trials' files here")
    p.add_argument("--delay", type=float, default=None, help="seconds the model takes per reply")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a child may run")
    p.add_argument("--durable-only", action="store_true", help="skip the no-durability rows")
    p.add_argument("--kills-no-durability", type=int, default=None, help="default 20; quick 12")
    p.add_argument("--jobs", type=int, default=1, help="trials run at once (one server)")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--report", type=Path, default=None, help="print the table of a --json file")
    args = p.parse_args(argv)
    if args.kills is None:
        args.kills = 12 if args.quick else 50
    if args.kills_no_durability is None:
        args.kills_no_durability = 12 if args.quick else 20
    if args.delay is None:
        args.delay = 0.02 if args.quick else 0.05
    return args


def rows_from_json(path: Path) -> list[Row]:
    """Return the rows a ``--json`` file holds."""
    rows = []
    for r in json.loads(path.read_text())["rows"]:
        base = Baseline(**r["baseline"]) if r.get("baseline") else None
        outcomes = [Outcome(**o) for o in r["outcomes"]]
        rows.append(Row(r["name"], status=r["status"], baseline=base, outcomes=outcomes))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.report:
        print(table(rows_from_json(args.report)))
        return 0
    keys = [k.strip() for k in args.systems.split(",") if k.strip()]
    unknown = [k for k in keys if k not in SYSTEMS]
    if unknown:
        print(f"unknown systems: {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="clew-crash-"))
    work.mkdir(parents=True, exist_ok=True)
    runner = Runner(args, work)
    rows = runner.rows
    t0 = time.monotonic()
    try:
        for key in keys:
            runner.system_rows(key)
    finally:
        runner.server.stop()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    if set(keys) == set(SYSTEMS):
        rows.extend(Row(name, status=why) for name, why in NOT_YET.items())
    print(table(rows))
    print(
        f"\n{platform.node()} · {os.cpu_count()} CPUs · Python {platform.python_version()} · "
        f"seed {args.seed} · {time.monotonic() - t0:.0f} s"
    )
    if args.json:
        write_json(args, rows)
    return 0


def write_json(args: argparse.Namespace, rows: list[Row]) -> None:
    """Write the raw results: every kill's outcome, each row's summary, the machine."""
    doc = {
        "seed": args.seed,
        "quick": args.quick,
        "jobs": args.jobs,
        "delay_s": args.delay,
        "machine": {
            "node": platform.node(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rows": [{"summary": summary(r), **asdict(r)} for r in rows],
    }
    args.json.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    sys.exit(main())
