"""Operators' metrics: counters, gauges and histograms in the Prometheus text format, and
the HTTP endpoint a supervisor scrapes (``clew serve --metrics-port``).

No client library: a :class:`Metrics` registry holds a few named instruments and renders
them as text format 0.0.4 (``# HELP``/``# TYPE`` lines, one sample a line, histograms
as cumulative ``_bucket{le=…}`` lines with ``_sum`` and ``_count``). A gauge may be a
function read at scrape time (the queue depth: a query of the coordinator).

:class:`MetricsServer` serves ``/metrics`` and ``/healthz`` (200 and a JSON status while
the health function says alive, else 503) from a ``ThreadingHTTPServer`` on a daemon
thread, bound to loopback unless told otherwise.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

#: The text format's content type.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Model-call latency buckets (seconds): from a cached reply to a slow reasoning model.
LATENCY_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)

Labels = tuple[tuple[str, str], ...]


def _labels(labels: Labels, extra: Labels = ()) -> str:
    pairs = (*labels, *extra)
    if not pairs:
        return ""
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + body + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


class Counter:
    """A monotonically increasing count, per label set."""

    kind = "counter"

    def __init__(self, name: str, help_text: str) -> None:
        self.name, self.help = name, help_text
        self._values: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        with self._lock:
            return self._values.get(tuple(sorted(labels.items())), 0.0)

    def samples(self) -> Iterable[str]:
        with self._lock:
            values = dict(self._values) or {(): 0.0}
        for labels, v in sorted(values.items()):
            yield f"{self.name}{_labels(labels)} {_number(v)}"


class Gauge:
    """A value that goes up and down: set, or read from ``read`` at scrape time (a
    mapping of label sets to values, or one number)."""

    kind = "gauge"

    def __init__(
        self,
        name: str,
        help_text: str,
        read: Callable[[], float | Mapping[Labels, float]] | None = None,
    ) -> None:
        self.name, self.help = name, help_text
        self._read = read
        self._value = 0.0

    def set(self, value: float) -> None:
        self._value = value

    def samples(self) -> Iterable[str]:
        got = self._read() if self._read is not None else self._value
        values = got if isinstance(got, Mapping) else {(): got}
        for labels, v in sorted(values.items()):
            yield f"{self.name}{_labels(labels)} {_number(v)}"


class Histogram:
    """Observations counted into cumulative buckets, with their sum and count."""

    kind = "histogram"

    def __init__(self, name: str, help_text: str, buckets: Sequence[float]) -> None:
        self.name, self.help = name, help_text
        self.buckets = tuple(sorted(buckets))
        self._counts = [0] * (len(self.buckets) + 1)  # the last: above every bound
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        i = next((i for i, b in enumerate(self.buckets) if value <= b), len(self.buckets))
        with self._lock:
            self._counts[i] += 1
            self._sum += value

    def samples(self) -> Iterable[str]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        running = 0
        for bound, n in zip((*self.buckets, math.inf), counts, strict=True):
            running += n
            yield f"{self.name}_bucket{_labels((), (('le', _number(bound)),))} {running}"
        yield f"{self.name}_sum {_number(total)}"
        yield f"{self.name}_count {running}"


Instrument = Counter | Gauge | Histogram
_I = TypeVar("_I", Counter, Gauge, Histogram)


class Metrics:
    """A registry of instruments, rendered in registration order."""

    def __init__(self) -> None:
        self._instruments: list[Instrument] = []

    def add(self, instrument: _I) -> _I:
        """Register ``instrument`` and return it."""
        self._instruments.append(instrument)
        return instrument

    def counter(self, name: str, help_text: str) -> Counter:
        return self.add(Counter(name, help_text))

    def gauge(
        self,
        name: str,
        help_text: str,
        read: Callable[[], float | Mapping[Labels, float]] | None = None,
    ) -> Gauge:
        return self.add(Gauge(name, help_text, read))

    def histogram(
        self, name: str, help_text: str, buckets: Sequence[float] = LATENCY_BUCKETS
    ) -> Histogram:
        return self.add(Histogram(name, help_text, buckets))

    def render(self) -> str:
        """Return every instrument in the text format (a gauge that fails to read is left
        out, with a comment saying so)."""
        lines: list[str] = []
        for m in self._instruments:
            try:
                samples = list(m.samples())
            except Exception as e:  # a gauge's read (a database query) may fail: scrape on
                lines.append(f"# {m.name} unavailable: {_escape(str(e))[:200]}")
                continue
            lines += [f"# HELP {m.name} {_escape(m.help)}", f"# TYPE {m.name} {m.kind}", *samples]
        return "\n".join(lines) + "\n"


class MetricsServer:
    """``/metrics`` and ``/healthz`` over HTTP on a daemon thread until :meth:`close`.

    ``health()`` returns ``(alive, status)``: 200 and ``status`` as JSON when alive,
    else 503 and the same JSON.

    Raises:
        OSError: the address cannot be bound (the port is taken).
    """

    def __init__(
        self,
        metrics: Metrics,
        health: Callable[[], tuple[bool, dict[str, Any]]],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return  # a scrape every few seconds is not worth a log line

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, CONTENT_TYPE, metrics.render().encode())
                elif path == "/healthz":
                    alive, status = health()
                    body = json.dumps(status, sort_keys=True).encode()
                    self._send(200 if alive else 503, "application/json", body)
                else:
                    self._send(404, "text/plain; charset=utf-8", b"not found: /metrics, /healthz\n")

            def _send(self, code: int, content_type: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="clew-metrics", daemon=True
        )
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        """The bound host and port (the port the OS chose, given 0)."""
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        """Stop serving."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
