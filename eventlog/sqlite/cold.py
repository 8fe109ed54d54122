"""Cold files: an archived session's table pair moved to a file of its own.

A new connection parses the main file's whole schema on its first statement, and every
session adds its ``nodes_<sid>`` and ``events_<sid>`` to it (~1.4 ms a session), so a home
of 10^5 sessions cost every process minutes before its first read. An archived session
only reads, so its two tables move to ``cold/<sid>.sqlite`` beside the main file — same
names, same columns, same rows (``hash`` included), the seed's layout — and the main
file's schema holds only the live sessions. The global rows (``sessions``, ``agents``,
``runs``, ``artifacts``) stay in the main file.

**Moving** (:func:`move_to_cold`, on the write connection) has no cross-file
transaction (WAL has none), so it goes in two steps:

1. the cold file is written whole under a temporary name, fsynced, renamed into place,
   and its directory fsynced;
2. one main-file transaction records it in ``clew_cold_sessions`` (its location and row
   counts) and drops the two tables.

A crash between them leaves the main tables authoritative and the cold file unused (the
next move overwrites it).

**Reading** (:class:`ColdAttachments`): SQLite resolves an unqualified table name in
``main``, then ``temp``, then the attached files in attach order, so a statement that
fails with ``no such table: events_<sid>`` for a session recorded as cold is run again
once its file is attached (read-only, immutable: it never changes), and every existing
``SELECT … FROM events_<sid>`` reads it unchanged. Each connection keeps at most
:data:`MAX_ATTACHED` cold files, the one attached longest ago detached first (a
``DETACH`` fails inside the read transaction that read the file: that one stays until
the next attach). A session whose tables are in the main file (live, or archived before this or
left by a crash) is found there first.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw

from eventlog.errors import StoreError, UnknownSession
from eventlog.ids import validate_session_id
from eventlog.sqlite.transaction import Transaction, translate_errors

#: The directory of the cold files, beside the main file.
COLD_DIR = "cold"
#: Where each cold session's tables are (``file`` relative to the main file's directory)
#: and how many rows they hold (a cold file never changes: counts need not open it).
LOCATIONS_DDL = """
    CREATE TABLE IF NOT EXISTS clew_cold_sessions (
        session_id TEXT PRIMARY KEY,
        file TEXT NOT NULL,
        events INTEGER NOT NULL,
        nodes INTEGER NOT NULL
    )"""
#: Cold files attached to one connection at most (SQLite's own limit is 10 by default).
MAX_ATTACHED = 8
#: The schema name of the file being written (on the write connection, step 1).
_NEW = "clew_cold_new"

_MISSING = re.compile(r"no such table: (?:main\.)?(?:events|nodes)_(\w+)")
_CREATE = re.compile(r"^(CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX)\s+)", re.IGNORECASE)

#: Test seam: called with ``"cold_file_written"`` between the two steps.
FaultHook = Callable[[str], None]


def cold_path(main: Path, sid: str) -> Path:
    """The cold file of ``sid`` (validated) for the main file ``main``."""
    return main.parent / COLD_DIR / f"{validate_session_id(sid)}.sqlite"


def read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` read-only and immutable (a cold file never changes)."""
    return "file:" + quote(str(path.resolve())) + "?mode=ro&immutable=1"


def cold_files(conn: apsw.Connection, sids: Sequence[str]) -> dict[str, tuple[str, int, int]]:
    """Return ``{sid: (file, events, nodes)}`` of those of ``sids`` that are cold
    (none before the first move made the table)."""
    if not sids:
        return {}
    marks = ", ".join("?" * len(sids))
    try:
        rows = conn.execute(
            f"SELECT session_id, file, events, nodes FROM clew_cold_sessions"
            f" WHERE session_id IN ({marks})",
            tuple(sids),
        ).fetchall()
    except apsw.SQLError as e:
        if "no such table: clew_cold_sessions" in str(e):
            return {}
        raise
    return {str(sid): (str(file), _int(e), _int(n)) for sid, file, e, n in rows}


def all_cold_files(conn: apsw.Connection) -> dict[str, str]:
    """Return ``{sid: file}`` of every cold session."""
    try:
        rows = conn.execute("SELECT session_id, file FROM clew_cold_sessions").fetchall()
    except apsw.SQLError as e:
        if "no such table: clew_cold_sessions" in str(e):
            return {}
        raise
    return {str(r[0]): str(r[1]) for r in rows}


