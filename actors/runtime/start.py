"""Starting: a new session, a new main run of a session, the :class:`RunHandle` on a run
in progress, and its ``async`` twins (``arun``, ``astream``).

A new main run expands the prompt, records the inputs and runs the Brain.
:meth:`Session.start` checks and locks (raising at once what ``run`` would raise before
writing anything), then runs the main run on a thread of its own and returns a
:class:`RunHandle`: watch it, stream it, await it, cancel it. ``Session.run`` is
``start(...).result()``. A resume, a retry and a rerun run their main run the same way
(:func:`owned_run`, :func:`execute_prepared`).

The stream is fed by the writer's commit listener: every event of the session committed
from the run's start, in ``seq`` order, reaches the stream before the run goes on — so
the stream is the run's log, with no gap — interleaved with the ephemeral
:class:`TextDelta` pieces of streaming models once someone watches.

The ``async`` twins of ``run`` and ``stream`` await a run and iterate its stream. The
run goes on on its own threads, as with ``start`` (the actors stay threads); they bridge
its :class:`RunHandle` to the event loop without ever blocking it — a thread waits on
the handle and hands each item or the outcome to the loop with
``loop.call_soon_threadsafe``, and the loop awaits an ``asyncio`` future or queue. The
async models of a run started here run their coroutines on this loop
(``actors.models.async_models``). Cancelling the awaiting task (``task.cancel()``)
cancels the run durably — recorded like ``handle.cancel``, source ``handle`` — and
waits, without blocking the loop, for the run to record its end (up to
:data:`CANCEL_WAIT_S`; a second cancellation stops waiting) before the
``CancelledError`` goes on.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec

from actors.errors import NeedsResume, SessionWaiting, Unencodable, UsageError
from actors.models.async_models import run_loop
from actors.models.protocol import TextDelta
from actors.models.storable import check_storable, check_text
from actors.orchestration.brain import Executor, RunRequest, execute
from actors.orchestration.env import SessionEnv
from actors.orchestration.main_run import RunOutcome
from actors.recording.inputs import FLOW, RunInputs, tool_records
from actors.runtime import control
from actors.runtime.config import RunConfig, context_record, team_for_run
from actors.runtime.engine import Engine, model_names, session_dir
from actors.runtime.status import OPEN_RUN_STATUSES
from actors.runtime.upkeep import refuse_if_archived
from eventlog.errors import ClewError
from eventlog.events import SessionCreated
from eventlog.ids import brain_agent_id, main_run_id, session_of
from eventlog.logs import get_logger
from eventlog.records import AppendRequest, StoredEvent
from projections.references import expand_references

#: Fresh session ids to try before giving up: 20 collisions of a 16-bit suffix in one
#: second do not happen by chance.
_SESSION_ID_TRIES = 20


# --- a new session ------------------------------------------------------------------------


def fresh_session_id(engine: Engine, now: str) -> str:
    """Return a session id no session of the store has yet."""
    for _ in range(_SESSION_ID_TRIES):
        sid = engine.ids.new_session_id(now)
        if not engine.store.session_exists(sid):
            return sid
    raise UsageError("could not allocate a fresh session id")  # pragma: no cover


def create_session(
    engine: Engine,
    cwd: str | None,
    metadata: dict[str, Any] | None,
    *,
    session_id: str | None = None,
) -> str:
    """Create a session (``session_created``) and return its id; see
    :meth:`Runtime.new_session` for the arguments and errors. ``session_id``: one
    :func:`fresh_session_id` gave (a queued run builds its recipes first)."""
    cwd = str(Path(cwd).absolute()) if cwd else str(engine.project_dir)
    try:
        check_storable({"cwd": cwd, "metadata": metadata or {}}, "the session's metadata")
    except Unencodable as e:
        raise UsageError(str(e)) from None
    engine.refuse_if_read_only("creating a session")
    now = engine.clock.now()
    sid = session_id or fresh_session_id(engine, now)
    event = SessionCreated(
        session_id=sid, cwd=cwd, root_agent_id=brain_agent_id(sid), metadata=metadata or {}
    )
    engine.writer.append(AppendRequest(session_id=sid, event=event, created_at=now))
    return sid


# --- a new main run -----------------------------------------------------------------------


def check_prompt(prompt: object) -> str:
    """Return ``prompt`` if a run can record it.

    Raises:
        UsageError: not a string, empty, or not valid text (a lone surrogate: what Python
            makes of a non-UTF-8 byte in a command-line argument).
    """
    if not isinstance(prompt, str):
        raise UsageError(f"the prompt must be a string, not {type(prompt).__name__}")
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    try:
        check_text(prompt, "the prompt")
    except Unencodable as e:
        raise UsageError(str(e)) from None
    return prompt


def advise(engine: Engine, outcome: RunOutcome) -> RunOutcome:
    """Add what to do next to an interrupted outcome: resume, or (nothing written) run again."""
    if outcome.status != "interrupted":
        return outcome
    sid = outcome.session_id
    try:
        started = any(r.run_id == outcome.run_id for r in engine.store.read_runs(sid))
    except ClewError:
        started = True  # the store cannot say: resuming is what can be tried
    then = (
        f"once the cause is fixed, resume it: clew resume {sid}"
        if started
        else "nothing of the run was written; once the cause is fixed, run it again"
    )
    return msgspec.structs.replace(outcome, error=f"{outcome.error}; {then}")


@dataclass
class PreparedRun:
    """A main run checked, recorded inputs decided and the session locked: ready to go."""

    engine: Engine
    session_id: str
    env: SessionEnv
    request: RunRequest
    #: What executes it: the Brain, or a framework's agent (``RunKind.execute``).
    executor: Executor = execute


def owned_run(
    engine: Engine,
    session_id: str,
    build: Callable[[], tuple[SessionEnv, RunRequest]],
    executor: Executor = execute,
) -> PreparedRun:
    """Claim the session for this thread and own it, then ``build`` the run's environment
    and request under that; if anything raises, let the session go again.

    Raises:
        SessionBusy: another thread of this process runs the session, or another
            process owns it.
    """
    engine.claim_run(session_id)
    try:
        engine.own(session_id)
        env, request = build()
    except BaseException:
        engine.release(session_id)
        engine.release_run(session_id)
        raise
    return PreparedRun(
        engine=engine, session_id=session_id, env=env, request=request, executor=executor
    )


def prepare_run(engine: Engine, session_id: str, prompt: str, config: RunConfig) -> PreparedRun:
    """Check everything a new main run needs and take the session's lock; nothing is
    written yet. :meth:`Session.run`'s docstring lists the arguments and the errors
    (one list, kept in one place)."""
    sid = session_id
    engine.refuse_if_read_only("running a session")
    check_prompt(prompt)
    settings = config.settings or engine.settings
    project = session_dir(engine, sid)
    # @path / @@session markers are expanded here, once; the *expanded* text is the run's
    # recorded input, so a replay never reads a file or another session again.
    expanded = expand_references(prompt, project, engine.store.read_events)
    # The team is resolved (and refused) before anything is written.
    roster, models = team_for_run(config, engine.environ)
    context = context_record(settings, models, roster, project)

    def build() -> tuple[SessionEnv, RunRequest]:
        row = engine.store.read_session(sid)
        refuse_if_archived(row, "a new run")
        # The runs not finished and the Brain's run count: two indexed reads, flat in
        # the number of runs the session has had.
        check = engine.store.read_new_run_check(sid, brain_agent_id(sid))
        statuses = {status for _, _, status in check.unfinished}
        if not statuses.isdisjoint(OPEN_RUN_STATUSES):
            raise NeedsResume(
                f"session {sid} has an interrupted run; resume it first (clew resume {sid})"
            )
        if "waiting" in statuses:
            raise SessionWaiting(
                f"session {sid} is waiting for a person; decide (clew pending {sid}),"
                f" then resume it (clew resume {sid})"
            )
        n = check.owned + 1
        inputs = RunInputs(
            prompt=expanded.prompt,
            raw_prompt=prompt,
            create_agent=n == 1,
            references=expanded.references,
            models=model_names(models),
            tools=tool_records(roster.tools),
            settings=settings,
            team=roster.record(),
            context=context,
            flow=FLOW,
        ).in_oldest_version()
        request = RunRequest(
            run_id=main_run_id(sid, n), parent_node_id=row.active_node_id, inputs=inputs
        )
        return engine.env(sid, models, roster.tools, settings, roster=roster), request

    return owned_run(engine, sid, build)


def execute_prepared(run: PreparedRun) -> RunOutcome:
    """Run a prepared main run to its end on this thread; release the session's lock."""
    engine, sid = run.engine, run.session_id
    try:
        outcome = run.executor(run.env, engine.task_manager(sid), run.request)
        if outcome.status != "interrupted":  # else the writer may be what failed
            engine.writer.flush()
    finally:
        engine.release(sid)
        engine.release_run(sid)
    return advise(engine, outcome)


