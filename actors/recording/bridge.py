"""The bridge between a framework's event loop and clew's run recorder.

A framework integration (``actors.pydantic_ai``, ``actors.openai_agents``) runs the
framework's own ``async`` agent loop; the recorder is synchronous (it commits, and may wait for a
live model call or tool). Every recorded step therefore runs on a worker thread
(:meth:`Bridge.recorded`), one at a time, and whatever it must ask live (the model, the
tool) is scheduled back on the run's loop (:meth:`Bridge.on_loop`) and awaited there. The
run's tool calls run one after another (each integration serialises them), so the
recorded order is the order the framework asked in.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from actors.recording.recorder import RunRecorder

T = TypeVar("T")


class Bridge:
    """One run's recorder, reached from its event loop."""

    def __init__(self, rec: RunRecorder, loop: asyncio.AbstractEventLoop, role: str) -> None:
        self.rec = rec
        self.loop = loop
        #: The agent's name: the role its calls are recorded under.
        self.role = role
        self._lock = threading.Lock()

    async def recorded(self, step: Callable[[RunRecorder], T]) -> T:
        """Run ``step(recorder)`` on a worker thread; return its result."""

        def locked() -> T:
            with self._lock:
                return step(self.rec)

        return await asyncio.to_thread(locked)

    def on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """From a recorded step: run ``coro`` on the run's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()
