"""A wall-clock deadline over a whole HTTP attempt: connect, headers and body together.

httpx's timeouts bound each socket operation, not the call: a server that sends one byte
every 5 s never trips a 60 s read timeout, and ``clew run`` waited past 300 s although
the deadline is 180 s. The network backend here cuts every connect, TLS handshake, read
and write to what is left of the current attempt's deadline, so an attempt ends when its
time is up however slowly the bytes come — headers included.

The deadline is per thread: sync httpx does its I/O in the calling thread, and one
adapter may serve several worker threads at once. Outside an attempt (no deadline set)
the backend is plain httpcore.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

Clock = Callable[[], float]

# A write is cut into pieces so each gets what is left of the deadline (httpcore would
# give every send() of one write the same timeout).
_WRITE_PIECE = 64 * 1024


class AttemptDeadline:
    """When the current thread's attempt must end, in the seconds of ``clock``."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._local = threading.local()

    @contextmanager
    def until(self, at: float) -> Iterator[None]:
        """Bound every socket operation of this thread by ``at`` for the ``with`` block."""
        self._local.at = at
        try:
            yield
        finally:
            self._local.at = None

    def cut(self, timeout: float | None, expired: type[Exception]) -> float | None:
        """Return ``timeout`` cut to what is left of the deadline.

        Raises:
            expired: (an httpcore timeout) the deadline has passed.
        """
        at: float | None = getattr(self._local, "at", None)
        if at is None:
            return timeout
        left = at - self._clock()
        if left <= 0:
            raise expired("the attempt's deadline passed")
        return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: AttemptDeadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.cut(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        while view:
            piece, view = view[:_WRITE_PIECE], view[_WRITE_PIECE:]
            self._inner.write(bytes(piece), self._deadline.cut(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        cut = self._deadline.cut(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, cut), self._deadline
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, deadline: AttemptDeadline) -> None:
        self._inner = httpcore.SyncBackend()
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        cut = self._deadline.cut(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, cut, local_address, socket_options)
        return _DeadlineStream(stream, self._deadline)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        cut = self._deadline.cut(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_unix_socket(path, cut, socket_options)
        return _DeadlineStream(stream, self._deadline)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport, whose connection pool uses the deadline backend."""

    def __init__(self, deadline: AttemptDeadline) -> None:
        ssl_context = httpx.create_ssl_context(trust_env=False)
        super().__init__(verify=ssl_context, trust_env=False)
        limits = httpx.Limits()  # httpx's defaults, as the pool it built has them
        # httpx (0.28) takes no network backend; the pool it built is replaced by the
        # same pool with ours. tests/…/test_http_limits.py fails if this stops working.
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineBackend(deadline),
        )


def deadline_client(deadline: AttemptDeadline) -> httpx.Client:
    """Return an ``httpx.Client`` whose socket operations all honour ``deadline``.

    ``trust_env=False``: the library reads no environment (proxy variables included).
    """
    return httpx.Client(transport=_DeadlineTransport(deadline), trust_env=False)
