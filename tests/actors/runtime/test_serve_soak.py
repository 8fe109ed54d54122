"""The chaos soak of issue 35 (``tests/helpers/_soak.py``): four ``clew serve`` processes
on one PostgreSQL database, runs of the demo's shape paying a 200 ms loopback model, a
random serve SIGKILLed while it has a run in progress and replaced.

Every run completes exactly once (one main run per queued run, each in a session of its
own); no model call is paid twice (each request hash the model server answered for a
session has a ``model_requested`` of its own there); the non-idempotent ``save_note``
ran once per call (a ledger of its real side effects); every session verifies; each of
the killed processes' runs was adopted, and went on, within the lease ttl plus 2 s (the
issue's target; plus the recovery period, a third of the ttl, on a loaded machine).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _soak import Soak

LEASE_TTL_S = 2.0
#: The long soak's size: 200 runs in CI (about 80 s on two cores); ``CLEW_SOAK_RUNS=2000``
#: for the issue's 2,000 (about 13 minutes; ``benchmarks/bench_soak.py`` prints the same).
LONG_RUNS = int(os.environ.get("CLEW_SOAK_RUNS", "200"))


def test_forty_runs_two_kills_every_run_once_nothing_paid_or_done_twice(
    tmp_path: Path, pg_url: str
) -> None:
    soak = Soak(pg_url, tmp_path, processes=4, concurrency=2, lease_ttl=LEASE_TTL_S, kill_every_s=4)

    report = soak.run(40, max_kills=2, within_s=300)

    print(report.summary(LEASE_TTL_S))
    assert [] == report.problems
    assert 2 == len(report.kills)
    orphaned = sum(len(k.runs) for k in report.kills)
    assert orphaned == len(report.adopted_s) == len(report.resumed_s) >= 2
    bound = LEASE_TTL_S + LEASE_TTL_S / 3 + 2.0
    assert max(report.resumed_s) <= bound, report.summary(LEASE_TTL_S)


@pytest.mark.slow
def test_a_long_soak_a_kill_every_ten_seconds(tmp_path: Path, pg_url: str) -> None:
    soak = Soak(pg_url, tmp_path, processes=4, concurrency=4, lease_ttl=5.0, kill_every_s=10)

    report = soak.run(LONG_RUNS, within_s=3 * 3600)

    print(report.summary(5.0))
    assert [] == report.problems
    assert report.kills
