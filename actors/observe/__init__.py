"""The observe room: what a running clew shows to the outside, fed by the commit listeners.

``logs`` (the run digest: one log line per run, worker, model call and tool call, derived
from committed events) · ``tracing`` (turn OpenTelemetry spans on or off for a runtime;
imports no OpenTelemetry) · ``otel`` (the spans of each run, folded from the committed
events: the ``clew[otel]`` extra) · ``metrics`` (counters, gauges, histograms in the
Prometheus text format and the ``/metrics``, ``/healthz`` endpoint ``clew serve
--metrics-port`` serves).
"""
