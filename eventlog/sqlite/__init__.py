"""The SQLite event store: one file, WAL mode, one writer, many readers.

One concept per module: ``connections`` (the writer and a reader per thread),
``schema`` (DDL and the append-only migrations), ``transaction`` (the one transaction
context manager and the apsw → ``StoreError`` table), ``counters`` (the cached
sequence numbers), ``append`` (the group-commit batch), ``materialise`` (the rows
written in the event's transaction), ``reads`` (the readers), ``deletion`` (deleting a
session for good), ``cold`` (an archived session's tables in a file of their own) and
``store`` (the :class:`SQLiteStore` composing them). Callers outside this package import
from here.
"""

from eventlog.sqlite.connections import Durability
from eventlog.sqlite.store import DEFAULT_ARTIFACT_THRESHOLD, SQLiteStore
from eventlog.sqlite.transaction import translate_errors

__all__ = ["DEFAULT_ARTIFACT_THRESHOLD", "Durability", "SQLiteStore", "translate_errors"]
