"""The ``clew`` entry point: configure logging, run the typer app, map errors to exit codes.

The CLI writes clew's log records to stderr (warnings and above unless told otherwise;
see ``actors/cli/logs.py``), so ``--json`` output on stdout is never polluted.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import typer

from actors.cli.app import app
from actors.cli.logs import output_now, put_back
from actors.cli.options import BEFORE_COMMAND
from actors.cli.output import RUN_INTERRUPTED, error_line, on_interrupt, usage_error
from actors.cli.store_option import lift_store_option
from eventlog.errors import ClewError, Refused


def main(argv: list[str] | None = None) -> int:
    """Run the clew CLI with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    logs_before = output_now()
    BEFORE_COMMAND.clear()
    # Only the process's own entry point exits on Ctrl-C; a caller of main() (tests, an
    # embedding program) keeps its handler.
    # A process started with Ctrl-C ignored (nohup, a background job) keeps ignoring it.
    own = argv is None and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    previous = signal.signal(signal.SIGINT, on_interrupt) if own else None
    named = _completion_shell_named(args)
    try:
        args, BEFORE_COMMAND["store"] = lift_store_option(args)
        result = app(args=args, prog_name="clew", standalone_mode=False)
    except typer.Abort:
        print("interrupted", file=sys.stderr)
        return 130
    except Refused as e:
        print(error_line(str(e)), file=sys.stderr)
        return 2
    except ClewError as e:
        print(error_line(str(e)), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # `clew export … | head`: the reader left; stop quietly.
        sys.stdout = Path(os.devnull).open("w")  # noqa: SIM115 - lives until the process exits
        return 0
    except Exception as e:
        code = usage_error(e)
        if code is None:
            raise
        return code
    finally:
        if named:
            os.environ.pop(NAMED_SHELL, None)
        put_back(logs_before)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return _exit_code(result)


#: typer's switch from detecting the shell (the parent process) to taking it as a value.
NAMED_SHELL = "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"
COMPLETION_OPTIONS = ("--show-completion", "--install-completion")


def _completion_shell_named(args: list[str]) -> bool:
    """``clew --show-completion bash`` (docs/cli.md: ``[SHELL]``): with a shell named,
    typer must take it rather than detect the parent process's shell (which it would do,
    ignoring the name, and fail under a parent that is no shell). Return True when it was
    switched for this call (:func:`main` switches it back)."""
    if len(args) < 2 or args[0] not in COMPLETION_OPTIONS or args[1].startswith("-"):
        return False
    if NAMED_SHELL in os.environ:
        return False
    os.environ[NAMED_SHELL] = "1"
    return True


def _exit_code(result: object) -> int:
    """Return the exit code of a command that returned ``result``."""
    if RUN_INTERRUPTED.is_set():
        RUN_INTERRUPTED.clear()
        # The run in progress recorded its cancellation before this got here.
        print(error_line("interrupted; the run was recorded as cancelled"), file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0
