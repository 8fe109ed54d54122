"""Async models behind the sync seam: wrapped when a run resolves its chains, run on a
loop, cancelled on that loop when their caller gives up."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import AsyncModel, AsyncStreamingModel, Model, ScriptedModel, StreamingModel
from actors.errors import CallCancelled, CallTimedOut
from actors.models.async_models import (
    SyncBridge,
    SyncStreamingBridge,
    as_model,
    run_loop,
    runtime_loop,
)
from actors.models.calls import CancelScope, call_off_thread, on_give_up
from actors.models.chains import model_chains
from actors.models.protocol import ModelRequest, ModelResponse, StreamItem
from eventlog.blocks import Message, TextBlock
from eventlog.errors import ModelError

REQUEST = ModelRequest(model="m", messages=[Message(role="user", content=[TextBlock(text="hi")])])
REPLY = ModelResponse(content=[TextBlock(text="hello there")], model="m")


class Echo:
    """An async model that answers at once (or raises ``error``)."""

    name = "echo"

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(0)
        if self.error is not None:
            raise self.error
        return REPLY


class Pieces(Echo):
    """An async streaming model yielding ``pieces``, then the response (or raising)."""

    def __init__(self, pieces: list[str], error: Exception | None = None) -> None:
        super().__init__()
        self.pieces = pieces
        self.stream_error = error

    async def astream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        for piece in self.pieces:
            await asyncio.sleep(0)
            yield piece
        if self.stream_error is not None:
            raise self.stream_error
        yield REPLY


class Forever:
    """An async model that never answers; ``cancelled`` is set when its task is."""

    name = "forever"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        raise AssertionError("unreachable")

    async def astream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield "first "
        await self.acomplete(request)


@pytest.fixture
def other_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(30)
    loop.close()


# --- wrapping ---------------------------------------------------------------------------


def test_a_sync_model_is_used_as_it_is_and_an_async_one_is_wrapped_under_its_name() -> None:
    sync = ScriptedModel({"rules": [{"replies": [{"text": "hi"}]}]})
    assert sync is as_model(sync)
    bridged = as_model(Echo())
    assert isinstance(Echo(), AsyncModel) and not isinstance(Echo(), Model)
    assert isinstance(bridged, SyncBridge) and isinstance(bridged, Model)
    assert not isinstance(bridged, StreamingModel)  # it cannot stream: asked with complete
    assert "echo" == bridged.name
    assert REPLY == bridged.complete(REQUEST)


def test_every_async_model_of_a_model_argument_is_wrapped() -> None:
    sync = ScriptedModel({"rules": [{"replies": [{"text": "hi"}]}]})
    chains = model_chains({"default": [Echo(), sync], "router": Pieces([])})
    assert isinstance(chains["default"][0], SyncBridge) and sync is chains["default"][1]
    assert isinstance(chains["router"][0], SyncStreamingBridge)
    assert isinstance(model_chains(Echo())["default"][0], SyncBridge)


def test_an_async_streaming_model_becomes_a_streaming_model() -> None:
    model = Pieces(["hello ", "there"])
    assert isinstance(model, AsyncStreamingModel)
    bridged = as_model(model)
    assert isinstance(bridged, StreamingModel)
    assert ["hello ", "there", REPLY] == list(bridged.stream(REQUEST))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1), max_size=12))
def test_a_bridged_stream_yields_what_the_async_stream_yields_in_order(pieces: list[str]) -> None:
    bridged = as_model(Pieces(pieces))
    assert isinstance(bridged, StreamingModel)
    assert [*pieces, REPLY] == list(bridged.stream(REQUEST))


def test_errors_reach_the_caller_as_they_were_raised() -> None:
    failing = ModelError("overloaded", status=529, error_type="overloaded")
    with pytest.raises(ModelError, match="overloaded") as raised:
        as_model(Echo(failing)).complete(REQUEST)
    assert failing is raised.value
    cut = ModelError("the stream was cut", error_type="StreamInterrupted")
    bridged = as_model(Pieces(["a ", "b "], cut))
    assert isinstance(bridged, StreamingModel)
    got: list[StreamItem] = []
    with pytest.raises(ModelError, match="the stream was cut"):
        got.extend(bridged.stream(REQUEST))
    assert ["a ", "b "] == got


# --- loops ------------------------------------------------------------------------------


def test_without_a_run_loop_calls_run_on_the_runtimes_own_loop_thread() -> None:
    seen: list[str] = []

    class Where(Echo):
        async def acomplete(self, request: ModelRequest) -> ModelResponse:
            seen.append(threading.current_thread().name)
            return await super().acomplete(request)

    as_model(Where()).complete(REQUEST)
    as_model(Where()).complete(REQUEST)
    assert ["clew-async-models"] * 2 == seen
    assert runtime_loop() is runtime_loop()  # one per process
    [thread] = [t for t in threading.enumerate() if t.name == "clew-async-models"]
    assert thread.daemon  # never keeps the interpreter alive


def test_a_model_wrapped_under_a_run_loop_runs_there(
    other_loop: asyncio.AbstractEventLoop,
) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    class Where(Echo):
        async def acomplete(self, request: ModelRequest) -> ModelResponse:
            loops.append(asyncio.get_running_loop())
            return await super().acomplete(request)

    with run_loop(other_loop):
        bridged = as_model(Where())
    unbound = as_model(Where())
    bridged.complete(REQUEST)
    unbound.complete(REQUEST)
    assert [other_loop, runtime_loop()] == loops


def test_a_closed_run_loop_is_a_failed_call_and_leaves_no_coroutine_behind() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    with run_loop(loop):
        bridged = as_model(Echo())
    with pytest.raises(ModelError, match="event loop the run was started from is closed"):
        bridged.complete(REQUEST)
    gc.collect()  # a coroutine never awaited would warn here (warnings are errors)


# --- giving up --------------------------------------------------------------------------


def test_a_call_past_its_timeout_has_its_task_cancelled_on_the_loop() -> None:
    model = Forever()
    bridged = as_model(model)
    with pytest.raises(CallTimedOut):
        call_off_thread(lambda: bridged.complete(REQUEST), name="t", timeout=0.05)
    assert model.cancelled.wait(30)


def test_a_cancelled_call_has_its_task_cancelled_on_the_loop() -> None:
    model = Forever()
    bridged = as_model(model)
    scope = CancelScope()
    threading.Thread(
        target=lambda: model.started.wait(30) and scope.cancel("stop", "handle")
    ).start()
    with pytest.raises(CallCancelled):
        call_off_thread(lambda: bridged.complete(REQUEST), name="t", cancel=scope)
    assert model.cancelled.wait(30)


def test_a_stream_closed_early_has_its_task_cancelled() -> None:
    model = Forever()
    bridged = as_model(model)
    assert isinstance(bridged, StreamingModel)
    stream = bridged.stream(REQUEST)
    assert "first " == next(stream)
    assert model.started.wait(30)
    stream.close()  # type: ignore[attr-defined]  # a generator
    assert model.cancelled.wait(30)


def test_giving_up_is_heard_only_on_a_helper_thread() -> None:
    outside = threading.Event()
    on_give_up(outside.set)()  # not on a helper thread: registers nothing
    heard, release = threading.Event(), threading.Event()

    def call() -> str:
        on_give_up(heard.set)  # at once if the caller gave up already
        release.wait(30)
        return "late"

    with pytest.raises(CallTimedOut):
        call_off_thread(call, name="t", timeout=0.01)
    release.set()
    assert heard.wait(30)
    assert not outside.is_set()
    assert "done" == call_off_thread(lambda: "done", name="t", timeout=30)
