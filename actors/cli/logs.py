"""Logging of the ``clew`` CLI: clew's records as lines on **stderr**, never on stdout.

The CLI sets clew's own output (:func:`eventlog.logs.set_output`) from ``--log-level`` /
``--log-format`` (before the command), else ``$CLEW_LOG_LEVEL`` / ``$CLEW_LOG_FORMAT``,
else warnings and above as console lines. It never calls ``structlog.configure``: a
program that configured structlog and calls :func:`actors.cli.main` keeps its
configuration, and ``main`` puts the previous output back when it returns. stdout carries
only the command's output, so ``--json`` stays exactly one document.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import typer

from actors.cli.output import quoted
from actors.errors import UsageError

if TYPE_CHECKING:
    from eventlog.logs import LogFormat, LogOutput

#: Library events whose content every command prints itself (the run outcome's error; an
#: unavailable Task WAL, which ``tasks``/``verify`` show, ``resume`` refuses naming and a
#: run fails naming): rendering them too would put a second line on stderr next to the
#: command's own ``error: …`` line, and exit 2 promises exactly one.
REPORTED_BY_THE_CLI = frozenset(
    {"brain_run_failed", "brain_run_interrupted", "worker_interrupted", "task_wal_unavailable"}
)

LogLevelOption = Annotated[
    str | None,
    typer.Option(
        "--log-level",
        metavar="LEVEL",
        help="log to stderr from LEVEL up: debug, info, warning, error (default: $CLEW_LOG_LEVEL,"
        " else warning)",
        show_default=False,
    ),
]
LogFormatOption = Annotated[
    str | None,
    typer.Option(
        "--log-format",
        metavar="FORMAT",
        help="console or json: one JSON object a line (default: $CLEW_LOG_FORMAT, else console)",
        show_default=False,
    ),
]


# eventlog.logs (and structlog with it) is imported when logging is configured, not with
# the options: ``clew --version`` and ``clew --help`` never configure it.


def _level(value: str, where: str) -> int:
    from eventlog.logs import LEVELS  # noqa: PLC0415 - see above

    level = LEVELS.get(value.strip().lower())
    if level is None:
        raise UsageError(f"{where} must be one of {', '.join(LEVELS)}, not {quoted(value)}")
    return level


def _format(value: str, where: str) -> LogFormat:
    from eventlog.logs import FORMATS  # noqa: PLC0415 - see above

    for fmt in FORMATS:
        if value.strip().lower() == fmt:
            return fmt
    raise UsageError(f"{where} must be one of {', '.join(FORMATS)}, not {quoted(value)}")


def configure_logging(
    env: Mapping[str, str] | None = None, *, level: str | None = None, fmt: str | None = None
) -> LogOutput:
    """Write clew's records to stderr at ``level`` (else ``$CLEW_LOG_LEVEL``, else warning)
    in ``fmt`` (else ``$CLEW_LOG_FORMAT``, else console); return the output set.

    Raises:
        UsageError: a level or format that is not one of the known names.
    """
    from eventlog.logs import LogOutput, set_output  # noqa: PLC0415 - see _level

    env = os.environ if env is None else env
    chosen_level = (
        _level(level, "--log-level")
        if level is not None
        else _level(env.get("CLEW_LOG_LEVEL") or "warning", "$CLEW_LOG_LEVEL")
    )
    chosen_format = (
        _format(fmt, "--log-format")
        if fmt is not None
        else _format(env.get("CLEW_LOG_FORMAT") or "console", "$CLEW_LOG_FORMAT")
    )
    output = LogOutput(level=chosen_level, format=chosen_format, drop=REPORTED_BY_THE_CLI)
    set_output(output)
    return output


def output_now() -> LogOutput | None:
    """Return clew's own log output as set now (see :func:`eventlog.logs.get_output`).

    Read without importing :mod:`eventlog.logs`: until something imports it, no output
    is set, and ``clew --version`` need not load structlog to learn that.
    """
    logs = sys.modules.get("eventlog.logs")
    return None if logs is None else logs.get_output()


def put_back(output: LogOutput | None) -> None:
    """Set clew's own log output back to ``output`` (what :func:`output_now` returned)."""
    logs = sys.modules.get("eventlog.logs")
    if logs is not None:  # never imported: nothing was set since
        logs.set_output(output)
