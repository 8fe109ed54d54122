"""Serving: what an app registers (recipes) and ``Runtime.serve()`` / ``clew serve``'s loop.

**Recipes** are the names a queued run records so any serving process can build its model,
tools and team — to run it, and to resume it after its first process died.

An application registers them once (``clew serve --app module:callable``, or
``Runtime.serve(recipes=…)``): each recipe is a function of a :class:`RecipeContext`
returning a fresh model (chain), tool list or team. A fresh one per run: a scripted or
stateful model is never shared between sessions. The built-in ``demo`` model and tools
recipes (the scripted demo scenario) are always there unless the app replaces them, and
so are the model specs ``clew run --model`` takes (``scripted:PATH``, ``openai:<model>``,
``anthropic:<model>``: :mod:`actors.models.specs`), built by every serving process from
its own environment. A name no recipe source knows is refused when it is submitted.

**The loop** takes queued runs and recovers the runs of dead peers. One :class:`Server`
per process. Its loop, woken by the coordinator when a run may have become takeable
(PostgreSQL's ``LISTEN``; else every ``poll_s``), by a run of its own ending, or at the
latest every ``idle_poll_s``:

1. **Recover** (at start, then every third of the lease ttl, 2 s at most): a run whose owner's
   worker lease expired is *adopted* (one compare-and-set: exactly one live process wins
   it). If its run had started, the session is resumed through the ordinary resume path
   (recorded model replies are served from the log, never asked again; a non-idempotent
   tool that may have run waits for a decision); if the run had ended, the row is just
   marked done; if it never started, it goes back to the queue. An orphan naming a
   recipe this process lacks is not adopted: it stays for a process that has it (one
   that once ran it had it), which adopts it when it starts.
2. **Take** queued runs while fewer than ``concurrency`` are in progress, each on a
   thread of its own, in its own session (a new one, or the one it names).

Every session a run executes in is held through its lease (``Engine.own``) and the
worker lease says the process is alive; the heartbeat renews both. ``stop`` (SIGTERM for
``clew serve``) ends the taking at once, then waits up to ``drain_s`` for the runs in
progress; what is still running then is left to the caller (see docs/serve.md).

:class:`ServeMetrics` counts what the loop does for an operator (``clew serve
--metrics-port``: Prometheus text format and a health check, :mod:`actors.observe.metrics`).
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.demo import demo_model, demo_tools
from actors.errors import SessionBusy, UsageError
from actors.models.chains import ModelArg
from actors.models.specs import is_model_spec, model_of_spec
from actors.models.tools import Tool
from actors.observe.metrics import Labels, Metrics, MetricsServer
from actors.orchestration.team import Team
from actors.runtime.config import RunConfig
from actors.runtime.coord.protocol import Coordinator, QueuedRun, RunSpec, worker_lease
from actors.runtime.engine import Engine, session_dir
from actors.runtime.recovery import resume, resume_ready
from actors.runtime.start import create_session, fresh_session_id, start_run
from actors.runtime.status import OPEN_RUN_STATUSES, main_runs
from eventlog.errors import ClewError, quoted
from eventlog.events import ModelFailed, ModelResponded
from eventlog.ids import is_main_run
from eventlog.logs import get_logger
from eventlog.records import StoredEvent
from eventlog.request_events import ModelRequested

_log = get_logger("clew.serve")

#: The longest wait between two recovery scans: a dead peer's runs are adopted within
#: the lease ttl plus this (a third of the ttl when that is shorter).
_RECOVERY_PERIOD_MAX_S = 2.0

#: Model calls timed at once, at most (more: calls of interrupted runs never answered).
_OPEN_CALLS_MAX = 10_000

#: Threads resuming adopted runs at once, at most (started as needed).
_RECOVERY_THREADS = 64


# --- recipes ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RecipeContext:
    """What a recipe may use: the session and its project directory (its Task WALs and
    the demo's notes file live there) and the environment provider keys come from."""

    session_id: str
    project_dir: Path
    environ: Mapping[str, str]


def _demo_model(_: RecipeContext) -> ModelArg:
    return demo_model(3)


def _demo_tools(ctx: RecipeContext) -> list[Tool]:
    return demo_tools(ctx.project_dir)


def _spec_model(spec: str, ctx: RecipeContext) -> ModelArg:
    """The built-in recipe of a model spec (a relative script path: the project's)."""
    return model_of_spec(spec, env=ctx.environ, root=ctx.project_dir)


@dataclass(frozen=True, kw_only=True)
class Recipes:
    """The model, tools and team recipes of an application, by name."""

    models: Mapping[str, Callable[[RecipeContext], ModelArg]] = field(default_factory=dict)
    tools: Mapping[str, Callable[[RecipeContext], Sequence[Tool]]] = field(default_factory=dict)
    teams: Mapping[str, Callable[[RecipeContext, Sequence[Tool]], Team]] = field(
        default_factory=dict
    )

    def with_demo(self) -> Recipes:
        """Return these recipes plus the built-in ``demo`` ones (the app's win)."""
        return Recipes(
            models={"demo": _demo_model, **self.models},
            tools={"demo": _demo_tools, **self.tools},
            teams=dict(self.teams),
        )

    def check(self, spec: RunSpec) -> None:
        """Refuse a run naming a recipe that is not registered.

        Raises:
            UsageError: naming the missing recipe and the registered ones.
        """
        for kind, name, known in (
            ("model", spec.model, self.models),
            ("tools", spec.tools, self.tools),
            ("team", spec.team, self.teams),
        ):
            if name is None or name in known or (kind == "model" and is_model_spec(name)):
                continue
            names = ", ".join(sorted(known)) or "none"
            specs = ""
            if kind == "model":
                specs = "; or a model spec: scripted:PATH, openai:<model>, anthropic:<model>"
            raise UsageError(
                f"no {kind} recipe named {quoted(name)} is registered (known: {names}{specs});"
                " register it in the app given to clew serve --app"
            )

    def build(self, spec: RunSpec, ctx: RecipeContext) -> RunConfig:
        """Build the model, tools and team ``spec`` names (``check`` first)."""
        self.check(spec)
        tools = list(self.tools[spec.tools](ctx)) if spec.tools is not None else []
        team = self.teams[spec.team](ctx, tools) if spec.team is not None else None
        make_model = self.models.get(spec.model)
        model = make_model(ctx) if make_model is not None else _spec_model(spec.model, ctx)
        return RunConfig(model=model, tools=tools, team=team)


def check_submitted(spec: RunSpec, project_dir: Path, recipes: Recipes | None = None) -> None:
    """Refuse, when a run is queued, a name no recipe source knows (instead of every
    serving process ending it ``error`` later).

    The sources: the built-in ``demo`` recipes, the model specs (a ``scripted:`` script
    is read now: a missing or invalid one is refused), and ``recipes`` — the app's, when
    the caller has them (``clew submit --app``). Without them a plain name (``support``)
    can only be an app's and is queued as it is; a name shaped like a spec whose scheme
    no source knows (``gpt4:x``) is refused.

    Raises:
        UsageError: naming the unknown recipe (a ``ScriptError``: the bad script).
    """
    if recipes is not None:
        recipes.with_demo().check(spec)
    elif ":" in spec.model and not is_model_spec(spec.model):
        raise UsageError(
            f"no model recipe named {quoted(spec.model)}: not a model spec (scripted:PATH,"
            " openai:<model>, anthropic:<model>) nor a built-in recipe; an app's recipe is"
            " checked when its app is given (clew submit --app)"
        )
    if spec.model.startswith("scripted:") and (recipes is None or spec.model not in recipes.models):
        model_of_spec(spec.model, env={}, root=project_dir)  # reads and checks the script


def call_factory(ref: str, option: str) -> Any:
    """Import ``module:callable`` (the value of ``option``), call it, return what it returns.

    Raises:
        UsageError: a malformed reference, or a module or callable that cannot be found.
    """
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise UsageError(f"{option} {quoted(ref)} is not of the form module:callable")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(f"{option} {quoted(ref)}: cannot import {quoted(module_name)}: {e}") from e
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UsageError(f"{option} {quoted(ref)}: {quoted(attr)} is not a callable of the module")
    return factory()


def load_app(ref: str) -> Recipes:
    """Import ``module:callable`` and call it; it returns the app's :class:`Recipes`.

    Raises:
        UsageError: a malformed reference, a module or callable that cannot be found, or
            a callable that does not return ``Recipes``.
    """
    recipes = call_factory(ref, "--app")
    if not isinstance(recipes, Recipes):
        raise UsageError(f"--app {quoted(ref)} returned {type(recipes).__name__}, not Recipes")
    return recipes


# --- serving ------------------------------------------------------------------------------


@dataclass
class ServeReport:
    """What one ``serve`` did: queued runs finished, recovered, put back, still running."""

    done: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)


