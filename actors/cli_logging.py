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


class _StderrLogger:
    """A structlog logger writing to whatever ``sys.stderr`` is *now* (tests swap it)."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


def configure_logging(env: Mapping[str, str] | None = None) -> None:
    """Render structlog to stderr at ``$CLEW_LOG_LEVEL`` (default: warning and above)."""
    env = os.environ if env is None else env
    name = env.get("CLEW_LOG_LEVEL", "warning").upper()
    level = logging.getLevelNamesMapping().get(name, logging.WARNING)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *_args: _StderrLogger(),
        cache_logger_on_first_use=False,
    )
