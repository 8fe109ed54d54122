"""The must-hold test of issue 20: three ``clew serve`` processes, thirty queued runs, one
process SIGKILLed mid-run.

Every run completes exactly once; the killed process's runs are adopted and resumed by
the others once its leases expire (a 2 s ttl here); no model call is paid twice (the
``counted`` model of ``tests/helpers/_serve_app.py`` logs every call it is asked to make,
and each must match a ``model_requested`` of the log: a recorded reply asked again would
be a call with no event of its own); the non-idempotent ``save_note`` never runs twice
for one call; every session verifies and replays identically.

Parametrised over where the processes coordinate and store: the home's ``coord.sqlite``;
a real PostgreSQL database coordinating while the events stay in the shared SQLite home;
and PostgreSQL for everything (``--store URL``: events, Task WALs, leases and the queue).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from _processes import ROOT, child_env

from actors.runtime.coord.location import COORD_FILE
from actors.runtime.coord.protocol import Coordinator, QueuedRun
from actors.runtime.runtime import Runtime
from eventlog.events import InDoubtResolved, ModelRequested, ToolCallStarted

RUNS = 30
PROCESSES = 3
LEASE_TTL_S = 2.0
#: Generous bounds for a loaded 2-core machine: they fail a hung test, never a slow one.
ALL_DONE_WITHIN_S = 600.0


@dataclass
class Backend:
    flags: list[str]
    runtime: Callable[[Path, Path], Runtime]


@pytest.fixture(params=["sqlite", "pg-coordination", "postgresql"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "sqlite":
        return Backend([], Runtime)
    url: str = request.getfixturevalue("pg_url")
    if request.param == "postgresql":
        return Backend(
            ["--store", url],
            lambda home, project: Runtime(home, project, store=url, coordination=url),
        )
    return Backend(
        ["--coordination", url],
        lambda home, project: Runtime(home, project, coordination=url),
    )


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    out: Path
    log: IO[bytes]

    def owner(self) -> str | None:
        for line in self.out.read_text().splitlines():
            if line.startswith("serving as "):
                return line.split()[2]
        return None


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
        s.proc.wait()
        s.log.close()


def start_server(tmp_path: Path, i: int, backend: Backend, calls: Path) -> Server:
    out = tmp_path / f"serve{i}.out"
    log = out.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            *("-m", "actors", "serve", "--home", str(tmp_path / "home")),
            *("--project", str(tmp_path / "project")),
            *("--app", "tests.helpers._serve_app:recipes"),
            *("--lease-ttl", str(LEASE_TTL_S), "--concurrency", "2"),
            *backend.flags,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=child_env(CLEW_TEST_MODEL_CALLS=str(calls)),
        cwd=ROOT,
    )
    return Server(proc, out, log)


def wait_for(what: str, check: Callable[[], bool], within: float = ALL_DONE_WITHIN_S) -> None:
    end = time.monotonic() + within
    while not check():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.05)


def running_of(coord: Coordinator, owner: str) -> list[QueuedRun]:
    return [r for r in coord.list_runs(RUNS) if r.status == "running" and r.owner == owner]


def mid_run(rt: Runtime, coord: Coordinator, owner: str) -> bool:
    """True when a run of ``owner`` is half-way: about 40 of its ~100 events committed."""
    return any(
        r.session_id is not None and rt.store.count_events(r.session_id) >= 40
        for r in running_of(coord, owner)
    )


@pytest.mark.slow
def test_three_servers_finish_thirty_runs_once_when_one_is_killed_mid_run(  # long: one story
    tmp_path: Path, backend: Backend, servers: list[Server]
) -> None:
    (tmp_path / "project").mkdir()
    calls = tmp_path / "model-calls.txt"
    rt = backend.runtime(tmp_path / "home", tmp_path / "project")
    try:
        coord = rt.coordinator()
        rows = [
            rt.submit(f"Plan a small notes app, variant {i}.", model="counted", tools="demo")
            for i in range(RUNS)
        ]
        servers.extend(start_server(tmp_path, i, backend, calls) for i in range(PROCESSES))
        victim = servers[0]
        wait_for("the victim to start", lambda: victim.owner() is not None, 120)
        victim_owner = victim.owner()
        assert victim_owner is not None
        wait_for("the victim to be mid-run", lambda: mid_run(rt, coord, victim_owner))
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        orphaned = {r.id for r in running_of(coord, victim_owner)}
        assert orphaned, "the victim was killed with no run in progress"

        wait_for("every run done", lambda: all(r.status == "done" for r in coord.list_runs(RUNS)))
        for s in servers[1:]:
            s.proc.send_signal(signal.SIGTERM)
        for s in servers[1:]:
            assert 0 == s.proc.wait(timeout=120), s.out.read_text()

        done = coord.list_runs(RUNS)
        assert sorted(r.id for r in rows) == [r.id for r in done]
        assert ["completed"] * RUNS == [r.outcome for r in done], [r.error for r in done]
        # The killed process's runs were adopted and resumed by a survivor.
        for r in done:
            if r.id in orphaned:
                assert r.owner != victim_owner
                assert r.attempts >= 2
        recovered = "".join(s.out.read_text() for s in servers[1:]).count("recovered queued run")
        assert len(orphaned) <= recovered

        sessions = [r.session_id for r in done]
        assert RUNS == len({s for s in sessions if s is not None})
        requested: Counter[str] = Counter()
        for r in done:
            assert r.session_id is not None
            # Exactly once: one main run per queued run, the one the queue row names.
            assert [r.run_id] == rt.main_runs(r.session_id)
            events = [e.event for e in rt.store.iter_events(r.session_id)]
            requested.update(e.request_hash for e in events if isinstance(e, ModelRequested))
            retried = {e.tool_call_id for e in events if isinstance(e, InDoubtResolved)}
            notes = Counter(
                e.tool_call_id
                for e in events
                if isinstance(e, ToolCallStarted) and e.tool_name == "save_note"
            )
            assert all(n == 1 or c in retried for c, n in notes.items())
            assert rt.verify(r.session_id).ok
            assert rt.replay(r.session_id).identical
        paid = Counter(line.split()[1] for line in calls.read_text().splitlines())
        # Every paid call has a model_requested of its own: no recorded reply asked again.
        assert not paid - requested
        assert sum(paid.values()) >= RUNS * 9 - len(orphaned) * 3
        assert {str(s.proc.pid) for s in servers} >= {
            line.split()[0] for line in calls.read_text().splitlines()
        }
    finally:
        rt.close()
    # Coordinated where the backend says: the home's file, or only the database.
    assert (not backend.flags) == (tmp_path / "home" / COORD_FILE).exists()
