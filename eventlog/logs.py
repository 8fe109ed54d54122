"""clew's loggers: where a record of the library goes, decided when it is logged.

clew never configures logging, and nothing happens at import. Every module logs through
:func:`get_logger` (``clew.writer``, ``clew.tasks``, ``clew.run`` …); each record goes,
in this order, to:

1. **structlog as the application configured it** (``structlog.is_configured()``): its
   processors, renderer, level filter and logger factory, untouched — clew's records are
   structlog calls like the app's own, with ``session_id``/``run_id``/``agent_id`` bound.
2. **clew's own stderr output**, when a program asked for it with :func:`set_output`
   (the ``clew`` CLI does: ``--log-level``, ``--log-format``, ``$CLEW_LOG_*``): one line
   per record on stderr, console or JSON, at the level it names. Never on stdout.
3. otherwise **the stdlib logger of the same name**, as any library: the application's
   ``logging`` handlers and levels apply; with none configured, Python's last-resort
   handler prints warnings and errors to stderr, and info and debug go nowhere.

The choice is made at each call, so configuring after importing clew, or after opening a
``Runtime``, takes effect. :func:`is_enabled` answers the same question for a level
without logging, so a producer of many lines (the run digest) costs nothing when off.

structlog is imported at the first record, not with this module: importing it (with the
rich and attrs its dev renderer loads) was about half of ``clew sessions``' start (issue
34), and a command that logs nothing never needs it. An application that configured
structlog has imported it, so "not imported" answers "not configured".
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import msgspec

if TYPE_CHECKING:
    from structlog.typing import EventDict, Processor, WrappedLogger

LogFormat = Literal["console", "json"]
#: The level names clew accepts (``--log-level``, ``$CLEW_LOG_LEVEL``).
LEVELS: Mapping[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
FORMATS: tuple[LogFormat, ...] = ("console", "json")


class LogOutput(msgspec.Struct, frozen=True, kw_only=True):
    """clew's own log output: one line per record on stderr (see :func:`set_output`)."""

    #: The lowest level written (``logging.INFO`` …).
    level: int = logging.WARNING
    #: ``console``: ``time [level] event key=value …``; ``json``: one JSON object a line.
    format: LogFormat = "console"
    #: Record names never written (the CLI prints these errors itself, once).
    drop: frozenset[str] = frozenset()


class _Stderr:
    """A structlog logger writing to whatever ``sys.stderr`` is *now* (tests swap it)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


def _add_logger_name(logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    event_dict.setdefault("logger", getattr(logger, "name", None))
    return event_dict


def _message(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> str:
    """Render ``event key=value …`` as the message of a stdlib record."""
    event = event_dict.pop("event", "")
    pairs = " ".join(f"{k}={_value(v)}" for k, v in sorted(event_dict.items()))
    return f"{event} {pairs}" if pairs else str(event)


def _value(v: object) -> str:
    text = str(v)
    return repr(v) if isinstance(v, str) and (not text or any(c.isspace() for c in text)) else text


class _Route:
    """The processors and wrapper class of clew's stderr output, built once per output, at
    its first record."""

    def __init__(self, output: LogOutput) -> None:
        self.output = output
        self._built: tuple[list[Processor], Callable[..., Any]] | None = None

    def bound(self, name: str, context: dict[str, Any]) -> Any:
        """Return the structlog logger writing the records of ``name`` to stderr."""
        if self._built is None:  # two threads may both build it: the same, harmlessly
            self._built = self._build()
        processors, wrapper = self._built
        return wrapper(_Stderr(name), processors, context)

    def _build(self) -> tuple[list[Processor], Callable[..., Any]]:
        import structlog  # noqa: PLC0415 - at the first record (the module docstring)

        output = self.output
        drop = output.drop

        def drop_named(_logger: WrappedLogger, _m: str, event_dict: EventDict) -> EventDict:
            if event_dict.get("event") in drop:
                raise structlog.DropEvent
            return event_dict

        tail: list[Processor] = (
            [_add_logger_name, structlog.processors.JSONRenderer()]
            if output.format == "json"
            else [structlog.dev.ConsoleRenderer(colors=False)]
        )
        processors: list[Processor] = [
            drop_named,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            *tail,
        ]
        # A class built once per level by structlog; called as (logger, processors, context).
        return processors, structlog.make_filtering_bound_logger(output.level)


def _app_configured() -> bool:
    """True when the application configured structlog (it has imported it, then)."""
    structlog = sys.modules.get("structlog")
    return structlog is not None and bool(structlog.is_configured())


_route: _Route | None = None


def set_output(output: LogOutput | None) -> LogOutput | None:
    """Write clew's records to stderr as ``output`` says (None: back to the stdlib
    loggers); return the previous setting. No effect while structlog is configured."""
    global _route  # noqa: PLW0603 - logging is process-wide, as structlog's own config is
    previous = None if _route is None else _route.output
    _route = None if output is None else _Route(output)
    return previous


def get_output() -> LogOutput | None:
    """Return clew's own stderr output, or None when records go to the stdlib loggers."""
    return None if _route is None else _route.output


def is_enabled(name: str, level: int) -> bool:
    """Return whether a record of ``level`` on the logger ``name`` would be written now."""
    if _app_configured():
        import structlog  # noqa: PLC0415 - imported already (_app_configured)

        check = getattr(structlog.get_logger(name).bind(), "is_enabled_for", None)
        return True if check is None else bool(check(level))
    route = _route
    if route is not None:
        return level >= route.output.level
    return logging.getLogger(name).isEnabledFor(level)


class ClewLogger:
    """A logger of clew: binds context now, decides where its records go at each call."""

    __slots__ = ("_context", "_name")

    def __init__(self, name: str, context: Mapping[str, Any] | None = None) -> None:
        self._name = name
        self._context: dict[str, Any] = dict(context or {})

    @property
    def name(self) -> str:
        return self._name

    def bind(self, **values: Any) -> ClewLogger:
        """Return a logger with ``values`` added to every record."""
        return ClewLogger(self._name, {**self._context, **values})

    def _target(self) -> Any:
        context = dict(self._context)
        route = _route
        if route is not None and not _app_configured():
            return route.bound(self._name, context)
        import structlog  # noqa: PLC0415 - at the first record (the module docstring)

        if structlog.is_configured():
            return structlog.get_logger(self._name).bind(**context)
        processors: list[Processor] = [structlog.stdlib.filter_by_level, _message]
        return structlog.stdlib.BoundLogger(logging.getLogger(self._name), processors, context)

    def debug(self, event: str, **kw: Any) -> None:
        self._target().debug(event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        self._target().info(event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._target().warning(event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        self._target().error(event, **kw)


def get_logger(name: str) -> ClewLogger:
    """Return the clew logger ``name`` (by convention ``clew.<part>``)."""
    return ClewLogger(name)
