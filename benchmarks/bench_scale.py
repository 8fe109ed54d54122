"""The sessions list, submit, the queue and leases at 0 and at N sessions (issue 35, "Size").

Usage::

    python3 benchmarks/bench_scale.py --quick
    python3 benchmarks/bench_scale.py --pg postgresql://postgres@127.0.0.1:55432/postgres \\
        --pg-big postgresql://…/filled --sqlite-big /tmp/filled-home

For each backend (SQLite; PostgreSQL with ``--pg``) it measures an empty location (two
demo sessions in it, the older one archived) and a filled one (``--sqlite-big`` /
``--pg-big``: one ``benchmarks/gen_sessions.py`` filled, or made here with ``--sqlite-n``
/ ``--pg-n`` sessions; ``--sqlite-cold F``: the oldest fraction F of them archived in cold
files), each time the median of a few tries:

- a new store's first read (``open_store`` read-only, a session's row: a SQLite
  connection's first statement parses the main file's whole schema);
- as a process (``python3 -m actors …``, beside ``python3 -c pass``): ``sessions --limit
  50 --json`` (the first page), ``show SESSION`` (the newest), ``show`` of the oldest
  archived session (on SQLite in its cold file), ``submit``, ``demo``;
- in one process that keeps its runtime open (what ``clew ui`` and ``clew serve`` do):
  ``/api/sessions``'s first page and a search (``sessions_doc``), a submit, a queue poll
  with nothing to take (``take``; the queue holds N finished runs, as a home that ran N
  runs), a renewal of 20 leases.

It prints a table with each figure's ratio to the empty location (the target: submit ≤ 2×,
a first page ≤ 1 s as a process). Nothing is gated on an absolute time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors import Runtime
from actors.documents.sessions import sessions_doc
from actors.ui.live import ListFeed
from eventlog.locations import is_postgres_url, open_store

ROOT = Path(__file__).resolve().parent.parent


def _median(fn: Callable[[], Any], tries: int) -> float:
    times = []
    for _ in range(tries):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Location:
    """A home or a PostgreSQL database to measure, with the project its sessions use."""

    def __init__(self, name: str, where: str, project: Path, home: Path) -> None:
        self.name = name
        self.where = where
        self.project = project
        self.home = home

    def args(self) -> list[str]:
        if is_postgres_url(self.where):
            return ["--store", self.where, "--home", str(self.home), "--project", str(self.project)]
        return ["--home", self.where, "--project", str(self.project)]

    def runtime(self) -> Runtime:
        if is_postgres_url(self.where):
            return Runtime(self.home, self.project, store=self.where)
        return Runtime(self.where, self.project)


def _clew(loc: Location, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "actors", *argv, *loc.args()],
        capture_output=True,
        text=True,
        env=env,
        cwd=loc.project,
        check=False,
    )


def _fill_queue(loc: Location, rt: Runtime, n: int) -> None:
    """Give the run queue ``n`` finished runs (a home that ran ``n`` runs), by SQL."""
    rt.coordinator()  # creates its tables
    now = time.time()
    sql = (
        "INSERT INTO clew_run_queue (prompt, model, status, attempts, outcome, submitted_at,"
        " started_at, finished_at) SELECT 'p', 'demo', 'done', 1, 'completed', {t}, {t}, {t}"
    )
    if is_postgres_url(loc.where):
        import psycopg  # noqa: PLC0415 - the optional extra

        with psycopg.connect(loc.where) as pg:
            pg.execute(sql.format(t=now) + f" FROM generate_series(1, {n})")
        return
    import apsw  # noqa: PLC0415 - only here

    conn = apsw.Connection(str(Path(loc.where) / "coord.sqlite"))
    conn.set_busy_timeout(10_000)
    conn.execute(
        f"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n}) "
        + sql.format(t=now)
        + " FROM c"
    )
    conn.close()


def _feed_look(rt: Runtime) -> None:
    ListFeed(rt).look()  # a new feed each time: what one tick of every list stream costs


def _first_read(loc: Location, sid: str) -> None:
    store = open_store(loc.where, read_only=True)
    try:
        store.read_session(sid)
    finally:
        store.close()


def measure(loc: Location, queue_rows: int, tries: int) -> dict[str, float]:
    """Every figure of the table for one location."""
    out: dict[str, float] = {}
    sid = archived = ""
    with loc.runtime() as rt:
        page = rt.store.list_sessions_page(limit=1, newest_first=True)
        sid = page[0].session_id if page else ""
        oldest = rt.store.list_sessions_page(limit=20)
        archived = next((r.session_id for r in oldest if r.status == "archived"), "")
        if queue_rows:
            _fill_queue(loc, rt, queue_rows)
        out["api first page"] = _median(lambda: sessions_doc(rt), tries)
        out["api search (text)"] = _median(lambda: sessions_doc(rt, "sync"), tries)
        out["api search (id prefix)"] = _median(lambda: sessions_doc(rt, "sess_2026"), tries)
        out["list feed look"] = _median(lambda: _feed_look(rt), tries)
        coord = rt.coordinator()
        owner = "bench-owner"
        while coord.take(owner) is not None:  # runs a run of this bench left queued
            pass
        out["queue poll"] = _median(lambda: coord.take(owner), tries * 4)
        for i in range(20):
            coord.acquire(f"bench-lease-{i}", owner, 60.0)
        out["lease renewal (20)"] = _median(lambda: coord.renew(owner, 60.0), tries * 4)
        coord.release_all(owner)
        out["submit"] = _median(lambda: rt.submit("hello", model="demo"), tries * 4)
    out["proc: sessions --limit 50"] = _median(
        lambda: _clew(loc, "sessions", "--limit", "50", "--json"), tries
    )
    if sid:
        out["new store: first read"] = _median(lambda: _first_read(loc, sid), tries)
        out["proc: show"] = _median(lambda: _clew(loc, "show", sid), tries)
    if archived:
        out["proc: show (archived)"] = _median(lambda: _clew(loc, "show", archived), tries)
    out["proc: submit"] = _median(lambda: _clew(loc, "submit", "hello"), tries)
    out["proc: demo"] = _median(lambda: _clew(loc, "demo"), max(1, tries // 2))
    return out


def _empty(kind: str, tmp: Path, pg: str | None) -> Location:
    project = tmp / f"{kind}-empty-project"
    project.mkdir(parents=True)
    if kind == "sqlite":
        loc = Location("empty", str(tmp / "empty-home"), project, tmp / "empty-home")
    else:
        assert pg is not None
        loc = Location("empty", _new_database(pg, "clew_bench_scale_empty"), project, tmp / "pgh")
    _clew(loc, "demo")  # a session to archive (on SQLite: to its cold file), and one to show
    with loc.runtime() as rt:
        rt.archive(rt.store.list_sessions_page(limit=1)[0].session_id)
    _clew(loc, "demo")
    return loc


def _new_database(url: str, name: str) -> str:
    import psycopg  # noqa: PLC0415 - the optional extra

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def _big(
    kind: str, tmp: Path, given: str | None, n: int, pg: str | None, cold: float = 0.0
) -> Location:
    if given is not None:
        if is_postgres_url(given):
            project = Path(os.environ.get("CLEW_BENCH_PROJECT", "gen-project")).resolve()
            return Location("filled", given, project, tmp / "pgh-big")
        return Location("filled", given, Path(given) / "project", Path(given))
    gen = [sys.executable, str(ROOT / "benchmarks" / "gen_sessions.py"), "-n", str(n)]
    if kind == "sqlite":
        home = tmp / "big-home"
        cold_args = ["--cold", str(cold)] if cold else []
        subprocess.run([*gen, "--home", str(home), "--verify", "1", *cold_args], check=True)
        return Location("filled", str(home), home / "project", home)
    assert pg is not None
    url = _new_database(pg, "clew_bench_scale_big")
    project = tmp / "pg-big-project"
    subprocess.run([*gen, "--store", url, "--project", str(project), "--verify", "1"], check=True)
    return Location("filled", url, project, tmp / "pgh-big")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}ms" if seconds < 0.1 else f"{seconds * 1000:.0f}ms"


def _count(loc: Location) -> int:
    with loc.runtime() as rt:
        return rt.store.sessions_mark()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer tries")
    parser.add_argument("--pg", help="a PostgreSQL server URL (databases are made there)")
    parser.add_argument("--pg-big", help="a filled PostgreSQL database to measure")
    parser.add_argument("--sqlite-big", help="a filled SQLite home to measure")
    parser.add_argument("--sqlite-n", type=int, help="sessions of a SQLite home made here")
    parser.add_argument("--pg-n", type=int, help="sessions of a PostgreSQL database made here")
    parser.add_argument(
        "--sqlite-cold",
        type=float,
        default=0.0,
        metavar="F",
        help="the fraction of the SQLite home made here archived in cold files",
    )
    args = parser.parse_args(argv)
    tries = 3 if args.quick else 5
    sqlite_n = args.sqlite_n or (300 if args.quick else 2000)
    pg_n = args.pg_n or (2000 if args.quick else 100_000)
    base = _median(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), tries)
    print(f"python3 -c pass: {base * 1000:.0f} ms")
    kinds = ["sqlite"] + (["postgres"] if args.pg or args.pg_big else [])
    with tempfile.TemporaryDirectory(prefix="clew-bench-scale-") as scratch:
        tmp = Path(scratch)
        for kind in kinds:
            empty = _empty(kind, tmp / kind, args.pg)
            given = args.sqlite_big if kind == "sqlite" else args.pg_big
            n_made = sqlite_n if kind == "sqlite" else pg_n
            cold = args.sqlite_cold if kind == "sqlite" else 0.0
            big = _big(kind, tmp / kind, given, n_made, args.pg, cold)
            n = _count(big)
            small = measure(empty, 0, tries)
            large = measure(big, n, tries)
            print(f"\n{kind}: empty (2 sessions) vs {n:,} sessions (queue: {n:,} finished runs)")
            print(f"  {'':28} {'empty':>10} {'filled':>10} {'ratio':>7}")
            for key, value in small.items():
                filled = large.get(key, float("nan"))
                print(f"  {key:28} {_ms(value):>10} {_ms(filled):>10} {filled / value:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
