"""Session ownership: an ``flock`` on ``<home>/locks/<session_id>.lock``.

Why a lock file and not an owner id + heartbeat: the kernel drops an ``flock``
the instant its process dies (``kill -9``, OOM, power loss included), so
"interrupted" needs no clock, no timeout and no guess about a slow process. A
run the store says is ``running`` while nobody holds the lock is interrupted.

The ``locks/`` directory is created 0700 and a lock file 0600, whatever the umask.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class SessionLock:
    """An exclusive, non-blocking, process-lifetime lock on one session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; return False if another open file description holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        """Drop the lock (the file stays; it is reused)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def held_elsewhere(self) -> bool:
        """True when some live process holds the lock (probe: try it and let go).

        The probe opens the file read-only and writes nothing.
        """
        if self._fd is not None:
            return False
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops the probe's lock, if it got one
        return False
