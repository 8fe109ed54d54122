"""Where a store lives: a clew home (a directory, SQLite) or a ``postgresql://`` URL.

:func:`open_store` is the one way code outside a backend opens a store by its location;
the PostgreSQL backend (and psycopg) is imported only when a URL asks for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventlog.errors import StoreError

if TYPE_CHECKING:
    from eventlog.store import EventStore

#: The URL schemes of a PostgreSQL store.
PG_SCHEMES = ("postgresql://", "postgres://")
#: The file of the SQLite store inside a clew home.
SQLITE_FILE = "sessions.sqlite"


def home_from_env(env: Mapping[str, str], home: str | os.PathLike[str] | None = None) -> Path:
    """Return the clew home: ``home`` if given, else ``$CLEW_HOME``, else ``~/.clew``."""
    return Path(home or env.get("CLEW_HOME") or "~/.clew").expanduser()


def is_postgres_url(location: str | Path) -> bool:
    """True when ``location`` is a ``postgresql://`` (or ``postgres://``) URL."""
    return isinstance(location, str) and location.startswith(PG_SCHEMES)


def store_name(location: str | Path) -> str:
    """Name the store at ``location`` for a sentence: ``the clew home DIR``, or ``the store
    URL`` with the URL's password left out."""
    if is_postgres_url(location):
        from eventlog.postgres.connections import redact  # noqa: PLC0415 - a URL only

        return f"the store {redact(str(location))}"
    return f"the clew home {location}"


def open_store(location: str | Path, **options: Any) -> EventStore:
    """Open the store at ``location``: a ``postgresql://`` URL → ``PostgresStore``; a path
    → the SQLite store of that clew home (``<home>/sessions.sqlite``, artifacts beside it),
    or of that file when the path names a ``.sqlite`` file.

    ``options`` go to the backend (``read_only``, ``artifact_threshold``, SQLite's
    ``durability``).

    Raises:
        StoreError: the store cannot be opened; psycopg is missing for a URL.
    """
    if is_postgres_url(location):
        try:
            from eventlog.postgres import PostgresStore  # noqa: PLC0415 - optional extra
        except ImportError as e:
            raise StoreError(
                f"{e}: a postgresql:// store needs the extra: pip install 'clew[postgres]'"
            ) from e
        options.pop("durability", None)  # the server's synchronous_commit decides
        return PostgresStore(str(location), **options)
    from eventlog.sqlite import SQLiteStore  # noqa: PLC0415 - keep this module light

    path = Path(location).expanduser()
    if path.suffix == ".sqlite":
        return SQLiteStore(path, **options)
    return SQLiteStore(path / SQLITE_FILE, artifacts_dir=path / "artifacts", **options)
