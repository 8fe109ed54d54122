"""Artifacts on PostgreSQL: content-addressed rows of ``artifact_blobs``, readable from any host.

The path of a blob is the one an artifact file would have (``<sid>/<sha256>.<ext>``), so
``artifact_created.path`` means the same on both backends and a copy between them keeps
every event as it is. The append writes a blob in the very transaction that commits the
event referencing it (:meth:`BlobArtifacts.write_in`): the two are durable together.
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from eventlog.errors import StoreError
from eventlog.ids import validate_session_id
from eventlog.postgres.connections import Connections, translate_errors

_INSERT = (
    "INSERT INTO artifact_blobs (path, session_id, sha256, data) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT (path) DO NOTHING"
)


class BlobArtifacts:
    """Write and read artifacts as rows (the ``Artifacts`` protocol of eventlog.artifacts)."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    @staticmethod
    def _key(session_id: str, data: bytes, ext: str) -> tuple[str, str, str]:
        sid = validate_session_id(session_id)
        sha = hashlib.sha256(data).hexdigest()
        return f"{sid}/{sha}.{ext}", sid, sha

    def write_in(
        self, conn: psycopg.Connection[Any], session_id: str, data: bytes, ext: str = "json"
    ) -> tuple[str, str, int]:
        """Insert the blob in ``conn``'s transaction (committed with the referencing event)."""
        rel, sid, sha = self._key(session_id, data, ext)
        conn.execute(_INSERT, (rel, sid, sha, data))
        return rel, sha, len(data)

    def write(self, session_id: str, data: bytes, ext: str = "json") -> tuple[str, str, int]:
        """Insert the blob in a transaction of its own (committed when this returns)."""
        rel, sid, sha = self._key(session_id, data, ext)
        with translate_errors(f"writing artifact {rel}"):
            self._connections.reader().execute(_INSERT, (rel, sid, sha, data))
        return rel, sha, len(data)

    def read(self, rel_path: str) -> bytes:
        """Return the bytes of the artifact at ``rel_path``."""
        return self._select(rel_path, "data", ())

    def read_range(self, rel_path: str, offset: int, length: int) -> bytes:
        """Return at most ``length`` bytes from ``offset`` (only those leave the server)."""
        return self._select(
            rel_path, "substring(data FROM %s FOR %s)", (max(0, offset) + 1, max(0, length))
        )

    def _select(self, rel_path: str, expr: str, params: tuple[int, ...]) -> bytes:
        with translate_errors(f"reading artifact {rel_path}"):
            row = (
                self._connections.reader()
                .execute(f"SELECT {expr} FROM artifact_blobs WHERE path = %s", (*params, rel_path))
                .fetchone()
            )
        if row is None:
            raise StoreError(f"cannot read artifact {rel_path}: no such artifact")
        return bytes(row[0])

    def paths(self, session_id: str) -> list[str]:
        """Return the paths of the session's blobs, sorted."""
        sid = validate_session_id(session_id)
        with translate_errors("listing artifacts"):
            rows = self._connections.reader().execute(
                "SELECT path FROM artifact_blobs WHERE session_id = %s ORDER BY path", (sid,)
            )
            return [str(r[0]) for r in rows]
