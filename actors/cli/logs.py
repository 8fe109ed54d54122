"""Logging of the ``clew`` CLI: the one place in clew that configures structlog.

The library only binds and emits; here every record at ``$CLEW_LOG_LEVEL`` (default:
warning) and above is rendered as one line on **stderr**, so stdout carries only the
command's output and ``--json`` stays exactly one document.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

import structlog
from structlog.typing import EventDict, WrappedLogger

#: Library events whose content every command prints itself (the run outcome's error; an
#: unavailable Task WAL, which ``tasks``/``verify`` show, ``resume`` refuses naming and a
#: run fails naming): rendering them too would put a second line on stderr next to the
#: command's own ``error: …`` line, and exit 2 promises exactly one.
REPORTED_BY_THE_CLI = frozenset(
    {"brain_run_failed", "brain_run_interrupted", "worker_interrupted", "task_wal_unavailable"}
)


class _StderrLogger:
    """A structlog logger writing to whatever ``sys.stderr`` is *now* (tests swap it)."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


def _drop_reported(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    if event_dict.get("event") in REPORTED_BY_THE_CLI:
        raise structlog.DropEvent
    return event_dict


def configure_logging(env: Mapping[str, str] | None = None) -> None:
    """Render structlog to stderr at ``$CLEW_LOG_LEVEL`` (default: warning and above)."""
    env = os.environ if env is None else env
    name = env.get("CLEW_LOG_LEVEL", "warning").upper()
    level = logging.getLevelNamesMapping().get(name, logging.WARNING)
    structlog.configure(
        processors=[
            _drop_reported,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *_args: _StderrLogger(),
        cache_logger_on_first_use=False,
    )
