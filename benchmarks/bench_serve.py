"""Serve-pool benchmark: N ``clew serve`` processes on one PostgreSQL, a 200 ms model.

For each N in ``--procs`` (1, 2, 4, 8): a fresh database holding the events, the leases
and the queue (``--store URL``); N ``clew serve --concurrency C`` processes started and
idle; then ``--runs`` runs of the demo's shape (a routed plan, three workers with two
tools each, a review: nine model calls) queued at once. Each model call is a real call of
the OpenAI adapter to a loopback OpenAI-compatible server answering after ``--latency``
seconds (``tests/helpers/_model_server.py``). Prints per N:

- runs/s (queue rows done ÷ wall time from the submit to the last row done) and its
  ratio to N = 1;
- the database's CPU per run: user + system time of the server's processes (the
  postmaster's reaped children and its live backends, from ``/proc``) — exact for the
  server this benchmark starts, sampled (``--url``: only backends of the benchmark's
  database, a lower bound) on a shared one;
- the idle cost before the runs: transactions/s per idle serve (``pg_stat_database``)
  and its database CPU.

Not a test: numbers depend on the machine (2 cores shared here: 8 processes compete
with the database for them).

    python benchmarks/bench_serve.py [--quick] [--url postgresql://…] [--procs 1,2,4,8]
        [--runs 400] [--concurrency 8] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "helpers")]

import psycopg  # noqa: E402
from _model_server import LoopbackModelServer  # noqa: E402
from _postgres import bin_dir, drop_database, fresh_database, start_server  # noqa: E402

from actors.runtime.coord.postgres import PostgresCoordinator  # noqa: E402
from actors.runtime.coord.protocol import RunSpec  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def _postgres_pids(database: str | None) -> dict[int, str]:
    """Live postgres processes (pid → cmdline); only backends of ``database`` if given."""
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        if not cmd.startswith("postgres"):
            continue
        if database is None or f" {database} " in f" {cmd} ":
            out[int(entry.name)] = cmd
    return out


class DatabaseCpu:
    """CPU seconds the database server spent, between :meth:`start` and :meth:`seconds`.

    Own server (``postmaster`` known): its reaped children's times plus its live
    processes'. A shared server: the backends of one database, sampled by :meth:`sample`
    (a backend that ends between two samples loses its last interval).
    """

    def __init__(self, postmaster: int | None, database: str) -> None:
        self.postmaster = postmaster
        self.database = database
        self._seen: dict[int, float] = {}
        self._base = 0.0

    def _total(self) -> float:
        if self.postmaster is None:
            return sum(self._seen.values())
        fields = _stat(self.postmaster)
        assert fields is not None, "the benchmark's server stopped"
        total = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        for pid in _postgres_pids(None):
            if (
                pid != self.postmaster
                and (f := _stat(pid)) is not None
                and int(f[1]) == self.postmaster
            ):
                total += int(f[11]) + int(f[12])
        return total / TICKS

    def sample(self) -> None:
        if self.postmaster is not None:
            return
        for pid in _postgres_pids(self.database):
            if (f := _stat(pid)) is not None:
                self._seen[pid] = (int(f[11]) + int(f[12])) / TICKS

    def start(self) -> None:
        self.sample()
        self._base = self._total()

    def seconds(self) -> float:
        self.sample()
        return self._total() - self._base


def _postmaster_of(url: str) -> int | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT setting FROM pg_settings WHERE name = 'data_directory'"
        ).fetchone()
    assert row is not None
    pidfile = Path(row[0]) / "postmaster.pid"
    try:
        return int(pidfile.read_text().split()[0])
    except OSError:
        return None


def _transactions(url: str, database: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            (database,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _cpu_of(procs: list[subprocess.Popen[bytes]]) -> float:
    """User + system CPU seconds the processes used so far."""
    fields = [_stat(p.pid) for p in procs]
    return sum(int(f[11]) + int(f[12]) for f in fields if f is not None) / TICKS


@dataclass
class Result:
    procs: int
    runs: int
    seconds: float
    db_cpu_s: float
    serve_cpu_s: float
    idle_tps_per_serve: float
    idle_cpu_ms_per_s: float
    connections: int

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.seconds


@contextmanager
def _serves(
    n: int, url: str, tmp: Path, model_url: str, concurrency: int, extra: list[str]
) -> Iterator[list[subprocess.Popen[bytes]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLEW_")}
    env["PYTHONPATH"] = str(ROOT)
    env["CLEW_TEST_MODEL_URL"] = model_url
    procs = []
    outs = []
    for i in range(n):
        out = (tmp / f"serve{i}.out").open("wb")
        outs.append(out)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    *("-m", "actors", "serve", "--home", str(tmp / "home")),
                    *("--project", str(tmp / "project"), "--store", url),
                    *("--app", "tests.helpers._serve_app:recipes"),
                    *("--concurrency", str(concurrency), *extra),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=ROOT,
            )
        )
    try:
        deadline = time.monotonic() + 120
        while not all(
            (tmp / f"serve{i}.out").read_text().startswith("serving as") for i in range(n)
        ):
            assert time.monotonic() < deadline, "the serve processes did not start"
            for p, i in zip(procs, range(n), strict=True):
                assert p.poll() is None, (tmp / f"serve{i}.out").read_text()
            time.sleep(0.1)
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for out in outs:
            out.close()


def one(
    n: int,
    server: str,
    postmaster: int | None,
    runs: int,
    args: argparse.Namespace,
    extra: list[str],
) -> Result:
    url = fresh_database(server)
    database = url.rsplit("/", 1)[1]
    tmp = Path(tempfile.mkdtemp(prefix=f"clew-bench-serve-{n}-"))
    (tmp / "project").mkdir()
    try:
        coord = PostgresCoordinator(url)
        with (
            LoopbackModelServer(args.latency) as model,
            _serves(n, url, tmp, model.base_url, args.concurrency, extra) as procs,
        ):
            cpu = DatabaseCpu(postmaster, database)
            time.sleep(1.0)  # the serves' first recovery and take are behind them
            before = _transactions(server, database)
            cpu.start()
            time.sleep(args.idle)
            idle_cpu = cpu.seconds()
            idle_tps = (_transactions(server, database) - before) / args.idle / n

            cpu.start()
            serve_cpu = _cpu_of(procs)
            t0 = time.monotonic()
            for i in range(runs):
                coord.submit(
                    RunSpec(
                        prompt=f"Plan a small notes app, variant {i}.",
                        model="loopback",
                        tools="demo",
                    )
                )
            connections = 0
            while True:
                rows = coord.list_runs(runs)
                if all(r.status == "done" for r in rows):
                    break
                for i, p in enumerate(procs):
                    assert p.poll() is None, (tmp / f"serve{i}.out").read_text()[-2000:]
                with psycopg.connect(url, autocommit=True) as conn:
                    row = conn.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
                    ).fetchone()
                    assert row is not None
                    connections = max(connections, int(row[0]))
                cpu.sample()
                time.sleep(0.2)
            seconds = time.monotonic() - t0
            db_cpu = cpu.seconds()
            serve_cpu = _cpu_of(procs) - serve_cpu
            bad = [r for r in rows if r.outcome != "completed"]
            assert not bad, bad[:3]
        coord.close()
        idle_ms = idle_cpu / args.idle / n * 1000
        return Result(n, runs, seconds, db_cpu, serve_cpu, idle_tps, idle_ms, connections)
    finally:
        drop_database(server, url)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--url",
        default=os.environ.get("CLEW_TEST_PG"),
        help="a PostgreSQL server (default: start one, fsync on)",
    )
    parser.add_argument("--procs", default="1,2,4,8")
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="80 runs")
    parser.add_argument("--concurrency", type=int, default=8, help="runs at once per serve")
    parser.add_argument("--latency", type=float, default=0.2, help="model latency (s)")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle, measured")
    parser.add_argument("--max-connections", type=int, default=600, help="of the server it starts")
    parser.add_argument("--serve-arg", action="append", default=[], help="an extra clew serve flag")
    args = parser.parse_args()
    # SIGTERM ends it like Ctrl-C: the serves are stopped and the server it started too.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(1))
    runs = 80 if args.quick else args.runs
    if args.url:
        server, postmaster, where = args.url, None, "the given server (CPU sampled)"
    else:
        found = bin_dir()
        assert found is not None, "PostgreSQL is not installed: give --url"
        server = start_server(found, fsync=True, max_connections=args.max_connections)
        postmaster = _postmaster_of(server)
        where = "a server of its own (fsync on, synchronous_commit on)"
    print(
        f"{runs} queued demo runs (9 model calls of {args.latency * 1000:.0f} ms each),"
        f" --concurrency {args.concurrency}, {where}, {os.cpu_count()} cores"
    )
    print(
        "procs  runs/s  ×1     db CPU ms/run  serve CPU ms/run  peak conns  idle tx/s/serve"
        "  idle db CPU ms/s/serve"
    )
    base: float | None = None
    for n in (int(x) for x in args.procs.split(",")):
        r = one(n, server, postmaster, runs, args, args.serve_arg)
        base = base or r.runs_per_s
        print(
            f"{n:>5}  {r.runs_per_s:6.2f}  {r.runs_per_s / base:4.2f}×"
            f"  {r.db_cpu_s / r.runs * 1000:13.1f}  {r.serve_cpu_s / r.runs * 1000:16.1f}"
            f"  {r.connections:>10}  {r.idle_tps_per_serve:15.1f}  {r.idle_cpu_ms_per_s:22.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
