"""``clew serve --metrics-port``: a real serving process scraped over HTTP — its
``/metrics`` parsed as the Prometheus text format (every sample under its ``# TYPE``,
histogram buckets cumulative up to ``+Inf`` = ``_count``) and its ``/healthz``; and
``clew queue --json``'s depth by status and oldest waiting run."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _cli_helpers import Where, invoke, spawn

from actors.observe.metrics import CONTENT_TYPE, Metrics

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Samples = dict[str, dict[frozenset[tuple[str, str]], float]]


def parse(text: str) -> tuple[dict[str, str], Samples]:
    """Parse the text format: the ``# TYPE`` of each family, and every sample by labels."""
    types: dict[str, str] = {}
    samples: Samples = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
            continue
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match is not None, f"not a sample line: {line!r}"
        name, labels, value = match.groups()
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
        assert family in types, f"{name} has no # TYPE line before it"
        pairs = frozenset(LABEL.findall(labels or ""))
        samples.setdefault(name, {})[pairs] = float(value)
    return types, samples


def check_histogram(samples: Samples, name: str) -> float:
    """Assert the buckets are cumulative and end at ``+Inf`` = ``_count``; return it."""
    buckets = sorted(
        ((float(dict(k)["le"]), v) for k, v in samples[f"{name}_bucket"].items()),
    )
    counts = [v for _, v in buckets]
    assert counts == sorted(counts)
    assert buckets[-1][0] == float("inf")
    count = samples[f"{name}_count"][frozenset()]
    assert buckets[-1][1] == count
    return count


def test_the_registry_renders_the_text_format() -> None:
    m = Metrics()
    c = m.counter("x_total", 'runs "quoted"\nnewline')
    c.inc(outcome="failed")
    c.inc(2, outcome="failed")
    m.gauge("depth", "by status", lambda: {(("status", "queued"),): 3.0})
    h = m.histogram("lat_seconds", "latency", buckets=(0.1, 1.0))
    for v in (0.05, 0.5, 0.5, 7.0):
        h.observe(v)
    m.gauge("broken", "a failing read", lambda: 1 / 0)

    types, samples = parse(m.render())

    assert {"x_total": "counter", "depth": "gauge", "lat_seconds": "histogram"} == types
    assert 3.0 == samples["x_total"][frozenset({("outcome", "failed")})]
    assert 3.0 == samples["depth"][frozenset({("status", "queued")})]
    assert 4.0 == check_histogram(samples, "lat_seconds")
    assert 8.05 == pytest.approx(samples["lat_seconds_sum"][frozenset()])
    assert "# broken unavailable: division by zero" in m.render()


class Lines:
    """A child's stdout and stderr lines, read on threads until :meth:`close`."""

    def __init__(self, child: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.errors: list[str] = []
        assert child.stdout is not None and child.stderr is not None
        self._streams = (child.stdout, child.stderr)
        self._threads = [
            threading.Thread(target=into.extend, args=(stream,), daemon=True)
            for into, stream in zip((self.lines, self.errors), self._streams, strict=True)
        ]
        for t in self._threads:
            t.start()

    def close(self) -> None:
        """After the child ended: the rest of its output read, its pipes closed."""
        for t in self._threads:
            t.join(timeout=30)
        for stream in self._streams:
            stream.close()

    def wait_for(self, prefix: str, within: float = 120.0) -> str:
        end = time.monotonic() + within
        while time.monotonic() < end:
            for line in list(self.lines):
                if line.startswith(prefix):
                    return line.strip()
            time.sleep(0.05)
        raise AssertionError(f"no line {prefix!r} in {self.lines}")


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.headers["content-type"], reply.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["content-type"], e.read().decode()


@pytest.fixture
def where(tmp_path: Path) -> Where:
    project = tmp_path / "project"
    project.mkdir()
    return Where(tmp_path / "home", project)


def test_a_serving_process_exposes_health_and_metrics(where: Where) -> None:
    for prompt in ("One.", "Two."):
        assert 0 == invoke(where, "submit", prompt).code
    child = spawn(where, "serve", "--metrics-port", "0", "--lease-ttl", "1.5")
    lines = Lines(child)
    try:
        base = lines.wait_for("metrics on http://127.0.0.1:").split()[-1].removesuffix("/metrics")
        end = time.monotonic() + 300
        while True:
            status, kind, text = get(f"{base}/metrics")
            assert 200 == status and CONTENT_TYPE == kind
            types, samples = parse(text)
            if samples["clew_serve_runs_completed_total"][frozenset()] == 2:
                break
            assert time.monotonic() < end, text
            time.sleep(0.2)
        time.sleep(1.0)  # one more heartbeat: the worker lease renewed
        types, samples = parse(get(f"{base}/metrics")[2])
        health = get(f"{base}/healthz")
        missing = get(f"{base}/nothing")
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        lines.close()
    assert 0 == child.returncode, lines.errors

    assert "counter" == types["clew_serve_runs_started_total"]
    assert "histogram" == types["clew_model_call_seconds"]
    assert 2 == samples["clew_serve_runs_started_total"][frozenset()]
    assert 0 == samples["clew_serve_runs_failed_total"][frozenset()]
    assert 0 == samples["clew_serve_recoveries_total"][frozenset()]
    assert 0 == samples["clew_serve_runs_in_progress"][frozenset()]
    assert 1 <= samples["clew_serve_leases_held"][frozenset()]  # its worker lease
    depth = samples["clew_queue_depth"]
    assert (0, 0) == (
        depth[frozenset({("status", "queued")})],
        depth[frozenset({("status", "running")})],
    )
    assert 2 * 9 == check_histogram(samples, "clew_model_call_seconds")  # the demo: 9 calls

    code, kind, body = health
    doc: dict[str, Any] = json.loads(body)
    assert (200, "application/json") == (code, kind)
    assert ("ok", 0) == (doc["status"], doc["runs_in_progress"])
    assert doc["owner"].count(":") == 2
    assert 404 == missing[0]


def test_queue_json_shows_the_depth_and_the_oldest_waiting_run(where: Where) -> None:
    empty = invoke(where, "queue", "--json")
    assert 0 == empty.code, empty.err
    assert {"queued": 0, "running": 0, "done": 0} == empty.json()["depth"]
    assert empty.json()["oldest_queued"] is None
    for prompt in ("First.", "Second.", "Third."):
        invoke(where, "submit", prompt)

    doc = invoke(where, "queue", "--json").json()

    assert {"queued": 3, "running": 0, "done": 0} == doc["depth"]
    assert ("First.", 1, "queued") == (
        doc["oldest_queued"]["prompt"],
        doc["oldest_queued"]["id"],
        doc["oldest_queued"]["status"],
    )
    assert 3 == len(doc["runs"])


def test_a_metrics_port_taken_is_one_line_and_exit_2(where: Where) -> None:
    with socket_bound() as port:
        result = invoke(where, "serve", "--metrics-port", str(port))
    assert 2 == result.code
    assert "cannot serve metrics on 127.0.0.1:" in result.err


def socket_bound() -> Any:
    import contextlib  # noqa: PLC0415
    import socket  # noqa: PLC0415

    @contextlib.contextmanager
    def bound() -> Any:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            yield s.getsockname()[1]

    return bound()
