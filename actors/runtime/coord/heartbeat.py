"""The heartbeat: a daemon thread renewing every lease of one owner, every third of the ttl.

Renewing all of an owner's leases is one statement, whatever their number. A renewal
that fails (the database is briefly unreachable) is logged and tried again at the next
beat: the leases survive as long as one beat in three succeeds.
"""

from __future__ import annotations

import threading

from actors.runtime.coord.protocol import Leases
from eventlog.errors import StoreError
from eventlog.logs import get_logger

_log = get_logger("clew.leases")


class Heartbeat:
    """Renew ``owner``'s leases every ``ttl / 3`` seconds until :meth:`stop`."""

    def __init__(self, leases: Leases, owner: str, ttl: float) -> None:
        self.leases = leases
        self.owner = owner
        self.ttl = ttl
        #: How many leases the last successful renewal extended.
        self.held = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="clew-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self.held = len(self.leases.renew(self.owner, self.ttl))
            except StoreError as e:
                _log.warning("lease renewal failed", owner=self.owner, error=str(e))

    def stop(self) -> None:
        """Stop renewing (the leases then expire unless released)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
