"""Artifacts on PostgreSQL: content-addressed rows of ``artifact_blobs``, readable from any host.

The path of a blob is the one an artifact file would have (``<sid>/<sha256>.<ext>``), so
``artifact_created.path`` means the same on both backends and a copy between them keeps
every event as it is. The append writes a blob in the very transaction that commits the
event referencing it (:meth:`BlobArtifacts.write_in`): the two are durable together.

A blob is stored in chunks of at most :data:`CHUNK_BYTES`: the first in its
``artifact_blobs`` row, the rest as rows ``(path, chunk_no, byte_offset, data)`` of
``artifact_chunks`` (schema version 5). PostgreSQL refuses a message over 1 GB and a
field over 1 GB, so one parameter of a 1 GiB tool result could never be stored; a chunk
is one parameter of a few MiB whatever the artifact's size. An artifact's bytes are its
blob row's ``data`` followed by its chunks in ``chunk_no`` order — a blob written before
version 5 has no chunks and reads as it is. A whole read streams the chunks (one
statement, so one snapshot) into one buffer and checks their sha256 against the row's;
a range read ships only the bytes asked for, from the chunks that hold them.
"""

from __future__ import annotations

import hashlib
import io
from typing import Any

import psycopg

from eventlog.errors import IntegrityError, StoreError
from eventlog.ids import validate_session_id
from eventlog.postgres.connections import Connections, translate_errors

#: The most bytes one row (one parameter) of a blob holds. 4 MiB: far below the server's
#: 1 GB limits, and a 1 GiB artifact is 256 rows (a round trip each costs less than
#: the 4 MiB it carries). A test may lower it; blobs written with another size still read.
CHUNK_BYTES = 4 * 1024 * 1024

_INSERT = (
    "INSERT INTO artifact_blobs (path, session_id, sha256, data) VALUES (%s, %s, %s, %b)"
    " ON CONFLICT (path) DO NOTHING"
)
_INSERT_CHUNK = (
    "INSERT INTO artifact_chunks (path, chunk_no, byte_offset, data) VALUES (%s, %s, %s, %b)"
)
#: Every part of a blob, in order, in one statement (one snapshot): row 0 is the blob's
#: own, with its sha256.
_PARTS = (
    "SELECT chunk_no, sha256, data FROM ("
    " SELECT 0 AS chunk_no, sha256, data FROM artifact_blobs WHERE path = %(p)s"
    " UNION ALL"
    " SELECT chunk_no, NULL, data FROM artifact_chunks WHERE path = %(p)s"
    ") AS parts ORDER BY chunk_no"
)
#: The bytes ``[start, end)`` of each part that holds some of them (the blob's own row
#: always: it tells an artifact that exists from one that does not).
_POS = "LEAST(GREATEST(%(start)s - byte_offset, 0), octet_length(data))"
_SLICE = (
    f"substring(data FROM ({_POS} + 1)::int"
    f" FOR GREATEST(LEAST(%(end)s - byte_offset, octet_length(data)) - {_POS}, 0)::int)"
)
_RANGE_OLD = (
    f"SELECT 0 AS chunk_no, {_SLICE} FROM"
    " (SELECT 0::bigint AS byte_offset, data FROM artifact_blobs WHERE path = %(p)s) AS parts"
)
_RANGE = (
    f"SELECT chunk_no, {_SLICE} FROM ("
    " SELECT 0 AS chunk_no, 0::bigint AS byte_offset, data FROM artifact_blobs WHERE path = %(p)s"
    " UNION ALL"
    " SELECT chunk_no, byte_offset, data FROM artifact_chunks WHERE path = %(p)s"
    " AND byte_offset < %(end)s AND byte_offset + octet_length(data) > %(start)s"
    ") AS parts ORDER BY chunk_no"
)


