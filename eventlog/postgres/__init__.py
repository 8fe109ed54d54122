"""The PostgreSQL event store (psycopg 3, the optional extra ``clew[postgres]``).

One concept per module: ``connections`` (a connection per thread, the write connection,
the psycopg → ``StoreError`` table), ``schema`` (shared tables keyed by session id and
the migrations), ``append`` (the group-commit batch under a row lock per session),
``materialise`` (the rows written in the event's transaction), ``reads`` (the readers),
``blobs`` (artifacts as content-addressed rows), ``taskwal`` (the Task WAL as a table),
``notify`` (LISTEN/NOTIFY of committed batches) and ``store`` (:class:`PostgresStore`).

psycopg is imported by these modules only: ``import eventlog`` never needs it.
"""

from eventlog.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
