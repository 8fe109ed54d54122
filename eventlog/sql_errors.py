"""The one choke point where apsw and OS errors become ``StoreError``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from eventlog.errors import ClewError, StoreError


def translate_error(e: BaseException, what: str) -> StoreError:
    """Return the ``StoreError`` for an apsw / OS error ``e`` (the translation table)."""
    if isinstance(e, apsw.ConstraintError):
        return StoreError(f"{what}: constraint violated ({e})")
    if isinstance(e, apsw.BusyError):
        return StoreError(f"{what}: database is locked by another writer ({e})")
    if isinstance(e, apsw.CorruptError | apsw.NotADBError):
        return StoreError(f"{what}: database file is corrupt ({e})")
    if isinstance(e, apsw.CantOpenError | apsw.PermissionsError | apsw.ReadOnlyError):
        return StoreError(f"{what}: cannot open or write the database ({e})")
    if isinstance(e, apsw.FullError):
        return StoreError(f"{what}: disk full ({e})")
    if isinstance(e, apsw.Error):
        return StoreError(f"{what}: {type(e).__name__}: {e}")
    if isinstance(e, OSError):
        return StoreError(f"{what}: {e.strerror or e}")
    raise TypeError(f"not an apsw or OS error: {e!r}")  # pragma: no cover


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Translate apsw / OS errors into ``StoreError`` — the one choke point for them."""
    try:
        yield
    except ClewError:
        raise
    except (apsw.Error, OSError) as e:
        raise translate_error(e, what) from e
