"""Async models on the actors' threads: the sync adapter a run wraps them in.

The actors stay threads. When a run resolves its model chains, a model with
``acomplete`` (an :class:`AsyncModel`) is wrapped by :func:`as_model` in a
:class:`SyncBridge`, whose ``complete`` runs the coroutine on an event loop and waits
for it on the calling thread (the helper thread of the model call):

- on the loop the run was started from, when it was started with ``Session.arun`` /
  ``astream`` (:func:`run_loop` binds it around the start), so the model shares the
  application's loop and its clients (an ``httpx.AsyncClient`` belongs to one loop);
- else on the runtime's own loop (:func:`runtime_loop`): one daemon thread per process,
  started at the first call.

When the caller gives up on the call — the run was cancelled, the model timeout passed —
the coroutine's task is cancelled on its loop. An :class:`AsyncStreamingModel` becomes a
:class:`SyncStreamingBridge`, a ``StreamingModel`` whose ``stream`` pumps ``astream``.
The adapter keeps the model's ``name`` and returns its very responses, so a run records
the events a sync model with the same replies would; replay and resume never notice
(a replay never calls a model).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from actors.errors import UsageError
from actors.models.calls import on_give_up
from actors.models.protocol import (
    AsyncModel,
    AsyncStreamingModel,
    Model,
    ModelRequest,
    ModelResponse,
    StreamItem,
)
from eventlog.errors import ModelError

T = TypeVar("T")

#: What goes wherever a model goes: a sync ``Model`` or an ``AsyncModel``.
AnyModel = Model | AsyncModel

_run_loop: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar("clew_run_loop", default=None)


@contextmanager
def run_loop(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Make the async models wrapped inside the block run on ``loop`` (the loop a run
    is started from with ``arun``/``astream``)."""
    token = _run_loop.set(loop)
    try:
        yield
    finally:
        _run_loop.reset(token)


def as_model(model: AnyModel) -> Model:
    """Return ``model`` as a sync ``Model``: itself if it is one (a model with both
    ``complete`` and ``acomplete`` is used sync), else its :class:`SyncBridge`."""
    if isinstance(model, Model):
        return model
    loop = _run_loop.get()
    if isinstance(model, AsyncStreamingModel):
        return SyncStreamingBridge(model, loop)
    if isinstance(model, AsyncModel):
        return SyncBridge(model, loop)
    raise UsageError(_not_a_model(model))


def _not_a_model(model: object) -> str:
    """Say what a ``model=`` argument lacks, and what a model is."""
    what = "None" if model is None else f"{type(model).__name__} object"
    needs = "a `name` and `complete(request) -> ModelResponse` (or `acomplete`)"
    missing = [a for a in ("name", "complete") if not hasattr(model, a)]
    lacks = f" (it has no {' and no '.join(missing)})" if model is not None and missing else ""
    return (
        f"model: {what} is not a model{lacks}: pass one with {needs}, e.g. ScriptedModel(...) "
        "or model_from_spec('openai:gpt-4o-mini') (docs/runtime.md)"
    )


class _RuntimeLoop:
    """The runtime's own event loop: one per process (a forked child starts its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="clew-async-models", daemon=True
                ).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop


_runtime_loop = _RuntimeLoop()


def runtime_loop() -> asyncio.AbstractEventLoop:
    """Return the loop async models run on when no run loop was bound (started lazily,
    on a daemon thread that never keeps the interpreter alive)."""
    return _runtime_loop.get()


class SyncBridge:
    """An :class:`AsyncModel` as a sync ``Model``: ``complete`` runs ``acomplete`` on
    the bound loop (else the runtime's) and waits for it."""

    def __init__(self, model: AsyncModel, loop: asyncio.AbstractEventLoop | None) -> None:
        self.model = model
        #: The wrapped model's name: the one recorded in events.
        self.name: str = model.name
        #: The loop the run was started from; None: the runtime's own loop.
        self.loop = loop

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Run ``acomplete(request)`` on the loop; return its response.

        Raises:
            ModelError: what the model raised, or its task was cancelled on its loop,
                or that loop is closed.
        """
        return _wait(self._submit(self.model.acomplete(request)))

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop or runtime_loop())
        except RuntimeError:  # the loop is closed: the coroutine never runs
            coro.close()
            raise ModelError(
                "the event loop the run was started from is closed", error_type="LoopClosed"
            ) from None


class SyncStreamingBridge(SyncBridge):
    """An :class:`AsyncStreamingModel` as a sync ``StreamingModel``."""

    model: AsyncStreamingModel

    def __init__(self, model: AsyncStreamingModel, loop: asyncio.AbstractEventLoop | None) -> None:
        super().__init__(model, loop)

    def stream(self, request: ModelRequest) -> Iterator[StreamItem]:
        """Yield what ``astream(request)`` yields, as it comes; closing this iterator
        early (the run was cancelled) cancels the stream's task."""
        items: queue.SimpleQueue[StreamItem | None] = queue.SimpleQueue()
        future = self._submit(_pump(self.model.astream(request), items))
        remove = on_give_up(future.cancel)
        try:
            while (item := items.get()) is not None:
                yield item
            _wait(future)  # what the stream raised, if it failed
        finally:
            future.cancel()
            remove()


def _wait(future: concurrent.futures.Future[T]) -> T:
    """Wait for ``future``; cancel it if the caller of this helper-thread call gives up."""
    remove = on_give_up(future.cancel)
    try:
        return future.result()
    except concurrent.futures.CancelledError:
        raise ModelError(
            "the async model's task was cancelled on its event loop", error_type="Cancelled"
        ) from None
    finally:
        remove()


async def _pump(
    stream: AsyncIterator[StreamItem], items: queue.SimpleQueue[StreamItem | None]
) -> None:
    """Put what ``stream`` yields on ``items``, then ``None`` (also when it fails or is
    cancelled, so the waiting thread always wakes)."""
    try:
        async for item in stream:
            items.put(item)
    finally:
        try:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            items.put(None)
