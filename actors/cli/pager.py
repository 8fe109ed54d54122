"""Long output through a pager on a terminal, as ``git log`` does.

The pager is ``$CLEW_PAGER``, else ``$PAGER``, else ``less``; an empty value or ``cat``
turns paging off, and so does ``--no-pager``. ``less`` gets ``LESS=FRX`` unless ``LESS`` is
set: it quits at once when the output fits one screen (``-F``), shows colours (``-R``)
and leaves the text on the screen when it quits (``-X``). Piped or redirected output is
never paged. Quitting the pager early stops the command quietly (exit 0).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import IO, Final

DEFAULT_PAGER: Final = "less"


def pager_command(env: Mapping[str, str]) -> str | None:
    """Return the pager command line, or None when paging is turned off."""
    command = env.get("CLEW_PAGER", env.get("PAGER", DEFAULT_PAGER)).strip()
    return None if command in ("", "cat") else command


@contextmanager
def paged(enabled: bool = True) -> Iterator[IO[str]]:
    """Yield the stream to write the output to: the pager's input on a terminal, else stdout.

    Ctrl-C is left to the pager while it runs (``less`` uses it to stop a search), as git
    does; the command stops when the pager quits.
    """
    command = pager_command(os.environ) if enabled and sys.stdout.isatty() else None
    if command is None:
        yield sys.stdout
        return
    env = {**os.environ}
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    try:
        proc = subprocess.Popen(
            command, shell=True, stdin=subprocess.PIPE, env=env, text=True, encoding="utf-8"
        )
    except OSError:
        yield sys.stdout
        return
    own = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if own else None
    assert proc.stdin is not None
    try:
        yield proc.stdin
    except BrokenPipeError:
        pass  # the reader quit the pager: nothing more to show
    finally:
        with suppress(BrokenPipeError, OSError):
            proc.stdin.close()
        proc.wait()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