def _insert(conn: psycopg.Connection[Any], rel: str, sid: str, sha: str, data: bytes) -> None:
    """Insert the blob ``rel`` in chunks, unless it is stored already (the same bytes: the
    path is their hash; then only its first chunk crossed the wire).

    A blob of one chunk (nearly every one) is one statement whose result is never waited
    for; only a longer one asks whether its row was new before sending the rest.
    """
    view = memoryview(data)  # its slices are the chunks, without a copy of ``data``
    size = CHUNK_BYTES
    head = (rel, sid, sha, view[:size])
    if len(data) <= size:
        conn.execute(_INSERT, head)
    elif conn.execute(_INSERT + " RETURNING 1", head).fetchone() is not None:
        for no, offset in enumerate(range(size, len(data), size), start=1):
            conn.execute(_INSERT_CHUNK, (rel, no, offset, view[offset : offset + size]))


class BlobArtifacts:
    """Write and read artifacts as rows (the ``Artifacts`` protocol of eventlog.artifacts)."""

    def __init__(self, connections: Connections, *, chunked: bool = True) -> None:
        """``chunked``: the database has ``artifact_chunks`` (False: a read-only store of
        a schema before version 5, whose blobs are one row each)."""
        self._connections = connections
        self._chunked = chunked

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
        _insert(conn, rel, sid, sha, data)
        return rel, sha, len(data)

    def write(self, session_id: str, data: bytes, ext: str = "json") -> tuple[str, str, int]:
        """Insert the blob in a transaction of its own (committed when this returns)."""
        rel, sid, sha = self._key(session_id, data, ext)
        conn = self._connections.reader()
        with translate_errors(f"writing artifact {rel}"), conn.transaction():
            _insert(conn, rel, sid, sha, data)
        return rel, sha, len(data)

    def read(self, rel_path: str) -> bytes:
        """Return the bytes of the artifact at ``rel_path``, checked against its sha256.

        The chunks are streamed into one buffer: the artifact is in memory once.

        Raises:
            StoreError: no such artifact, or the database cannot be read.
            IntegrityError: the bytes stored are not the ones written (their sha256 differs).
        """
        if not self._chunked:
            return self._read_old(rel_path)
        buf, digest = io.BytesIO(), hashlib.sha256()
        expected: str | None = None
        with translate_errors(f"reading artifact {rel_path}"):
            conn = self._connections.reader()
            with conn.cursor(binary=True) as cur:
                for no, sha, data in cur.stream(_PARTS, {"p": rel_path}):
                    if no == 0:
                        expected = str(sha)
                    digest.update(data)
                    buf.write(data)
        if expected is None:
            raise StoreError(f"cannot read artifact {rel_path}: no such artifact")
        if digest.hexdigest() != expected:
            raise IntegrityError(
                f"artifact {rel_path} does not hold the bytes it was written with"
                f" (sha256 {digest.hexdigest()[:12]}…, {buf.tell():,} bytes)"
            )
        return buf.getvalue()

    def _read_old(self, rel_path: str) -> bytes:
        with translate_errors(f"reading artifact {rel_path}"):
            row = (
                self._connections.reader()
                .execute("SELECT data FROM artifact_blobs WHERE path = %s", (rel_path,))
                .fetchone()
            )
        if row is None:
            raise StoreError(f"cannot read artifact {rel_path}: no such artifact")
        return bytes(row[0])

    def read_range(self, rel_path: str, offset: int, length: int) -> bytes:
        """Return at most ``length`` bytes from ``offset`` (only those leave the server)."""
        start = max(0, offset)
        end = start + max(0, length)
        params = {"p": rel_path, "start": start, "end": end}
        with translate_errors(f"reading artifact {rel_path}"):
            conn = self._connections.reader()
            rows = conn.execute(_RANGE if self._chunked else _RANGE_OLD, params).fetchall()
        if not rows or rows[0][0] != 0:
            raise StoreError(f"cannot read artifact {rel_path}: no such artifact")
        return b"".join(bytes(r[1]) for r in rows)

    def paths(self, session_id: str) -> list[str]:
        """Return the paths of the session's blobs, sorted."""
        sid = validate_session_id(session_id)
        with translate_errors("listing artifacts"):
            rows = self._connections.reader().execute(
                "SELECT path FROM artifact_blobs WHERE session_id = %s ORDER BY path", (sid,)
            )
            return [str(r[0]) for r in rows]
