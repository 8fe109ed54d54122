"""The durable truth of clew: vocabulary, the event stores (SQLite, PostgreSQL), the writer,
the Task WAL. :func:`open_store` opens a store by its location (a home or a URL)."""

from eventlog.locations import is_postgres_url, open_store

__all__ = ["is_postgres_url", "open_store"]
