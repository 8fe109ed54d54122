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
per process. Its loop, every ``poll_s``:

1. **Recover** (at start, then every third of the lease ttl): a queued run whose owner's
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
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from actors.demo import demo_model, demo_tools
from actors.errors import SessionBusy, UsageError
from actors.models.chains import ModelArg
from actors.models.specs import is_model_spec, model_of_spec
from actors.models.tools import Tool
from actors.orchestration.team import Team
from actors.runtime.config import RunConfig
from actors.runtime.coord.protocol import Coordinator, QueuedRun, RunSpec, worker_lease
from actors.runtime.engine import OPEN_RUN_STATUSES, Engine, session_dir
from actors.runtime.recovery import resume, resume_ready
from actors.runtime.start import create_session, fresh_session_id, start_run
from actors.runtime.status import main_runs
from eventlog.errors import ClewError, quoted
from eventlog.ids import is_main_run
from eventlog.logs import get_logger

_log = get_logger("clew.serve")


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


def load_app(ref: str) -> Recipes:
    """Import ``module:callable`` and call it; it returns the app's :class:`Recipes`.

    Raises:
        UsageError: a malformed reference, a module or callable that cannot be found, or
            a callable that does not return ``Recipes``.
    """
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--app {quoted(ref)} is not of the form module:callable")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(f"--app {quoted(ref)}: cannot import {quoted(module_name)}: {e}") from e
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UsageError(f"--app {quoted(ref)}: {quoted(attr)} is not a callable of the module")
    recipes = factory()
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


class Server:
    """Take queued runs and recover dead peers' runs until stopped."""

    def __init__(
        self,
        engine: Engine,
        recipes: Recipes,
        *,
        concurrency: int = 1,
        poll_s: float = 0.2,
        drain_s: float = 30.0,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
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
        self._left: set[int] = set()  # orphans left for a process with their recipes

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
            if orphan.owner is None or orphan.owner == self.owner or self._lacks(orphan):
                continue
            adopted = self.coord.adopt(orphan.id, orphan.owner, self.owner)
            if adopted is not None:
                self._say(f"adopted queued run {orphan.id} of {orphan.owner}")
                candidates.append(adopted)
        for entry in candidates:
            self._active[pool.submit(self._guarded, self._recover_one, entry)] = entry.id

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
        outcome = start_run(engine, sid, spec.prompt, config, watch=False).result()
        self.coord.finish(entry.id, self.owner, outcome.status, run=outcome.run_id, error=None)
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
            try:
                outcome = resume(self.engine, resume_ready(self.engine, sid), config)
            except SessionBusy:
                self._busy[entry.id] = entry
                return
            status, run_id = outcome.status, outcome.run_id
        self.coord.finish(entry.id, self.owner, status, run=run_id, error=None)
        self.report.recovered.append(entry.id)
        self._say(f"recovered queued run {entry.id}: {status} (session {sid})")
