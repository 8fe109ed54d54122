"""``Runtime.serve()`` / ``clew serve``: take queued runs, recover the runs of dead peers.

One :class:`Server` per process. Its loop, every ``poll_s``:

1. **Recover** (at start, then every third of the lease ttl): a queued run whose owner's
   worker lease expired is *adopted* (one compare-and-set: exactly one live process wins
   it). If its run had started, the session is resumed through the ordinary resume path
   (recorded model replies are served from the log, never asked again; a non-idempotent
   tool that may have run waits for a decision); if the run had ended, the row is just
   marked done; if it never started, it goes back to the queue.
2. **Take** queued runs while fewer than ``concurrency`` are in progress, each on a
   thread of its own, in its own session (a new one, or the one it names).

Every session a run executes in is held through its lease (``Engine.lock``) and the
worker lease says the process is alive; the heartbeat renews both. ``stop`` (SIGTERM for
``clew serve``) ends the taking at once, then waits up to ``drain_s`` for the runs in
progress; what is still running then is left to the caller (see docs/serve.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from actors.errors import SessionBusy
from actors.runtime.coord.protocol import Coordinator, QueuedRun, worker_lease
from actors.runtime.engine import OPEN_RUN_STATUSES, Engine
from actors.runtime.recipes import RecipeContext, Recipes
from eventlog.errors import ClewError
from eventlog.ids import is_main_run
from eventlog.logs import get_logger

if TYPE_CHECKING:
    from actors.runtime.runtime import Runtime

_log = get_logger("clew.serve")


@dataclass
class ServeReport:
    """What one ``serve`` did: queued runs finished, recovered, put back, still running."""

    done: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)


class Server:
    """Take queued runs and recover dead peers' runs until stopped."""

    def __init__(
        self,
        rt: Runtime,
        engine: Engine,
        recipes: Recipes,
        *,
        concurrency: int = 1,
        poll_s: float = 0.2,
        drain_s: float = 30.0,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.rt = rt
        self.engine = engine
        self.recipes = recipes.with_demo()
        self.concurrency = concurrency
        self.poll_s = poll_s
        self.drain_s = drain_s
        self._say = on_event or (lambda _line: None)
        leases = engine.leases
        coord = leases.coordinator(create=True)
        assert coord is not None  # create=True on a writable runtime always opens one
        self.coord: Coordinator = coord
        self.owner = leases.owner
        self.ttl = leases.ttl
        self.report = ServeReport()
        self._active: dict[Future[None], int] = {}
        self._busy: dict[int, QueuedRun] = {}  # adopted, session lease not free yet

    def serve(self, stop: threading.Event) -> ServeReport:
        """Run until ``stop`` is set; return what was done."""
        self.coord.acquire(worker_lease(self.owner), self.owner, self.ttl)
        self._say(f"serving as {self.owner} (lease ttl {self.ttl:g} s)")
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="clew-serve")
        next_recovery = 0.0
        try:
            while not stop.is_set():
                if time.monotonic() >= next_recovery:
                    self._recover(pool)
                    next_recovery = time.monotonic() + self.ttl / 3
                self._take(pool, stop)
                stop.wait(self.poll_s)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            wait(list(self._active), timeout=self.drain_s)
            self.report.running = sorted(q for f, q in self._active.items() if not f.done())
        return self.report

    def _reap(self) -> None:
        for fut in [f for f in self._active if f.done()]:
            del self._active[fut]

    def _take(self, pool: ThreadPoolExecutor, stop: threading.Event) -> None:
        self._reap()
        while len(self._active) < self.concurrency and not stop.is_set():
            entry = self.coord.take(self.owner)
            if entry is None:
                return
            self._say(f"took queued run {entry.id}")
            self._active[pool.submit(self._guarded, self._execute, entry)] = entry.id

    def _recover(self, pool: ThreadPoolExecutor) -> None:
        self._reap()
        candidates = list(self._busy.values())
        self._busy.clear()
        for orphan in self.coord.orphans():
            if orphan.owner is None or orphan.owner == self.owner:
                continue
            adopted = self.coord.adopt(orphan.id, orphan.owner, self.owner)
            if adopted is not None:
                self._say(f"adopted queued run {orphan.id} of {orphan.owner}")
                candidates.append(adopted)
        for entry in candidates:
            self._active[pool.submit(self._guarded, self._recover_one, entry)] = entry.id

    def _guarded(self, job: Callable[[QueuedRun], None], entry: QueuedRun) -> None:
        """Run ``job``; any failure to run it (a refusal, a store failure, a recipe that
        raised) ends the queued run as ``error`` instead of leaving it ``running``."""
        try:
            job(entry)
        except SessionBusy:
            # Its session is held elsewhere right now: another turn later.
            self.coord.requeue(entry.id, self.owner)
            self.report.requeued.append(entry.id)
            self._say(f"queued run {entry.id} waits: its session is busy")
        except Exception as e:  # an app's recipe may raise anything: end the row, not the loop
            if not isinstance(e, ClewError):
                e = ClewError(f"{type(e).__name__}: {e}")
            _log.warning("queued run failed", queue_id=entry.id, error=str(e))
            self.coord.finish(entry.id, self.owner, "error", run=None, error=str(e))
            self.report.done.append(entry.id)

    def _context(self, session_id: str) -> RecipeContext:
        return RecipeContext(
            session_id=session_id,
            project_dir=self.rt.session_dir(session_id),
            environ=self.engine.environ,
        )

    def _execute(self, entry: QueuedRun) -> None:
        """Run a queued run to its end in its session (a new one if it names none)."""
        spec = entry.spec()
        self.recipes.check(spec)  # before a session is created for nothing
        rt = self.rt
        sid = entry.session_id or rt.new_session(metadata={"clew_queue_id": entry.id}).id
        self.coord.attach(entry.id, self.owner, sid, len(rt.main_runs(sid)))
        built = self.recipes.build(spec, self._context(sid))
        outcome = rt.run(sid, spec.prompt, model=built.model, tools=built.tools, team=built.team)
        self.coord.finish(entry.id, self.owner, outcome.status, run=outcome.run_id, error=None)
        self.report.done.append(entry.id)
        self._say(f"queued run {entry.id}: {outcome.status} (session {sid})")

    def _recover_one(self, entry: QueuedRun) -> None:
        """Finish an adopted run: resume it, record how it ended, or queue it again."""
        sid, before = entry.session_id, entry.runs_before
        runs = [] if sid is None else self.rt.store.read_runs(sid)
        runs = [r for r in runs if sid is not None and is_main_run(sid, r.agent_id)]
        if sid is None or before is None or len(runs) <= before:
            self.coord.requeue(entry.id, self.owner)  # taken, never started: run it afresh
            self.report.requeued.append(entry.id)
            self._say(f"queued run {entry.id} had not started: queued again")
            return
        last = runs[-1]
        status, run_id = last.status, last.run_id
        if status in OPEN_RUN_STATUSES:
            if self.engine.leases.held_elsewhere(sid):
                self._busy[entry.id] = entry  # its old lease has not expired yet
                return
            built = self.recipes.build(entry.spec(), self._context(sid))
            try:
                outcome = self.rt.resume(sid, model=built.model, tools=built.tools, team=built.team)
            except SessionBusy:
                self._busy[entry.id] = entry
                return
            status, run_id = outcome.status, outcome.run_id
        self.coord.finish(entry.id, self.owner, status, run=run_id, error=None)
        self.report.recovered.append(entry.id)
        self._say(f"recovered queued run {entry.id}: {status} (session {sid})")
