"""Session ownership by lease, beside the owner lock file.

How the two fit: on one host the ``flock`` is still taken (the kernel drops it the
instant a process dies, so a resume on the same host never waits). When the runtime has
a coordinator — a home that has been served (``coord.sqlite`` exists), or one given
explicitly (a PostgreSQL URL) — taking a session's lock also takes its lease, and a
session whose lease another owner holds is busy even when no lock file says so: that
is what excludes an embedded runtime from a session a ``clew serve`` process (on this
host or another) is running. A home never served has no coordinator: lock files only,
as before.
"""

from __future__ import annotations

import threading
from pathlib import Path

from actors.runtime.coord.heartbeat import Heartbeat
from actors.runtime.coord.location import COORD_FILE, open_coordinator
from actors.runtime.coord.protocol import DEFAULT_LEASE_TTL_S, Coordinator, new_owner_id


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
        runtime): no leases at all."""
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
            if self._coord is None and self._enabled:
                given = self._given
                if given is not None and not isinstance(given, str):
                    self._coord = given
                elif given is not None or create or (self._home / COORD_FILE).exists():
                    self._coord = open_coordinator(given if given is not None else self._home)
                    self._own_coord = True
                if self._coord is not None:
                    self._heartbeat = Heartbeat(self._coord, self.owner, self.ttl)
            return self._coord

    def acquire(self, session_id: str) -> bool:
        """Take the session's lease (True when there is no coordinator)."""
        coord = self.coordinator()
        return coord is None or coord.acquire(session_id, self.owner, self.ttl)

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
        return lease is not None and lease.owner != self.owner

    def close(self) -> None:
        """Stop the heartbeat, release every lease of this owner, close what was opened."""
        with self._lock:
            coord, self._coord = self._coord, None
            if self._heartbeat is not None:
                self._heartbeat.stop()
                self._heartbeat = None
            if coord is not None:
                coord.release_all(self.owner)
                if self._own_coord:
                    coord.close()