class ServeMetrics:
    """What one serving process did, for ``/metrics``; the queue depth and the leases are
    read when scraped. Model-call latency: from a ``model_requested`` commit to the
    commit of its reply or failure, in this process."""

    def __init__(self, server: Server) -> None:
        self.registry = m = Metrics()
        self.started = m.counter(
            "clew_serve_runs_started_total", "Queued runs this process started"
        )
        self.completed = m.counter(
            "clew_serve_runs_completed_total", "Queued runs this process ended completed"
        )
        self.failed = m.counter(
            "clew_serve_runs_failed_total",
            "Queued runs this process ended otherwise (label: the outcome)",
        )
        self.recoveries = m.counter(
            "clew_serve_recoveries_total", "Runs of dead processes this process adopted"
        )
        m.gauge(
            "clew_serve_runs_in_progress", "Runs this process has in progress", server.in_progress
        )
        m.gauge(
            "clew_serve_leases_held",
            "Leases this process held at its last renewal",
            server.leases_held,
        )
        m.gauge("clew_queue_depth", "Rows of the run queue by status", server.depth_by_status)
        self.latency = m.histogram(
            "clew_model_call_seconds", "Model-call latency: request committed to reply committed"
        )
        self._calls: dict[tuple[str | None, str | None, int, int], float] = {}

    def ended(self, outcome: str) -> None:
        """Count a queued run ended with ``outcome``."""
        if outcome == "completed":
            self.completed.inc()
        else:
            self.failed.inc(outcome=outcome)

    def on_commit(self, events: list[StoredEvent]) -> None:
        """The writer's listener: time each model call (quick, never blocks)."""
        now = time.monotonic()
        for stored in events:
            e = stored.event
            if isinstance(e, ModelRequested | ModelResponded | ModelFailed):
                key = (stored.run_id, stored.agent_id, e.call_index, e.attempt)
                if isinstance(e, ModelRequested):
                    if len(self._calls) > _OPEN_CALLS_MAX:  # calls of runs cut off: forget
                        self._calls.clear()
                    self._calls[key] = now
                elif (at := self._calls.pop(key, None)) is not None:
                    self.latency.observe(now - at)


