"""Tracing cost: demo runs with OpenTelemetry spans against the same runs without.

Run: ``PYTHONPATH=. python benchmarks/bench_tracing.py [--workers 24] [--repeats 5]``
(needs the ``test`` extra: opentelemetry-sdk). Prints one table; each ratio is to the
untraced run measured in the same process, so it means something on any machine (never
gate CI on the absolute numbers).

- off: ``Runtime(tracing=False)``: nothing subscribed to the writer (the baseline);
- batch: a ``BatchSpanProcessor`` with an exporter that drops the spans (what an app
  exporting over a network has on the writer's thread: a queue append per span);
- simple: a ``SimpleSpanProcessor`` into an ``InMemorySpanExporter`` (export on the
  writer's thread);
- fold: ``RunSpans.on_commit`` alone over the recorded events of one run (µs per event,
  spans into a ``BatchSpanProcessor`` as above).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from _timing import best_of
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.observe.otel import RunSpans
from actors.runtime.runtime import Runtime
from eventlog.records import StoredEvent


class Dropping(SpanExporter):
    """An exporter that accepts and forgets every span."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def provider(mode: str) -> TracerProvider | None:
    if mode == "off":
        return None
    p = TracerProvider()
    if mode == "batch":
        p.add_span_processor(BatchSpanProcessor(Dropping()))
    else:
        p.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return p


def demo_run(root: Path, mode: str, workers: int) -> list[StoredEvent]:
    """One demo session in a fresh home; return its events."""
    shutil.rmtree(root, ignore_errors=True)
    tracer_provider = provider(mode)
    with Runtime(
        root / "home", root / "project", tracing=tracer_provider or False, durability="normal"
    ) as rt:
        session = rt.new_session()
        session.run(DEMO_PROMPT, model=demo_model(workers), tools=demo_tools(root / "project"))
        events = rt.store.read_events(session.id)
    if tracer_provider is not None:
        tracer_provider.shutdown()
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="clew-bench-tracing-"))
    try:
        times: dict[str, float] = {}
        events: list[StoredEvent] = []
        # Interleaved rounds, so a noisy neighbour slows every mode alike.
        for _ in range(args.repeats):
            for mode in ("off", "batch", "simple"):
                t, events = best_of(1, lambda m=mode: demo_run(base / m, m, args.workers))
                times[mode] = min(times.get(mode, t), t)
        fold_provider = provider("batch")
        assert fold_provider is not None

        def fold() -> None:
            spans = RunSpans(fold_provider.get_tracer("bench"))
            spans.on_commit(events)
            spans.close()

        fold_s, _ = best_of(args.repeats * 4, fold)
        fold_provider.shutdown()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"demo run, {args.workers} workers, {len(events)} events, best of {args.repeats}")
    print(f"{'mode':<8}{'seconds':>10}{'ratio to off':>15}")
    for mode, t in times.items():
        print(f"{mode:<8}{t:>10.3f}{t / times['off']:>15.2f}x")
    per_event_us = fold_s / len(events) * 1e6
    print(f"fold alone: {per_event_us:.1f} µs per event ({fold_s * 1e3:.1f} ms for the run)")


if __name__ == "__main__":
    main()