def start_run(
    engine: Engine, session_id: str, prompt: str, config: RunConfig, *, watch: bool = True
) -> RunHandle:
    """Start a new main run on a thread of its own; return its handle at once.
    ``watch=False``: no ``stream()`` (what ``run`` and ``arun`` use)."""
    return RunHandle(prepare_run(engine, session_id, prompt, config), watch=watch)


# --- a run in progress --------------------------------------------------------------------

log = get_logger("clew.run")

#: What a run's stream yields: committed events and text pieces.
StreamItem = StoredEvent | TextDelta

#: After Ctrl-C, how long ``result()``/``stream()`` wait for the run to record its
#: cancellation before the ``KeyboardInterrupt`` goes on (a second Ctrl-C stops waiting).
INTERRUPT_WAIT_S: Final = 10.0

_END: Final = object()
T = TypeVar("T")


class RunHandle:
    """One main run in progress (or finished). Thread-safe; one consumer of ``stream``."""

    def __init__(self, prepared: PreparedRun, *, watch: bool = True) -> None:
        self.session_id: str = prepared.session_id
        #: The main run's id (``<session>:brain:r<n>``).
        self.run_id: str = prepared.request.run_id
        self._prepared = prepared
        self._engine = prepared.engine
        self._scope = prepared.env.cancel
        self._done = threading.Event()
        self._outcome: RunOutcome | None = None
        self._error: BaseException | None = None
        self._items: queue.SimpleQueue[object] | None = queue.SimpleQueue() if watch else None
        self._unsubscribe = (
            self._engine.writer.subscribe(self._on_commit) if watch else (lambda: None)
        )
        # A request an earlier run did not pick up is not for this one.
        control.clear(self._engine.home, self.session_id)
        self._thread = threading.Thread(
            target=self._main, name=f"clew-run-{self.session_id}", daemon=True
        )
        self._engine.runs.add(self)
        self._thread.start()
        threading.Thread(
            target=self._poll_requests, name=f"clew-control-{self.session_id}", daemon=True
        ).start()

    def __repr__(self) -> str:
        state = "done" if self._done.is_set() else "running"
        return f"RunHandle({self.run_id!r}, {state})"

    # --- the run's thread -----------------------------------------------------------------

    def _main(self) -> None:
        try:
            self._outcome = execute_prepared(self._prepared)
        except BaseException as e:  # handed to whoever awaits the result
            self._error = e
        finally:
            self._unsubscribe()
            if self._items is not None:
                self._items.put(_END)
            self._engine.runs.discard(self)
            self._done.set()

    def _on_commit(self, events: list[StoredEvent]) -> None:
        assert self._items is not None
        sid = self.session_id
        for ev in events:
            if session_of(ev.event_id) == sid:
                self._items.put(ev)

    def _on_delta(self, delta: TextDelta) -> None:
        assert self._items is not None
        self._items.put(delta)

    def _poll_requests(self) -> None:
        """Pick up a cancel request from another process (``clew cancel``)."""
        home = self._engine.home
        while not self._done.wait(control.POLL_S):
            reason = control.take_cancel_request(home, self.session_id)
            if reason is not None:
                self._scope.cancel(reason, "external")

    # --- the public API -------------------------------------------------------------------

    def done(self) -> bool:
        """True once the run ended (whatever its outcome)."""
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        """True once the run was asked to stop (it may still be winding down)."""
        return self._scope.cancelled

    def cancel(self, reason: str = "cancelled by the caller") -> bool:
        """Ask the run to stop; return False if it already was (or has ended).

        The run stops at its next safe point — between steps, or at once in a model
        call, while a running tool is asked to stop (``ToolContext.cancelled``) and has
        a grace second to return — and ends with ``run_ended(status="cancelled")``.
        """
        return self._cancel(reason, "handle")

    def _cancel(self, reason: str, source: str) -> bool:
        if self._done.is_set():
            return False
        log.info("run_cancel_requested", session_id=self.session_id, reason=reason, source=source)
        return self._scope.cancel(reason, source)

    def result(self, timeout: float | None = None) -> RunOutcome:
        """Wait for the run to end; return its outcome.

        Ctrl-C while waiting cancels the run (recorded as cancelled, source
        ``interrupt``), waits for that to be recorded, and raises ``KeyboardInterrupt``.

        Raises:
            TimeoutError: the run did not end within ``timeout`` seconds (it goes on).
            ClewError: what the run raised (a store failure …).
        """
        try:
            if not self._done.wait(timeout):
                raise TimeoutError(f"run {self.run_id} did not end within {timeout:g} s")
        except KeyboardInterrupt:
            self._interrupted()
            raise
        if self._error is not None:
            raise self._error
        assert self._outcome is not None
        return self._outcome

    def stream(self) -> Generator[StreamItem, None, None]:
        """Yield the run's committed events (``StoredEvent``, in ``seq`` order, none
        missing) interleaved with ``TextDelta`` pieces of streaming models; end when the
        run ends. Events committed before the call are yielded first; pieces flow from
        the call on. One consumer only.

        Raises:
            RuntimeError: the run was started without watching (``Session.run``).
        """
        items = self._items
        if items is None:
            raise RuntimeError("this run was started without a stream (use Session.start)")
        self._prepared.env.on_delta = self._on_delta
        try:
            while (item := items.get()) is not _END:
                yield item  # type: ignore[misc]
        except KeyboardInterrupt:
            self._interrupted()
            raise
        finally:
            self._prepared.env.on_delta = None

    async def aresult(self) -> RunOutcome:
        """Await the run's end without blocking the event loop; return its outcome.

        Cancelling the awaiting task cancels the run (recorded) before the
        ``CancelledError`` goes on.
        """
        return await aresult(self)

    def astream(self) -> AsyncGenerator[StreamItem, None]:
        """``async`` twin of :meth:`stream`: closing it early stops watching (the run
        goes on); cancelling the task iterating it cancels the run (recorded)."""
        return astream(self)

    def stop(self, reason: str, wait: float) -> None:
        """Cancel the run and wait up to ``wait`` seconds for it to end (closing)."""
        self._cancel(reason, "handle")
        self._done.wait(wait)

    def _interrupted(self) -> None:
        """Ctrl-C in the thread waiting for the run: cancel it and wait for the record."""
        self._cancel("interrupted (Ctrl-C)", "interrupt")
        self._done.wait(INTERRUPT_WAIT_S)


