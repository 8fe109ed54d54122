"""The one transaction context manager, and the one place apsw errors become ``StoreError``.

``with Transaction(conn, what):`` runs ``BEGIN IMMEDIATE`` on entry, ``COMMIT`` when the
body returns, and ``ROLLBACK`` when it raises — never a commit in ``finally``. On the
way out an apsw / OS error is translated by :func:`translate_error` and raised as
``StoreError(...) from e``; a :class:`~eventlog.errors.ClewError` or any other
exception propagates unchanged after the rollback. Savepoints are nested ``with``
blocks (:meth:`Transaction.savepoint`). How many requests share a transaction is the
caller's policy (:mod:`eventlog.sqlite.append`), not this module's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

import apsw

from eventlog.errors import ClewError, StoreError

#: The translation table: the first row whose classes match gives the sentence.
#: An apsw error in no row is named by its class; an OS error by its strerror.
TRANSLATIONS: tuple[tuple[tuple[type[apsw.Error], ...], str], ...] = (
    ((apsw.ConstraintError,), "constraint violated"),
    ((apsw.BusyError,), "database is locked by another writer"),
    ((apsw.CorruptError, apsw.NotADBError), "database file is corrupt"),
    (
        (apsw.CantOpenError, apsw.PermissionsError, apsw.ReadOnlyError),
        "cannot open or write the database",
    ),
    ((apsw.FullError,), "disk full"),
)


def translate_error(e: BaseException, what: str) -> StoreError:
    """Return the ``StoreError`` for an apsw / OS error ``e`` raised while doing ``what``.

    Raises:
        TypeError: ``e`` is neither an apsw error nor an ``OSError``.
    """
    if isinstance(e, apsw.Error):
        for classes, sentence in TRANSLATIONS:
            if isinstance(e, classes):
                return StoreError(f"{what}: {sentence} ({e})")
        return StoreError(f"{what}: {type(e).__name__}: {e}")
    if isinstance(e, OSError):
        return StoreError(f"{what}: {e.strerror or e}")
    raise TypeError(f"not an apsw or OS error: {e!r}")


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Translate apsw / OS errors raised in the block into ``StoreError`` (no transaction)."""
    try:
        yield
    except ClewError:
        raise
    except (apsw.Error, OSError) as e:
        raise translate_error(e, what) from e


class _Scope:
    """What a transaction and a savepoint share: finish on success, undo on error.

    On error the scope is undone first, then an apsw / OS error is raised as
    ``StoreError`` naming ``what``; anything else (a ``ClewError``, a bug,
    ``KeyboardInterrupt``) propagates unchanged.
    """

    __slots__ = ("conn", "what")

    def __init__(self, conn: apsw.Connection, what: str) -> None:
        self.conn = conn
        self.what = what

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self._finish()
            return
        self._undo()
        if isinstance(exc, apsw.Error | OSError) and not isinstance(exc, ClewError):
            raise translate_error(exc, self.what) from exc

    def _finish(self) -> None:
        raise NotImplementedError

    def _undo(self) -> None:
        raise NotImplementedError


class Transaction(_Scope):
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on success, ``ROLLBACK`` on error, errors translated.

    Not reentrant: one ``with`` per instance. ``began`` tells a caller that caught the
    error whether it was ``BEGIN`` itself that failed (nothing ran) or something after.
    """

    __slots__ = ("_savepoints", "began")

    def __init__(self, conn: apsw.Connection, what: str) -> None:
        """Prepare a transaction on ``conn``; ``what`` names it in error sentences."""
        super().__init__(conn, what)
        self.began = False
        self._savepoints = 0

    def __enter__(self) -> Transaction:
        with translate_errors(f"beginning {self.what}"):
            self.conn.execute("BEGIN IMMEDIATE")
        self.began = True
        return self

    def _finish(self) -> None:
        try:
            self.conn.execute("COMMIT")
        except (apsw.Error, OSError) as e:
            self._undo()
            raise translate_error(e, f"committing {self.what}") from e

    def _undo(self) -> None:
        # A failed COMMIT may have ended the transaction already (SQLite rolls back on
        # some errors by itself); ROLLBACK outside a transaction would be an error.
        if not self.conn.getautocommit():
            self.conn.execute("ROLLBACK")

    def savepoint(self, what: str | None = None) -> Savepoint:
        """Return a savepoint inside this transaction, to use as a nested ``with``."""
        self._savepoints += 1
        return Savepoint(self.conn, f"sp{self._savepoints}", what or self.what)


class Savepoint(_Scope):
    """``SAVEPOINT`` … ``RELEASE`` on success; ``ROLLBACK TO`` + ``RELEASE`` on error.

    Only the savepoint's own work is undone; the enclosing transaction goes on. Errors
    propagate (apsw / OS errors translated, as in :class:`Transaction`).
    """

    __slots__ = ("name",)

    def __init__(self, conn: apsw.Connection, name: str, what: str) -> None:
        super().__init__(conn, what)
        self.name = name

    def __enter__(self) -> Savepoint:
        with translate_errors(f"opening a savepoint in {self.what}"):
            self.conn.execute(f"SAVEPOINT {self.name}")
        return self

    def _finish(self) -> None:
        with translate_errors(f"releasing a savepoint in {self.what}"):
            self.conn.execute(f"RELEASE {self.name}")

    def _undo(self) -> None:
        if self.conn.getautocommit():
            # SQLite rolled the whole transaction back by itself (it may on SQLITE_FULL or
            # an I/O error): no savepoint is left to undo ("no such savepoint" would hide
            # the cause). The caller must see that the transaction is gone.
            return
        self.conn.execute(f"ROLLBACK TO {self.name}")
        self.conn.execute(f"RELEASE {self.name}")
