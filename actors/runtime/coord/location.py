"""The one seam from "where" to a coordinator: a home directory or a database URL.

A home (a path) coordinates through ``<home>/coord.sqlite``: processes on one host.
A ``postgresql://`` (or ``postgres://``) URL coordinates through tables in that
database: processes on several hosts. Once the PostgreSQL event store lands,
``Runtime(store=URL)`` passes the same URL here.
"""

from __future__ import annotations

import os
from pathlib import Path

from actors.runtime.coord.protocol import Coordinator

#: The coordination file of a home (leases and the run queue).
COORD_FILE = "coord.sqlite"

_URL_SCHEMES = ("postgresql://", "postgres://")


def is_database_url(location: str | os.PathLike[str]) -> bool:
    """True when ``location`` is a PostgreSQL URL rather than a home path."""
    return isinstance(location, str) and location.startswith(_URL_SCHEMES)


def open_coordinator(location: str | os.PathLike[str]) -> Coordinator:
    """Open the coordinator of ``location``: a home directory or a ``postgresql://`` URL.

    Raises:
        StoreError: the file or the database cannot be opened.
    """
    if is_database_url(location):
        from actors.runtime.coord.postgres import PostgresCoordinator  # noqa: PLC0415 - optional

        return PostgresCoordinator(str(location))
    from actors.runtime.coord.sqlite import SQLiteCoordinator  # noqa: PLC0415 - symmetric

    return SQLiteCoordinator(Path(location).expanduser() / COORD_FILE)
