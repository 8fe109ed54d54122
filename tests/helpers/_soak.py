"""The chaos soak (issue 35): queued runs across serve processes, one SIGKILLed every
~``kill_every_s`` and replaced, until every run is done — then everything is checked.

Shared by ``tests/actors/runtime/test_serve_soak.py`` (short: 40 runs, 2 kills, a 2 s
lease ttl; and the long ``slow`` one) and ``benchmarks/bench_soak.py`` (2,000 runs).
Everything lives in one PostgreSQL database (``--store URL``: events, Task WALs, leases,
the queue). Each model call is paid at the loopback model server
(``tests/helpers/_model_server.py``, counting request hashes per session); each real
``save_note`` writes a line to a ledger file (``tests/helpers/_serve_app.py``). The
:class:`SoakReport` holds what went wrong (``problems``: empty when every run completed
exactly once, no call was paid twice, no side effect happened twice and every session
verifies) and the recovery latencies: from the kill to the adoption of each of its runs,
and to the run going on (resumed, queued again and taken, or found ended).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from _model_server import LoopbackModelServer
from _processes import ROOT, child_env

from actors.runtime.coord.postgres import PostgresCoordinator
from actors.runtime.coord.protocol import QueuedRun, RunSpec
from actors.runtime.runtime import Runtime
from eventlog.events import InDoubtResolved, ModelRequested, ToolCallStarted


@dataclass
class Serve:
    """One ``clew serve`` process and its output lines, each stamped on arrival."""

    proc: subprocess.Popen[bytes]
    lines: list[tuple[float, str]] = field(default_factory=list)
    owner: str | None = None
    reader: threading.Thread | None = None

    def read(self, log: IO[str]) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            self._read(self.proc.stdout, log)

    def _read(self, stdout: IO[bytes], log: IO[str]) -> None:
        for raw in stdout:
            line = raw.decode(errors="replace").rstrip()
            self.lines.append((time.time(), line))
            log.write(f"{time.time():.3f} {self.proc.pid} {line}\n")
            if self.owner is None and line.startswith("serving as "):
                self.owner = line.split()[2]


@dataclass
class Kill:
    at: float
    owner: str
    runs: list[int]


@dataclass
class SoakReport:
    runs: int
    wall_s: float
    kills: list[Kill]
    #: Seconds from a kill to the adoption of one of its runs, one per orphaned run.
    adopted_s: list[float]
    #: Seconds from a kill to that run going on: its session resumed, or (it had not
    #: started) put back at the head of the queue, or (it had ended) marked done.
    resumed_s: list[float]
    paid_calls: int
    problems: list[str]

    def summary(self, lease_ttl: float) -> str:
        def pct(xs: list[float], q: float) -> str:
            if not xs:
                return "-"
            s = sorted(xs)
            return f"{s[min(len(s) - 1, round(q * (len(s) - 1)))]:.2f}"

        return (
            f"{self.runs} runs in {self.wall_s:.1f} s, {len(self.kills)} kills,"
            f" {len(self.adopted_s)} runs recovered, {self.paid_calls} model calls paid;"
            f" kill→adopted p50 {pct(self.adopted_s, 0.5)} s p95 {pct(self.adopted_s, 0.95)} s,"
            f" kill→resumed p50 {pct(self.resumed_s, 0.5)} s p95 {pct(self.resumed_s, 0.95)} s"
            f" (lease ttl {lease_ttl:g} s + 2 s = {lease_ttl + 2:g} s);"
            f" problems: {len(self.problems)}"
        )


class Soak:
    """Drive one soak in ``tmp`` against the database at ``url``."""

    def __init__(
        self,
        url: str,
        tmp: Path,
        *,
        processes: int = 4,
        concurrency: int = 2,
        lease_ttl: float = 2.0,
        kill_every_s: float = 10.0,
        seed: int = 35,
    ) -> None:
        self.url, self.tmp = url, tmp
        self.processes, self.concurrency, self.lease_ttl = processes, concurrency, lease_ttl
        self.kill_every_s = kill_every_s
        self.rng = random.Random(seed)
        self.serves: list[Serve] = []
        self.ledger = tmp / "ledger.txt"
        (tmp / "project").mkdir(exist_ok=True)
        self._log = (tmp / "serves.log").open("w", buffering=1)

    def _start(self, model_url: str) -> Serve:
        env = child_env(CLEW_TEST_MODEL_URL=model_url, CLEW_TEST_LEDGER=str(self.ledger))
        argv = [
            sys.executable,
            *("-m", "actors", "serve", "--home", str(self.tmp / "home")),
            *("--project", str(self.tmp / "project"), "--store", self.url),
            *("--app", "tests.helpers._serve_app:recipes"),
            *("--lease-ttl", str(self.lease_ttl), "--concurrency", str(self.concurrency)),
        ]
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=ROOT
        )
        serve = Serve(proc)
        serve.reader = threading.Thread(target=serve.read, args=(self._log,), daemon=True)
        serve.reader.start()
        self.serves.append(serve)
        return serve

    def run(
        self, runs: int, *, max_kills: int | None = None, within_s: float = 600.0
    ) -> SoakReport:
        """Queue ``runs`` runs, serve them while killing, then check; never raises for a
        broken guarantee (it is a problem of the report), only for a hung soak."""
        coord = PostgresCoordinator(self.url)
        kills: list[Kill] = []
        try:
            with LoopbackModelServer(0.2) as model:
                ids = [
                    coord.submit(
                        RunSpec(prompt=f"Plan a small notes app, variant {i}.", model="loopback",
                                tools="ledger")
                    ).id
                    for i in range(runs)
                ]  # fmt: skip
                t0 = time.monotonic()
                for _ in range(self.processes):
                    self._start(model.base_url)
                next_kill = t0 + self.kill_every_s
                while True:
                    rows = coord.list_runs(runs)
                    if all(r.status == "done" for r in rows):
                        break
                    assert time.monotonic() - t0 < within_s, "the soak did not finish in time"
                    now = time.monotonic()
                    warm = any(r.status == "done" for r in rows)  # every serve is up
                    if warm and now >= next_kill and (max_kills is None or len(kills) < max_kills):
                        kill = self._kill_one(rows, model.base_url)
                        if kill is not None:
                            kills.append(kill)
                            next_kill = now + self.kill_every_s * self.rng.uniform(0.7, 1.3)
                    time.sleep(0.1)
                wall = time.monotonic() - t0
                self._stop()
                paid = model.paid_by_session()
                paid_calls = model.requests
            return self._check(coord, ids, kills, paid, paid_calls, wall)
        finally:
            self._stop()
            coord.close()
            self._log.close()

    def _kill_one(self, rows: list[QueuedRun], model_url: str) -> Kill | None:
        """SIGKILL a random live serve that has a run started; start a new one."""
        live = [s for s in self.serves if s.proc.poll() is None and s.owner is not None]
        busy = [
            s for s in live
            if any(r.owner == s.owner and r.status == "running" and r.session_id for r in rows)
        ]  # fmt: skip
        if not busy:
            return None
        victim = self.rng.choice(busy)
        victim.proc.send_signal(signal.SIGKILL)
        at = time.time()
        victim.proc.wait()
        assert victim.owner is not None
        orphaned = PostgresCoordinator(self.url)
        try:
            mine = [
                r.id for r in orphaned.list_runs(len(rows))
                if r.owner == victim.owner and r.status == "running"
            ]  # fmt: skip
        finally:
            orphaned.close()
        self._start(model_url)
        return Kill(at, victim.owner, mine)

    def _stop(self) -> None:
        for s in self.serves:
            if s.proc.poll() is None:
                s.proc.send_signal(signal.SIGTERM)
        for s in self.serves:
            try:
                s.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait()
            if s.reader is not None:
                s.reader.join(timeout=30)  # to the end of its output: its pipe closed

    def _when(self, needle: str, after: float) -> float | None:
        times = [t for s in self.serves for t, line in s.lines if needle in line and t >= after]
        return min(times) if times else None

    def _latencies(self, kills: list[Kill]) -> tuple[list[float], list[float], list[str]]:
        adopted: list[float] = []
        resumed: list[float] = []
        problems: list[str] = []
        for kill in kills:
            for qid in kill.runs:
                got = self._when(f"adopted queued run {qid} of {kill.owner}", kill.at)
                if got is None:
                    problems.append(f"queued run {qid} of killed {kill.owner} never adopted")
                    continue
                adopted.append(got - kill.at)
                going = [
                    t
                    for needle in (
                        f"resuming queued run {qid} ",  # its session resumed
                        f"queued run {qid} had not started",  # back at the queue's head
                        f"recovered queued run {qid}:",  # it had ended: marked done
                    )
                    if (t := self._when(needle, got)) is not None
                ]
                if going:
                    resumed.append(min(going) - kill.at)
        return adopted, resumed, problems

    def _check(
        self,
        coord: PostgresCoordinator,
        ids: list[int],
        kills: list[Kill],
        paid: dict[str, Counter[str]],
        paid_calls: int,
        wall: float,
    ) -> SoakReport:
        adopted, resumed, problems = self._latencies(kills)
        rows = coord.list_runs(len(ids))
        if sorted(ids) != [r.id for r in rows]:
            problems.append("the queue does not hold exactly the submitted runs")
        ledger = (
            Counter(self.ledger.read_text().splitlines()) if self.ledger.exists() else Counter()
        )
        with Runtime(self.tmp / "home", self.tmp / "project", store=self.url, read_only=True) as rt:
            sessions = [r.session_id for r in rows]
            if len(set(sessions)) != len(ids) or None in sessions:
                problems.append("not one session per queued run")
            for r in rows:
                problems += self._check_row(rt, r, paid, ledger)
        return SoakReport(len(ids), wall, kills, adopted, resumed, paid_calls, problems)

    def _check_row(
        self, rt: Runtime, r: QueuedRun, paid: dict[str, Counter[str]], ledger: Counter[str]
    ) -> list[str]:
        if r.outcome != "completed" or r.session_id is None:
            return [f"queued run {r.id}: {r.outcome} ({r.error})"]
        sid = r.session_id
        out: list[str] = []
        if [r.run_id] != rt.main_runs(sid):  # exactly once: one main run, the row's
            out.append(f"queued run {r.id}: main runs {rt.main_runs(sid)} for {r.run_id}")
        events = [e.event for e in rt.store.iter_events(sid)]
        requested = Counter(e.request_hash for e in events if isinstance(e, ModelRequested))
        if extra := paid.get(sid, Counter()) - requested:
            out.append(f"session {sid}: {sum(extra.values())} model call(s) paid twice")
        retried = {e.tool_call_id for e in events if isinstance(e, InDoubtResolved)}
        notes = Counter(
            e.tool_call_id
            for e in events
            if isinstance(e, ToolCallStarted) and e.tool_name == "save_note"
        )
        twice = [k for k, n in ledger.items() if k.startswith(f"{sid} ") and n > 1]
        if twice and not retried:
            out.append(f"session {sid}: save_note ran twice: {twice}")
        if any(n > 1 and c not in retried for c, n in notes.items()):
            out.append(f"session {sid}: a save_note call started twice without a decision")
        # Three workers save a note each; a call in doubt when its process died may have
        # been decided not to run again (at most once), and then misses from the ledger.
        if sum(n for k, n in ledger.items() if k.startswith(f"{sid} ")) + len(retried) < 3:
            out.append(f"session {sid}: a note is missing from the ledger")
        if not rt.verify(sid).ok:
            out.append(f"session {sid} does not verify")
        return out
