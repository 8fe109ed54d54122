"""Live updates over Server-Sent Events: the sessions list and a session's new events.

Each stream polls the store (one indexed range read per tick, on a worker thread), so it
sees what any process commits — a run in this process, ``clew run`` in another — and
ends when the browser leaves or the server stops. Nothing is kept per stream but the
last seq (a session) or the last look at the shared :class:`ListFeed` (the list).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
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
#: Sessions of the list's first page whose owner the change feed watches.
FIRST_PAGE: Final = 100
#: Seconds between two probes of those owners (a probe per open run: ~5 ms each on
#: PostgreSQL, 0.5 s for a first page of 100 interrupted sessions); an owner that goes
#: away shows as ``interrupted`` within this.
OWNERS_EVERY_S: Final = 5.0
#: Most events one message carries.
BATCH: Final = 500


def _message(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


class Live:
    """The SSE streams of one server; :meth:`close` ends every one of them."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._closed = threading.Event()
        self._feed = ListFeed(rt)

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

    async def _poll(
        self, request: Request, every: float, look: Callable[[], str | None]
    ) -> AsyncIterator[str]:
        """Yield what ``look`` (run on a worker thread every ``every`` s) has to send, and a
        keepalive comment after :data:`KEEPALIVE_S` of silence."""
        quiet = 0.0
        async for _ in self._ticks(request, every):
            message = await run_in_threadpool(look)
            if message is not None:
                quiet = 0.0
                yield message
                continue
            quiet += every
            if quiet >= KEEPALIVE_S:
                quiet = 0.0
                yield ": keepalive\n\n"

    def session_stream(self, request: Request, sid: str, after: int) -> StreamingResponse:
        """``events``: the rows of the events committed after ``after``, as they land."""
        since = after

        def look() -> str | None:
            nonlocal since
            rows = [event_line(sid, e) for e in self.rt.store.read_events(sid, since, BATCH)]
            if not rows:
                return None
            since = rows[-1]["seq"]
            return _message("events", rows)

        async def body() -> AsyncIterator[str]:
            yield _message("hello", {"session_id": sid, "after": after})
            async for message in self._poll(request, SESSION_POLL_S, look):
                yield message

        return self._response(body())

    async def sessions_stream(self, request: Request) -> StreamingResponse:
        """``sessions``: sent whenever a session is added, changes, or its owner goes.

        Every stream reads the one shared :class:`ListFeed`, which looks at the store at
        most once per :data:`LIST_POLL_S` whatever the number of open streams."""
        last: tuple[Any, ...] | None = None

        def look() -> str | None:
            nonlocal last
            now = self._feed.look()
            if now == last:
                return None
            last = now
            return _message("sessions", {"count": now[0]})

        return self._response(self._poll(request, LIST_POLL_S, look))


class ListFeed:
    """The sessions list's change feed, shared by every list stream of a server.

    A look costs two indexed statements however many sessions the home holds — the
    number of sessions and the latest ``updated_at`` (every append moves it), and the
    sessions with a run not ended among the first page's (:data:`FIRST_PAGE`), whose
    owner lock is probed (an owner going away turns a run ``interrupted`` without any
    append; at 10^5 sessions 5% interrupted ones were 4,904 probes a tick, so only the
    page a list shows first is watched, every :data:`OWNERS_EVERY_S`) — never a status
    per session; with 20
    open tabs at 10,000 sessions each stream recomputed every session's status once a
    second and a session's page took 27.5 s to load. A look is reused for
    ``max_age`` seconds, so N streams cost the store one look per tick, not N.
    """

    def __init__(
        self, rt: Runtime, max_age: float = LIST_POLL_S / 2, owners_every: float = OWNERS_EVERY_S
    ) -> None:
        self.rt = rt
        self.max_age = max_age
        self.owners_every = owners_every
        self._lock = threading.Lock()
        self._at = -1.0
        self._owners_at = -1.0
        self._owned: tuple[str, ...] = ()
        self._last: tuple[Any, ...] = ()

    def look(self) -> tuple[Any, ...]:
        """Return ``(sessions, latest updated_at, owned sessions with a run not ended)``."""
        with self._lock:
            now = time.monotonic()
            if self._at < 0 or now - self._at >= self.max_age:
                store = self.rt.store
                count, latest = store.sessions_mark()
                if self._owners_at < 0 or now - self._owners_at >= self.owners_every:
                    open_runs = store.open_run_sessions(newest=FIRST_PAGE)
                    self._owned = tuple(s for s in open_runs if self.rt.is_owned(s))
                    self._owners_at = now
                self._last, self._at = (count, latest, self._owned), now
            return self._last
