"""Whether a runtime emits OpenTelemetry spans: decided once, when it opens.

This module imports no OpenTelemetry, so clew runs without the ``clew[otel]`` extra; the
spans themselves are built in :mod:`actors.observe.otel`. With tracing off nothing is
subscribed to the writer, and a commit costs nothing more.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from actors.errors import UsageError
from eventlog.writer import Writer

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

#: ``Runtime(tracing=…)``: None (the default) traces when the app has set a tracer
#: provider; True always traces, through the global provider; False never does; a
#: ``TracerProvider`` is used as it is, whatever the global one.
Tracing: TypeAlias = "bool | TracerProvider | None"


def tracer_for(tracing: Tracing) -> Tracer | None:
    """Return the tracer a runtime's spans go through, or None when it does not trace.

    Raises:
        UsageError: tracing is asked for (True, a provider) and OpenTelemetry is missing.
    """
    if tracing is False or (tracing is None and not _may_have_a_provider()):
        return None
    try:
        from actors.observe import otel  # noqa: PLC0415 - the optional extra, on demand
    except ImportError:
        if tracing is None:  # no OpenTelemetry: the app cannot have set a provider
            return None
        raise UsageError(
            "tracing needs OpenTelemetry: install clew[otel] (the opentelemetry-api package)"
        ) from None
    return otel.tracer_for(tracing)


def _may_have_a_provider() -> bool:
    """False when the app cannot have set a tracer provider, known without importing
    OpenTelemetry (25–45 ms after clew's own imports, measured on the 2-core VM: on
    every CLI command that opens a home)."""
    # Setting one in code imports opentelemetry.trace; the other way is this variable,
    # which OpenTelemetry itself reads from the process environment.
    return "opentelemetry.trace" in sys.modules or "OTEL_PYTHON_TRACER_PROVIDER" in os.environ


def trace_commits(writer: Writer, tracer: Tracer) -> Callable[[], None]:
    """Emit the spans of every run ``writer`` commits; return the function that stops it
    (call it after the writer's last commit: it ends what is still open as interrupted)."""
    from actors.observe import otel  # noqa: PLC0415 - there is a tracer: it imports

    return otel.trace_commits(writer, tracer)