def has_main_tables(conn: apsw.Connection, sid: str) -> bool:
    """Whether ``events_<sid>`` is in the main file."""
    row = conn.execute(
        "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?", (f"events_{sid}",)
    ).fetchone()
    return row is not None


def move_to_cold(
    conn: apsw.Connection,
    main: Path,
    session_id: str,
    fault: FaultHook | None = None,
    *,
    sync: bool = True,
) -> bool:
    """Move the session's table pair from the main file to its cold file (the module
    docstring's two steps); return False when its tables are not in the main file
    (cold already).

    Call it on the write connection, outside a transaction. ``sync=False`` skips the two
    fsyncs of step 1: only for a bulk fill that syncs everything once at its end
    (``benchmarks/gen_sessions.py --cold``), never for a home in use.

    Raises:
        UnknownSession: no such session.
        StoreError: the session is not archived, a file cannot be written, or a row was
            added meanwhile.
    """
    sid = validate_session_id(session_id)
    with translate_errors(f"moving session {sid} to its cold file"):
        row = conn.execute("SELECT status FROM sessions WHERE session_id = ?", (sid,)).fetchone()
        if row is None:
            raise UnknownSession(f"unknown session {sid}")
        if row[0] != "archived":
            raise StoreError(f"session {sid} is not archived: not moved to a cold file")
        if not has_main_tables(conn, sid):
            return False
    final = cold_path(main, sid)
    tmp = final.with_name(f".{sid}.sqlite.tmp")
    with translate_errors(f"writing the cold file of {sid}"):
        final.parent.mkdir(mode=0o700, exist_ok=True)
        for stale in (tmp, tmp.with_name(tmp.name + "-journal")):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        counts = _write_tables(conn, tmp, sid)
        if sync:
            _fsync(tmp)
        tmp.replace(final)
        if sync:
            _fsync(final.parent)
    if fault is not None:
        fault("cold_file_written")
    with Transaction(conn, f"moving session {sid} to its cold file"):
        if _max_rowids(conn, sid) != counts[2:]:
            raise StoreError(f"moving session {sid} to its cold file: rows were added meanwhile")
        conn.execute(LOCATIONS_DDL)
        conn.execute(
            "INSERT OR REPLACE INTO clew_cold_sessions VALUES (?, ?, ?, ?)",
            (sid, f"{COLD_DIR}/{final.name}", counts[0], counts[1]),
        )
        conn.execute(f"DROP TABLE main.events_{sid}")
        conn.execute(f"DROP TABLE main.nodes_{sid}")
    return True


def _max_rowids(conn: apsw.Connection, sid: str) -> tuple[int, int]:
    """The last ``seq`` and ``node_seq`` of the session's tables in the main file."""
    seq = conn.execute(f"SELECT COALESCE(MAX(seq), 0) FROM main.events_{sid}").fetchone()
    node = conn.execute(f"SELECT COALESCE(MAX(node_seq), 0) FROM main.nodes_{sid}").fetchone()
    assert seq is not None and node is not None  # an aggregate always returns one row
    return _int(seq[0]), _int(node[0])


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value


def _write_tables(conn: apsw.Connection, tmp: Path, sid: str) -> tuple[int, int, int, int]:
    """Copy the two tables (their DDL as the main file holds it, their indexes, every
    row) into the new file ``tmp``; return (events, nodes, max seq, max node_seq)."""
    conn.execute(f"ATTACH ? AS {_NEW}", (str(tmp),))
    try:
        # A file no one reads until it is renamed: no journal; fsynced by the caller.
        conn.execute(f"PRAGMA {_NEW}.journal_mode = OFF").fetchall()
        conn.execute(f"PRAGMA {_NEW}.synchronous = OFF")
        with Transaction(conn, f"writing the cold file of {sid}"):
            ddl = conn.execute(
                "SELECT sql FROM main.sqlite_master WHERE tbl_name IN (?, ?)"
                " AND sql IS NOT NULL ORDER BY type = 'index', rowid",
                (f"nodes_{sid}", f"events_{sid}"),
            ).fetchall()
            for (sql,) in ddl:
                conn.execute(_CREATE.sub(rf"\g<1>{_NEW}.", str(sql), count=1))
            conn.execute(f"INSERT INTO {_NEW}.nodes_{sid} SELECT * FROM main.nodes_{sid}")
            nodes = conn.changes()
            conn.execute(f"INSERT INTO {_NEW}.events_{sid} SELECT * FROM main.events_{sid}")
            events = conn.changes()
            seq, node = _max_rowids(conn, sid)
    finally:
        conn.execute(f"DETACH {_NEW}")
    return events, nodes, seq, node


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def forget_cold(conn: apsw.Connection, main: Path, sid: str) -> Path | None:
    """Delete the location row of ``sid`` (inside the caller's transaction); return its
    cold file, for the caller to remove once committed (None: not cold)."""
    found = cold_files(conn, [sid]).get(sid)
    if found is None:
        return None
    conn.execute("DELETE FROM clew_cold_sessions WHERE session_id = ?", (sid,))
    return main.parent / found[0]


