"""Raw looks at a store's file, beside the store (shared by the SQLite test modules)."""

from __future__ import annotations

from pathlib import Path

import apsw


def raw(path: Path) -> apsw.Connection:
    """Return a plain apsw connection on ``path`` (no store in between)."""
    return apsw.Connection(str(path))


def tables(path: Path) -> list[str]:
    """Return the names in ``sqlite_master`` of the file at ``path``, sorted."""
    conn = raw(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master ORDER BY name")]
    finally:
        conn.close()