class Server:
    """Take queued runs and recover dead peers' runs until stopped."""

    def __init__(
        self,
        engine: Engine,
        recipes: Recipes,
        *,
        concurrency: int = 1,
        poll_s: float = 0.2,
        idle_poll_s: float = 5.0,
        drain_s: float = 30.0,
        on_event: Callable[[str], None] | None = None,
        metrics_address: tuple[str, int] | None = None,
    ) -> None:
        self.engine = engine
        self.recipes = recipes.with_demo()
        self.concurrency = concurrency
        self.poll_s = poll_s
        self.idle_poll_s = idle_poll_s
        self.drain_s = drain_s
        self.metrics_address = metrics_address
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
        self._left: set[int] = set()  # orphans left for a process with their recipes
        #: Set when a run may have become takeable (a notification, a run of ours ended).
        self._wake = threading.Event()
        self.metrics = ServeMetrics(self)
        self._state = "starting"
        self._tick = time.monotonic()

    def serve(self, stop: threading.Event) -> ServeReport:
        """Run until ``stop`` is set; return what was done."""
        self.coord.acquire(worker_lease(self.owner), self.owner, self.ttl)
        self._say(f"serving as {self.owner} (lease ttl {self.ttl:g} s)")
        endpoint = self._open_metrics()
        unsubscribe = self.engine.writer.subscribe(self.metrics.on_commit)
        # Pushed wake-ups: poll only as a fallback (what no notification announces).
        poll = self.idle_poll_s if self.coord.listen(self._wake.set) else self.poll_s
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="clew-serve")
        # Adopted runs go on at once, not behind the runs this process is running nor
        # behind each other (a thread each: as many as the dead peers had in progress).
        recovering = ThreadPoolExecutor(_RECOVERY_THREADS, thread_name_prefix="clew-recover")
        next_recovery = next_take = 0.0
        self._state = "serving"
        try:
            while not stop.is_set():
                self._tick = now = time.monotonic()
                if now >= next_recovery:
                    self._recover(recovering)
                    next_recovery = time.monotonic() + min(self.ttl / 3, _RECOVERY_PERIOD_MAX_S)
                if self._wake.is_set() or now >= next_take:
                    self._wake.clear()
                    self._take(pool, stop)
                    next_take = now + poll
                # Short waits: ``stop`` is the caller's event and nothing sets _wake for it.
                self._wake.wait(max(0.0, min(self.poll_s, next_take - now, next_recovery - now)))
        finally:
            self._state = "draining"
            pool.shutdown(wait=False, cancel_futures=True)
            recovering.shutdown(wait=False, cancel_futures=True)
            wait(list(self._active), timeout=self.drain_s)
            self.report.running = sorted(q for f, q in self._active.items() if not f.done())
            self._state = "stopped"
            unsubscribe()
            if endpoint is not None:
                endpoint.close()
        return self.report

    def _open_metrics(self) -> MetricsServer | None:
        if self.metrics_address is None:
            return None
        host, port = self.metrics_address
        try:
            endpoint = MetricsServer(self.metrics.registry, self.health, host=host, port=port)
        except OSError as e:
            raise UsageError(f"cannot serve metrics on {host}:{port}: {e.strerror or e}") from e
        bound_host, bound_port = endpoint.address
        self._say(f"metrics on http://{bound_host}:{bound_port}/metrics")
        return endpoint

    # --- what the metrics read --------------------------------------------------------

    def health(self) -> tuple[bool, dict[str, object]]:
        """Alive while the loop turns (it turns at least every ``poll_s``)."""
        since = time.monotonic() - self._tick
        alive = self._state == "serving" and since < max(5.0, 10 * self.poll_s)
        return alive, {
            "status": "ok" if alive else self._state,
            "owner": self.owner,
            "runs_in_progress": self.in_progress(),
            "loop_seconds_ago": round(since, 3),
            "coordination": self.coord.location,
        }

    def in_progress(self) -> float:
        return float(sum(1 for f in list(self._active) if not f.done()))

    def leases_held(self) -> float:
        return float(self.engine.leases.held())

    def depth_by_status(self) -> dict[Labels, float]:
        depth = self.coord.depth(count_done=False)  # scraped often: two index counts
        return {
            (("status", "queued"),): depth.queued,
            (("status", "running"),): depth.running,
        }

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
            self._submit(pool, self._execute, entry)

    def _submit(
        self, pool: ThreadPoolExecutor, job: Callable[[QueuedRun], None], entry: QueuedRun
    ) -> None:
        future = pool.submit(self._guarded, job, entry)
        self._active[future] = entry.id
        future.add_done_callback(lambda _f: self._wake.set())  # a free slot: take at once

    def _recover(self, pool: ThreadPoolExecutor) -> None:
        self._reap()
        candidates = list(self._busy.values())
        self._busy.clear()
        for orphan in self.coord.orphans():
            if orphan.owner is None or orphan.owner == self.owner or self._lacks(orphan):
                continue
            adopted = self.coord.adopt(orphan.id, orphan.owner, self.owner)
            if adopted is not None:
                self.metrics.recoveries.inc()
                self._say(f"adopted queued run {orphan.id} of {orphan.owner}")
                candidates.append(adopted)
        for entry in candidates:
            self._submit(pool, self._recover_one, entry)

    def _lacks(self, orphan: QueuedRun) -> bool:
        """True when this process lacks a recipe ``orphan`` names: adopting it would end
        it ``error`` and leave its session interrupted although the process that ran it
        had the recipe; it is left for one that has it (said once per row)."""
        try:
            self.recipes.check(orphan.spec())
        except UsageError as e:
            if orphan.id not in self._left:
                self._left.add(orphan.id)
                who = f"queued run {orphan.id} of {orphan.owner}"
                self._say(f"{who} left to a serve with its recipes: {e}")
                _log.warning("orphan not adopted", queue_id=orphan.id, error=str(e))
            return True
        return False

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
            self.metrics.ended("error")
            self.report.done.append(entry.id)

    def _context(self, session_id: str) -> RecipeContext:
        return RecipeContext(
            session_id=session_id,
            project_dir=session_dir(self.engine, session_id),
            environ=self.engine.environ,
        )

    def _execute(self, entry: QueuedRun) -> None:
        """Run a queued run to its end in its session (a new one if it names none)."""
        spec = entry.spec()
        self.recipes.check(spec)  # before a session is created for nothing
        engine = self.engine
        sid = entry.session_id
        if sid is None:
            # Built before the session exists: a recipe that raises leaves no empty session.
            sid = fresh_session_id(engine, engine.clock.now())
            ctx = RecipeContext(
                session_id=sid, project_dir=engine.project_dir, environ=engine.environ
            )
            config = self.recipes.build(spec, ctx)
            create_session(engine, None, {"clew_queue_id": entry.id}, session_id=sid)
        else:
            config = self.recipes.build(spec, self._context(sid))
        self.coord.attach(entry.id, self.owner, sid, len(main_runs(engine, sid)))
        handle = start_run(engine, sid, spec.prompt, config, watch=False)
        self.metrics.started.inc()
        outcome = handle.result()
        self.coord.finish(entry.id, self.owner, outcome.status, run=outcome.run_id, error=None)
        self.metrics.ended(outcome.status)
        self.report.done.append(entry.id)
        self._say(f"queued run {entry.id}: {outcome.status} (session {sid})")

    def _recover_one(self, entry: QueuedRun) -> None:
        """Finish an adopted run: resume it, record how it ended, or queue it again."""
        sid, before = entry.session_id, entry.runs_before
        runs = [] if sid is None else self.engine.store.read_runs(sid)
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
            config = self.recipes.build(entry.spec(), self._context(sid))
            self._say(f"resuming queued run {entry.id} (session {sid})")
            try:
                outcome = resume(self.engine, resume_ready(self.engine, sid), config)
            except SessionBusy:
                self._busy[entry.id] = entry
                return
            status, run_id = outcome.status, outcome.run_id
        self.coord.finish(entry.id, self.owner, status, run=run_id, error=None)
        self.metrics.ended(status)
        self.report.recovered.append(entry.id)
        self._say(f"recovered queued run {entry.id}: {status} (session {sid})")
