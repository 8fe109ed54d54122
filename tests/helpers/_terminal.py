"""Run a command on a real pseudo-terminal of a given size and collect what it printed."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
from collections.abc import Sequence

#: Seconds without any output after which a child is taken as hung (a guard, not a
#: measurement: a healthy child prints and exits in a few seconds).
QUIET_LIMIT = 120.0


def run_in_pty(
    argv: Sequence[str],
    rows: int,
    columns: int,
    env: dict[str, str],
    *,
    keys: bytes = b"",
) -> tuple[str, int]:
    """Run ``argv`` with stdin, stdout and stderr on a ``rows`` × ``columns`` terminal;
    type ``keys`` into it; return everything it printed and its exit code."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    env.setdefault("TERM", "xterm-256color")
    proc = subprocess.Popen(
        list(argv), stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
    )
    os.close(slave)
    if keys:
        os.write(master, keys)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], QUIET_LIMIT)
            if not ready:
                proc.kill()
                raise AssertionError(f"{argv[:4]} printed nothing for {QUIET_LIMIT} s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(QUIET_LIMIT)
    finally:
        os.close(master)
    return b"".join(chunks).decode("utf-8", "replace"), code
