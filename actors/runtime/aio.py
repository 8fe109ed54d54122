"""The ``async`` twins of ``run`` and ``stream``: await a run, iterate its stream.

The run goes on on its own threads, as with ``start`` (the actors stay threads); these
bridge its :class:`~actors.runtime.handle.RunHandle` to the event loop without ever
blocking it — a thread waits on the handle and hands each item or the outcome to the
loop with ``loop.call_soon_threadsafe``, and the loop awaits an ``asyncio`` future or
queue. The async models of a run started here run their coroutines on this loop
(``actors.models.async_models``).

Cancelling the awaiting task (``task.cancel()``) cancels the run durably — recorded like
``handle.cancel``, source ``handle`` — and waits, without blocking the loop, for the run
to record its end (up to :data:`CANCEL_WAIT_S`; a second cancellation stops waiting)
before the ``CancelledError`` goes on.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Final, TypeVar

from actors.models.async_models import run_loop

if TYPE_CHECKING:
    from actors.models.chains import ModelArg
    from actors.models.tools import Tool
    from actors.orchestration.main_run import RunOutcome
    from actors.orchestration.team import Team
    from actors.recording.inputs import RunSettings
    from actors.runtime.handle import RunHandle, StreamItem
    from actors.runtime.runtime import Runtime

#: After the awaiting task was cancelled, how long it waits for the run to record its
#: cancellation before the ``CancelledError`` goes on (as long as after a Ctrl-C).
CANCEL_WAIT_S: Final = 10.0
#: The reason recorded when the task awaiting a run is cancelled.
TASK_CANCELLED: Final = "the awaiting asyncio task was cancelled"
#: The reason recorded when ``Session.astream`` is closed before its run ended.
STREAM_CLOSED: Final = "the stream was closed before the run ended"

_END: Final = object()
T = TypeVar("T")


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


async def arun(
    runtime: Runtime,
    session_id: str,
    prompt: str,
    *,
    model: ModelArg,
    tools: Sequence[Tool] = (),
    settings: RunSettings | None = None,
    team: Team | None = None,
) -> RunOutcome:
    """Run one main run from this loop and return its outcome (``Session.arun``)."""
    with run_loop(asyncio.get_running_loop()):
        handle = runtime.start(
            session_id, prompt, model=model, tools=tools, settings=settings, team=team, watch=False
        )
    return await aresult(handle)


async def astream_run(
    runtime: Runtime,
    session_id: str,
    prompt: str,
    *,
    model: ModelArg,
    tools: Sequence[Tool] = (),
    settings: RunSettings | None = None,
    team: Team | None = None,
) -> AsyncGenerator[StreamItem, None]:
    """Start one main run from this loop and yield its stream (``Session.astream``).

    The run belongs to the iteration: closing it before the run ended cancels the run.
    """
    with run_loop(asyncio.get_running_loop()):
        handle = runtime.start(
            session_id, prompt, model=model, tools=tools, settings=settings, team=team
        )
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
