"""The ``clew`` CLI's output conventions: one JSON document, one ``error:`` line, exit codes.

Exit codes: 0 success; 1 the work ran and found a problem; 2 bad input or a refused
request (any :class:`~eventlog.errors.Refused`) — one line on stderr, nothing written;
130 interrupted.

An error line echoes at most :data:`~eventlog.errors.ECHO_LIMIT` characters of any value
the user typed: messages quote arguments through :func:`quoted` / :func:`clipped`, and
:func:`error_line` clips any longer word that still gets through (a path in a library
error, an option value in a click message).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable
from contextlib import suppress
from types import FrameType
from typing import Any, NoReturn

import typer

from actors.errors import UsageError
from eventlog.errors import ECHO_LIMIT, clipped, quoted

__all__ = [
    "clipped",
    "error_line",
    "exit_with",
    "fail",
    "on_interrupt",
    "one_line",
    "print_json",
    "print_json_stream",
    "print_result",
    "quoted",
    "stderr_is_tty",
    "usage_error",
    "utf8_text",
]


def print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def print_result(doc: Any, text: str, *, as_json: bool) -> None:
    """Print a command's result: ``doc`` as JSON with ``--json``, else the line ``text``."""
    if as_json:
        print_json(doc)
    else:
        print(text)


def print_json_stream(head: dict[str, Any], key: str, items: Iterable[Any]) -> None:
    """Print ``{**head, key: [items…]}`` as :func:`print_json` would, one item at a time.

    The bytes are the same as ``print_json``'s; the list is never built, so a 100k-event
    document streams in constant memory.
    """
    opening = json.dumps({**head, key: []}, ensure_ascii=False, default=str)
    write = sys.stdout.write
    write(opening[:-2])  # everything up to the list's "[", then the items, then "]}"
    for i, item in enumerate(items):
        write((", " if i else "") + json.dumps(item, ensure_ascii=False, default=str))
    write(opening[-2:] + "\n")
    sys.stdout.flush()


def exit_with(code: int) -> None:
    if code:
        raise typer.Exit(code)


def fail(message: str, code: int = 1) -> NoReturn:
    print(error_line(message), file=sys.stderr)
    raise typer.Exit(code)


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def error_line(message: str) -> str:
    """Return ``error: MESSAGE`` on one line, every word cut to the echo limit.

    The last guard for messages clew does not word itself (click's, a library error naming
    a path): a word longer than the limit can only be something the user supplied.
    """
    # The margin lets a value already cut by quoted()/clipped() (its quotes and "…") through.
    margin = ECHO_LIMIT + 3
    words = one_line(message).split(" ")
    for i, word in enumerate(words):
        if len(word) > margin:
            body = word.rstrip(";,.:")
            words[i] = f"{clipped(body)}{word[len(body) :]}"
    return "error: " + " ".join(words)


def utf8_text(what: str, value: str) -> str:
    """Return ``value`` if it is valid Unicode text (what a session can record).

    Arguments arrive with undecodable bytes smuggled in as lone surrogates
    (``surrogateescape``: ``$'hi \\xff'`` is ``'hi \\udcff'``); no event can hold them.

    Raises:
        UsageError: naming the argument and the first bad byte.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        bad = value[e.start]
        byte = f"byte {ord(bad) - 0xDC00:#04x}" if 0xDC80 <= ord(bad) <= 0xDCFF else repr(bad)
        raise UsageError(f"{what} is not valid UTF-8 text ({byte} at character {e.start})") from e
    return value


def usage_error(e: Exception) -> int | None:
    """Report a typer/click usage error (bad flag, missing argument) in one line.

    Duck-typed: typer vendors its own copy of click, so the classes depend on the version.
    """
    format_message = getattr(e, "format_message", None)
    code = getattr(e, "exit_code", None)
    if not callable(format_message) or not isinstance(code, int):
        return None
    ctx = getattr(e, "ctx", None)
    if type(e).__name__ == "NoArgsIsHelpError":
        return 2  # typer has already printed the help
    hint = f"; see {ctx.command_path} --help" if ctx is not None and code == 2 else ""
    print(error_line(f"{format_message().strip().rstrip('.')}{hint}"), file=sys.stderr)
    return code


#: Set when Ctrl-C cancelled a run in progress (typer turns the ``KeyboardInterrupt``
#: into exit code 130 silently; ``main`` says what happened).
RUN_INTERRUPTED = threading.Event()


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C: cancel the run in progress durably, else stop at once (exit 130).

    With a run in progress the main thread is waiting on its handle: the
    ``KeyboardInterrupt`` raised here makes the handle cancel the run, wait (≤ 10 s; a
    second Ctrl-C stops waiting) for ``run_ended(cancelled)`` to be recorded, and
    unwind to ``main``, which exits 130. Otherwise exiting at once is safe by design:
    every committed event is durable, and a session killed mid-step is flagged
    interrupted and finished by ``clew resume`` (the SIGKILL crash tests pin this).
    """
    # Read from sys.modules, not imported: a process that never loaded the engine runs
    # nothing, and a signal handler should not import (the main thread may be importing).
    engine = sys.modules.get("actors.runtime.engine")
    if engine is not None and engine.runs_in_progress():
        RUN_INTERRUPTED.set()
        raise KeyboardInterrupt
    with suppress(OSError, ValueError):  # a closed or broken stdout must not stop the exit
        sys.stdout.flush()
    os.write(2, b"error: interrupted; a session left mid-run finishes with: clew resume SESSION\n")
    os._exit(130)
