"""The ``clew`` CLI's output conventions: one JSON document, one ``error:`` line, exit codes.

Exit codes: 0 success; 1 the work ran and found a problem; 2 bad input or a refused
request (any :class:`~eventlog.errors.Refused`) — one line on stderr, nothing written;
130 interrupted.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import suppress
from types import FrameType
from typing import Any, NoReturn

import typer


def print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def exit_with(code: int) -> None:
    if code:
        raise typer.Exit(code)


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(code)


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def one_line(text: str) -> str:
    return " ".join(str(text).split())


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
    print(f"error: {one_line(format_message()).rstrip('.')}{hint}", file=sys.stderr)
    return code


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    """Stop at once on Ctrl-C: one line on stderr, exit 130.

    A ``KeyboardInterrupt`` does not stop a run: the runtime's actors finish it before the
    main thread can unwind (measured: a Ctrl-C early in ``demo --slow 1000`` returned ~5 s
    later, after the whole run, with no message). Exiting at once is safe by design: every
    committed event is durable, and a session killed mid-run is flagged interrupted and
    finished by ``clew resume`` (the SIGKILL crash tests pin this).
    """
    with suppress(OSError, ValueError):  # a closed or broken stdout must not stop the exit
        sys.stdout.flush()
    os.write(2, b"error: interrupted; a session left mid-run finishes with: clew resume SESSION\n")
    os._exit(130)