# --- its async twins ----------------------------------------------------------------------

#: After the awaiting task was cancelled, how long it waits for the run to record its
#: cancellation before the ``CancelledError`` goes on (as long as after a Ctrl-C).
CANCEL_WAIT_S: Final = 10.0
#: The reason recorded when the task awaiting a run is cancelled.
TASK_CANCELLED: Final = "the awaiting asyncio task was cancelled"
#: The reason recorded when ``Session.astream`` is closed before its run ended.
STREAM_CLOSED: Final = "the stream was closed before the run ended"


class _Failed:
    """What the stream raised, handed to the loop."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def aresult(handle: RunHandle) -> RunOutcome:
    """Await the run's end; return its outcome (see :meth:`RunHandle.result`)."""
    ended = _ended(handle)
    try:
        return await asyncio.shield(ended)
    except asyncio.CancelledError:
        await _stop(handle, TASK_CANCELLED, ended)
        raise


async def astream(handle: RunHandle) -> AsyncGenerator[StreamItem, None]:
    """Yield what :meth:`RunHandle.stream` yields, as it comes.

    Closing the iterator early stops watching (the run goes on); cancelling the task
    iterating it cancels the run.
    """
    loop = asyncio.get_running_loop()
    items: asyncio.Queue[object] = asyncio.Queue()
    stop = threading.Event()
    threading.Thread(
        target=_pump,
        args=(handle, loop, items, stop),
        name=f"clew-astream-{handle.session_id}",
        daemon=True,
    ).start()
    try:
        while (item := await items.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]
    except asyncio.CancelledError:
        await _stop(handle, TASK_CANCELLED)
        raise
    finally:
        stop.set()


