"""Coordination of several runtime processes: session leases and the run queue.

Modules: ``protocol`` (the ``Leases`` and ``RunQueue`` protocols, ``Lease``,
``QueuedRun``, ``QueueDepth``, ``RunSpec``) · ``sql`` (both contracts as SQL statements and row
decoding, written once) · ``sqlite`` (its dialect: a coordination SQLite file in the
home, ``coord.sqlite``) · ``postgres`` (its dialect: tables of a PostgreSQL database;
psycopg is imported lazily) · ``location`` (``open_coordinator``: the one seam from a
home path or a ``postgresql://`` URL to a backend) · ``heartbeat`` (the thread that
renews an owner's leases). See docs/serve.md.
"""

from actors.runtime.coord.heartbeat import Heartbeat
from actors.runtime.coord.location import COORD_FILE, open_coordinator
from actors.runtime.coord.protocol import (
    DEFAULT_LEASE_TTL_S,
    Coordinator,
    Lease,
    Leases,
    QueueDepth,
    QueuedRun,
    RunQueue,
    RunSpec,
    new_owner_id,
    worker_lease,
)

__all__ = [
    "COORD_FILE",
    "DEFAULT_LEASE_TTL_S",
    "Coordinator",
    "Heartbeat",
    "Lease",
    "Leases",
    "QueueDepth",
    "QueuedRun",
    "RunQueue",
    "RunSpec",
    "new_owner_id",
    "open_coordinator",
    "worker_lease",
]
