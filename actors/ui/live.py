"""Live updates over Server-Sent Events: the sessions list and a session's new events.

Each stream polls the store (one indexed range read per tick, on a worker thread), so it
sees what any process commits — a run in this process, ``clew run`` in another — and
ends when the browser leaves or the server stops. Nothing is kept per stream but the
last seq (a session) or the last fingerprint (the list).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import StreamingResponse

from actors.documents.timeline import event_line
from actors.runtime.runtime import Runtime

#: Seconds between two polls of a session's events.
SESSION_POLL_S: Final = 0.25
#: Seconds between two looks at the sessions list.
LIST_POLL_S: Final = 1.0
#: Seconds of silence after which a comment keeps proxies from closing the stream.
KEEPALIVE_S: Final = 15.0
#: Most events one message carries.
BATCH: Final = 500


def _message(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


class Live:
    """The SSE streams of one server; :meth:`close` ends every one of them."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._closed = threading.Event()

    def close(self) -> None:
        """End every stream (at their next tick)."""
        self._closed.set()

    def _response(self, body: AsyncIterator[str]) -> StreamingResponse:
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)

    async def _ticks(self, request: Request, every: float) -> AsyncIterator[int]:
        """Yield a tick every ``every`` s until the client leaves or the server closes."""
        n = 0
        while not self._closed.is_set():
            if await request.is_disconnected():
                return
            yield n
            n += 1
            await asyncio.sleep(every)

    def session_stream(self, request: Request, sid: str, after: int) -> StreamingResponse:
        """``events``: the rows of the events committed after ``after``, as they land."""

        def read(since: int) -> list[dict[str, Any]]:
            return [event_line(sid, e) for e in self.rt.store.read_events(sid, since, BATCH)]

        async def body() -> AsyncIterator[str]:
            since, quiet = after, 0.0
            yield _message("hello", {"session_id": sid, "after": since})
            async for _ in self._ticks(request, SESSION_POLL_S):
                rows = await run_in_threadpool(read, since)
                if rows:
                    since, quiet = rows[-1]["seq"], 0.0
                    yield _message("events", rows)
                    continue
                quiet += SESSION_POLL_S
                if quiet >= KEEPALIVE_S:
                    quiet = 0.0
                    yield ": keepalive\n\n"

        return self._response(body())

    def _fingerprint(self) -> list[list[Any]]:
        return [
            [row.session_id, row.updated_at, self.rt.is_owned(row.session_id)]
            for row in self.rt.store.list_sessions()
        ]

    def sessions_stream(self, request: Request) -> StreamingResponse:
        """``sessions``: sent whenever a session is added, changes, or its owner goes."""

        async def body() -> AsyncIterator[str]:
            last: list[list[Any]] | None = None
            quiet = 0.0
            async for _ in self._ticks(request, LIST_POLL_S):
                now = await run_in_threadpool(self._fingerprint)
                if now != last:
                    last, quiet = now, 0.0
                    yield _message("sessions", {"count": len(now)})
                    continue
                quiet += LIST_POLL_S
                if quiet >= KEEPALIVE_S:
                    quiet = 0.0
                    yield ": keepalive\n\n"

        return self._response(body())
