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

# The command modules register their commands on the app when imported.
from actors.cli import (
    calls_command,
    check_commands,
    copy_command,
    delete_command,
    history_commands,
    hitl_commands,
    live_commands,
    read_commands,
    run_commands,
    serve_commands,
    session_commands,
    tail,
    ui_command,
    usage_command,
)
from actors.cli.app import app
from actors.cli.logs import configure_logging
from actors.cli.options import BEFORE_COMMAND
from actors.cli.output import RUN_INTERRUPTED, error_line, on_interrupt, usage_error
from actors.cli.store_option import lift_store_option
from eventlog.errors import ClewError, Refused
from eventlog.logs import get_output, set_output

COMMAND_MODULES = (
    run_commands,
    copy_command,
    read_commands,
    check_commands,
    live_commands,
    hitl_commands,
    serve_commands,
    tail,
    ui_command,
    usage_command,
    history_commands,
    session_commands,
    delete_command,
    calls_command,
)


def main(argv: list[str] | None = None) -> int:
    """Run the clew CLI with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    logs_before = get_output()
    BEFORE_COMMAND.clear()
    # Only the process's own entry point exits on Ctrl-C; a caller of main() (tests, an
    # embedding program) keeps its handler.
    # A process started with Ctrl-C ignored (nohup, a background job) keeps ignoring it.
    own = argv is None and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    previous = signal.signal(signal.SIGINT, on_interrupt) if own else None
    try:
        configure_logging()
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
        set_output(logs_before)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return _exit_code(result)


def _exit_code(result: object) -> int:
    """Return the exit code of a command that returned ``result``."""
    if RUN_INTERRUPTED.is_set():
        RUN_INTERRUPTED.clear()
        # The run in progress recorded its cancellation before this got here.
        print(error_line("interrupted; the run was recorded as cancelled"), file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0