def _pump(
    handle: RunHandle,
    loop: asyncio.AbstractEventLoop,
    items: asyncio.Queue[object],
    stop: threading.Event,
) -> None:
    """Hand the handle's stream to the loop, item by item, then the end (its thread)."""
    stream = handle.stream()
    last: object = _END
    try:
        for item in stream:
            if stop.is_set() or not _send(loop, items.put_nowait, item):
                break
    except BaseException as e:  # handed to the consumer, whatever it is
        last = _Failed(e)
    finally:
        stream.close()  # nobody streams any more
    _send(loop, items.put_nowait, last)


def _send(loop: asyncio.AbstractEventLoop, put: Callable[[T], None], item: T) -> bool:
    """Call ``put(item)`` on the loop's thread; False if the loop is closed."""
    try:
        loop.call_soon_threadsafe(put, item)
    except RuntimeError:  # the loop is closed: nobody waits any more
        return False
    return True


def _ended(handle: RunHandle) -> asyncio.Future[RunOutcome]:
    """Return a future of the loop that a thread settles when the run ends."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[RunOutcome] = loop.create_future()

    def settle(result: RunOutcome | BaseException) -> None:
        if future.done():  # cancelled meanwhile
            return
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)

    def wait() -> None:
        result: RunOutcome | BaseException
        try:
            result = handle.result()
        except BaseException as e:  # handed to the awaiting task, whatever it is
            result = e
        _send(loop, settle, result)

    threading.Thread(target=wait, name=f"clew-await-{handle.session_id}", daemon=True).start()
    return future


async def _stop(
    handle: RunHandle, reason: str, ended: asyncio.Future[RunOutcome] | None = None
) -> None:
    """Cancel the run and wait (on the loop) for it to record its end."""
    if not handle.done():
        if not handle.cancelled:  # else the first reason stands
            handle.cancel(reason)
        ended = ended or _ended(handle)
        await asyncio.wait([ended], timeout=CANCEL_WAIT_S)
    if ended is not None:  # what the run raised is not news: the CancelledError goes on
        ended.add_done_callback(_seen)


def _seen(future: asyncio.Future[RunOutcome]) -> None:
    """Mark the future's exception retrieved (else asyncio logs it as never retrieved)."""
    if not future.cancelled():
        future.exception()


async def arun(engine: Engine, session_id: str, prompt: str, config: RunConfig) -> RunOutcome:
    """Run one main run from this loop and return its outcome (``Session.arun``)."""
    with run_loop(asyncio.get_running_loop()):
        handle = start_run(engine, session_id, prompt, config, watch=False)
    return await aresult(handle)


async def astream_run(
    engine: Engine, session_id: str, prompt: str, config: RunConfig
) -> AsyncGenerator[StreamItem, None]:
    """Start one main run from this loop and yield its stream (``Session.astream``).

    The run belongs to the iteration: closing it before the run ended cancels the run.
    """
    with run_loop(asyncio.get_running_loop()):
        handle = start_run(engine, session_id, prompt, config)
    finished = False
    try:
        async with aclosing(astream(handle)) as items:
            async for item in items:
                yield item
        finished = True
    finally:
        if not finished and not handle.cancelled:  # else it is stopped already
            await _stop(handle, STREAM_CLOSED)
    await aresult(handle)  # the run's own error, if it raised
