"""Session ownership: the owner lock file (:class:`SessionLock`), and the lease beside it.

How the two fit: on one host the ``flock`` is still taken (the kernel drops it the
instant a process dies, so a resume on the same host never waits). When the runtime has
a coordinator — a home that has been served (``coord.sqlite`` exists), or one given
explicitly (a PostgreSQL URL) — taking a session's lock also takes its lease, and a
session whose lease another owner holds is busy even when no lock file says so: that
is what excludes an embedded runtime from a session a ``clew serve`` process (on this
host or another) is running. A home never served has no coordinator: lock files only,
as before. A runtime on a PostgreSQL store always has one: the store's own database
(several homes share it, and a lock file of one home means nothing to another).

A read-only runtime given a coordinator reads leases (so it does not call a session
another home is running "interrupted") and takes none. A lease whose owner is a process
of this host that no longer exists is free at once, as its lock file would be: its
expiry is only the other hosts' way to learn that the owner is gone.
"""

from __future__ import annotations

import fcntl
import os
import socket
import threading
from pathlib import Path

from actors.runtime.coord.heartbeat import Heartbeat
from actors.runtime.coord.location import COORD_FILE, open_coordinator
from actors.runtime.coord.protocol import DEFAULT_LEASE_TTL_S, Coordinator, Lease, new_owner_id


def owner_is_dead_here(owner: str) -> bool:
    """True when ``owner`` (``host:pid:random``) names a process of this host that is gone.

    A pid reused since by another process reads as alive: the lease then lives out its
    ttl, the safe side.
    """
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    host, pid = parts[0], int(parts[1])
    if host != socket.gethostname() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's process: EPERM)
        return False
    return False


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


def lock_file(home: Path, session_id: str) -> SessionLock:
    """The owner lock of the session ``session_id`` of ``home``: ``<home>/locks/<id>.lock``."""
    return SessionLock(home / "locks" / f"{session_id}.lock")


class SessionLeases:
    """The leases one runtime holds, under one owner id, renewed by one heartbeat."""

    def __init__(
        self,
        home: Path,
        *,
        coordinator: Coordinator | str | None = None,
        ttl: float = DEFAULT_LEASE_TTL_S,
        enabled: bool = True,
    ) -> None:
        """``coordinator``: a coordinator, or where one is (a URL or a home path);
        None: the home's ``coord.sqlite`` once it exists. ``enabled`` False (a read-only
        runtime): no lease is taken or renewed; leases are still read when a
        ``coordinator`` is given (a read-only runtime never opens ``coord.sqlite``)."""
        #: This runtime's owner id (in every lease it takes and every queued run it runs).
        self.owner = new_owner_id()
        self.ttl = ttl
        self._home = home
        self._enabled = enabled
        self._given = coordinator
        self._coord: Coordinator | None = None
        self._own_coord = False
        self._heartbeat: Heartbeat | None = None
        self._lock = threading.Lock()

    def coordinator(self, *, create: bool = False) -> Coordinator | None:
        """Return the coordinator, opening it on first use; None when there is none.

        ``create``: open (creating) the home's ``coord.sqlite`` even if it does not exist
        yet — what ``submit`` and ``serve`` do.
        """
        with self._lock:
            if self._coord is None and (self._enabled or self._given is not None):
                given = self._given
                if given is not None and not isinstance(given, str):
                    self._coord = given
                elif given is not None or create or (self._home / COORD_FILE).exists():
                    self._coord = open_coordinator(given if given is not None else self._home)
                    self._own_coord = True
                if self._coord is not None and self._enabled:
                    self._heartbeat = Heartbeat(self._coord, self.owner, self.ttl)
            return self._coord

    def acquire(self, session_id: str) -> bool:
        """Take the session's lease (True when there is no coordinator)."""
        coord = self.coordinator()
        if coord is None:
            return True
        if coord.acquire(session_id, self.owner, self.ttl):
            return True
        holder = coord.holder(session_id)
        if holder is not None and self._dead(holder):
            # Released only if that dead owner still holds it; then taken like a free one.
            coord.release(session_id, holder.owner)
        return coord.acquire(session_id, self.owner, self.ttl)

    def release(self, session_id: str) -> None:
        """Drop the session's lease if this runtime holds it."""
        coord = self.coordinator()
        if coord is not None:
            coord.release(session_id, self.owner)

    def held_elsewhere(self, session_id: str) -> bool:
        """True when another owner holds a live lease on the session."""
        coord = self.coordinator()
        if coord is None:
            return False
        lease = coord.holder(session_id)
        return lease is not None and lease.owner != self.owner and not self._dead(lease)

    def held(self) -> int:
        """How many leases this owner held at the heartbeat's last renewal (0: none yet)."""
        heartbeat = self._heartbeat
        return heartbeat.held if heartbeat is not None else 0

    def _dead(self, lease: Lease) -> bool:
        return lease.owner != self.owner and owner_is_dead_here(lease.owner)

    def close(self) -> None:
        """Stop the heartbeat, release every lease of this owner, close what was opened."""
        with self._lock:
            coord, self._coord = self._coord, None
            if self._heartbeat is not None:
                self._heartbeat.stop()
                self._heartbeat = None
            if coord is not None:
                if self._enabled:
                    coord.release_all(self.owner)
                if self._own_coord:
                    coord.close()
