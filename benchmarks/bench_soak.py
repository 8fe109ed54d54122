"""Chaos soak benchmark: queued runs across serve processes, one SIGKILLed every ~10 s.

``--runs`` (2,000) runs of the demo's shape (nine calls of a 200 ms loopback model) are
queued on one PostgreSQL database; ``--processes`` (4) ``clew serve`` processes run them
while a random one that has a run in progress is SIGKILLed every ``--kill-every`` seconds
(±30 %) and a new one started. When every run is done it checks, and prints: every run
completed exactly once; no model call paid twice (counted at the model server, per
session and request hash); no ``save_note`` side effect twice (a ledger); every session
verifies; and the recovery latency (kill → adopted, kill → going on) p50/p95 against the
lease ttl + 2 s. The driver is ``tests/helpers/_soak.py`` (the short version is a test).

    python benchmarks/bench_soak.py [--runs 2000] [--url postgresql://…] [--lease-ttl 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "helpers")]

from _postgres import bin_dir, drop_database, fresh_database, start_server  # noqa: E402
from _soak import Soak  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("CLEW_TEST_PG"))
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4, help="runs at once per serve")
    parser.add_argument("--lease-ttl", type=float, default=5.0)
    parser.add_argument("--kill-every", type=float, default=10.0, help="seconds between kills")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(1))
    server = args.url
    if not server:
        found = bin_dir()
        assert found is not None, "PostgreSQL is not installed: give --url"
        server = start_server(found, fsync=True, max_connections=400)
    url = fresh_database(server)
    tmp = Path(tempfile.mkdtemp(prefix="clew-bench-soak-"))
    try:
        soak = Soak(
            url,
            tmp,
            processes=args.processes,
            concurrency=args.concurrency,
            lease_ttl=args.lease_ttl,
            kill_every_s=args.kill_every,
        )
        report = soak.run(args.runs, within_s=6 * 3600)
        print(f"load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores")
        print(report.summary(args.lease_ttl))
        for problem in report.problems[:20]:
            print("  problem:", problem)
        sys.exit(1 if report.problems else 0)
    finally:
        drop_database(server, url)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