class _Attached:
    """The cold files one connection has attached (sid → schema name), oldest first, and
    the :attr:`ColdAttachments.generation` of forgotten sessions it has caught up with."""

    __slots__ = ("files", "generation")

    def __init__(self) -> None:
        self.files: collections.OrderedDict[str, str] = collections.OrderedDict()
        self.generation = 0


class ColdAttachments:
    """The cold files attached to each connection of one main file."""

    def __init__(self, main: Path) -> None:
        self._main = main
        self._lock = threading.Lock()
        self._by_conn: weakref.WeakKeyDictionary[apsw.Connection, _Attached] = (
            weakref.WeakKeyDictionary()
        )
        #: Sessions deleted by this process: a connection that still has one's (unlinked)
        #: file attached detaches it before its next statement, so an id made, archived
        #: and attached again reads its new file.
        self._forgotten: set[str] = set()
        self.generation = 0

    def forget(self, sid: str) -> None:
        """The cold file of ``sid`` is gone (the session was deleted)."""
        with self._lock:
            self._forgotten.add(sid)
            self.generation += 1

    def execute(self, conn: apsw.Connection, sql: str, params: Sequence[Any] = ()) -> apsw.Cursor:
        """``conn.execute(sql, params)``, attaching the cold file of each session whose
        table it does not find (at most :data:`MAX_ATTACHED` a statement)."""
        if self.generation:
            self._detach_forgotten(conn)
        for _ in range(MAX_ATTACHED):
            try:
                return conn.execute(sql, params)
            except apsw.SQLError as e:
                match = _MISSING.search(str(e))
                if match is None or not self.attach(conn, match.group(1)):
                    raise
        return conn.execute(sql, params)

    def _of(self, conn: apsw.Connection) -> _Attached:
        with self._lock:
            return self._by_conn.setdefault(conn, _Attached())

    def attach(self, conn: apsw.Connection, sid: str) -> bool:
        """Attach the cold file of ``sid`` to ``conn``; False when it is not cold (or is
        attached already: the table is missing for another reason)."""
        attached = self._of(conn)
        if sid in attached.files:
            return False
        found = cold_files(conn, [sid]).get(sid)
        if found is None:
            return False
        while len(attached.files) >= MAX_ATTACHED and _detach_oldest(conn, attached.files):
            pass
        if len(attached.files) >= conn.limit(apsw.SQLITE_LIMIT_ATTACHED, -1):
            raise StoreError(
                f"reading session {sid}: more cold files in one read than SQLite attaches"
            )
        path = self._main.parent / found[0]
        if not path.is_file():
            raise StoreError(f"reading session {sid}: its cold file {path} is missing")
        alias = f"cold_{sid}"
        conn.execute(f"ATTACH ? AS {alias}", (read_only_uri(path),))
        attached.files[sid] = alias
        return True

    def _detach_forgotten(self, conn: apsw.Connection) -> None:
        attached = self._of(conn)
        generation = self.generation
        if attached.generation == generation:
            return
        with self._lock:
            gone = [sid for sid in attached.files if sid in self._forgotten]
        for sid in gone:
            try:
                conn.execute(f"DETACH {attached.files[sid]}")
            except apsw.SQLError:
                return  # read by the open transaction: on a later statement
            del attached.files[sid]
        attached.generation = generation


def _detach_oldest(conn: apsw.Connection, files: collections.OrderedDict[str, str]) -> bool:
    """Detach the file attached longest ago that can be (not read by the open read
    transaction); False when none can."""
    for sid, alias in list(files.items()):
        try:
            conn.execute(f"DETACH {alias}")
        except apsw.SQLError:
            continue  # "database … is locked": the open transaction read it
        del files[sid]
        return True
    return False
