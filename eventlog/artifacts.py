"""Artifact files: content-addressed, fsynced before the event that references them commits.

Private whatever the umask: the directories this creates are 0700, the files 0600 (an
artifact holds a tool's output).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Protocol

from eventlog.durable_fs import fsync_dir, make_dirs_durable
from eventlog.errors import StoreError
from eventlog.ids import validate_session_id

#: Bytes hashed per read when an existing file is checked (memory stays flat).
_CHUNK = 1 << 20


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Artifacts(Protocol):
    """Where a store keeps its artifacts: files (SQLite) or rows (PostgreSQL).

    ``rel_path`` is ``<session_id>/<sha256>.<ext>`` on every backend.
    """

    def write(self, session_id: str, data: bytes, ext: str = "json") -> tuple[str, str, int]:
        """Store ``data`` durably; return ``(relative_path, sha256_hex, size_bytes)``."""
        ...

    def read(self, rel_path: str) -> bytes:
        """Return the bytes of the artifact at ``rel_path``."""
        ...

    def read_range(self, rel_path: str, offset: int, length: int) -> bytes:
        """Return at most ``length`` bytes of the artifact from ``offset``."""
        ...


class ArtifactFiles:
    """Write and read artifact files under ``<root>/<session_id>/<sha256>.<ext>``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # Files this process wrote and fsynced: writing the same content again (a tool's
        # result, then the node holding it) needs no second look at the disk.
        self._durable: set[str] = set()

    def write(self, session_id: str, data: bytes, ext: str = "json") -> tuple[str, str, int]:
        """Write ``data`` durably (tmp file, fsync, rename, fsync dir) unless already there.

        A directory created on the way is fsynced into its parent too.

        Returns:
            ``(relative_path, sha256_hex, size_bytes)``; the path is relative to ``root``.
        """
        sid = validate_session_id(session_id)
        sha = hashlib.sha256(data).hexdigest()
        rel = f"{sid}/{sha}.{ext}"
        final = self.root / rel
        if rel in self._durable:
            return rel, sha, len(data)
        # Content-addressed: an existing file is reused only if its bytes really are
        # ``data`` (a same-size file left corrupt by a crash is rewritten). Hashed in
        # chunks: reading a 50 MB file whole would double the memory a large result needs.
        if final.exists() and final.stat().st_size == len(data) and _file_sha256(final) == sha:
            self._durable.add(rel)
            return rel, sha, len(data)
        try:
            make_dirs_durable(final.parent, mode=0o700)
            tmp = final.with_suffix(f".{ext}.tmp{os.getpid()}")
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
            with os.fdopen(os.open(tmp, flags, 0o600), "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(final)
            fsync_dir(final.parent)
        except OSError as e:
            raise StoreError(f"cannot write artifact {rel}: {e.strerror or e}") from e
        self._durable.add(rel)
        return rel, sha, len(data)

    def _path(self, rel_path: str) -> Path:
        path = (self.root / rel_path).resolve()
        if self.root.resolve() not in path.parents:
            raise StoreError(f"artifact path {rel_path!r} escapes the artifact root")
        return path

    def read(self, rel_path: str) -> bytes:
        """Return the bytes of the artifact at ``rel_path`` (relative to ``root``)."""
        path = self._path(rel_path)
        try:
            return path.read_bytes()
        except OSError as e:
            raise StoreError(f"cannot read artifact {rel_path}: {e.strerror or e}") from e

    def read_range(self, rel_path: str, offset: int, length: int) -> bytes:
        """Return at most ``length`` bytes of the artifact at ``rel_path`` from ``offset``.

        Only those bytes are read, whatever the file's size.
        """
        path = self._path(rel_path)
        try:
            with path.open("rb") as f:
                f.seek(max(0, offset))
                return f.read(max(0, length))
        except OSError as e:
            raise StoreError(f"cannot read artifact {rel_path}: {e.strerror or e}") from e
