"""``SQLiteStore(read_only=True)``: reads an existing file as it is and writes nothing.

A real read-only mount is exercised through the CLI (tests/actors/cli/test_read_only_home.py);
here the file is writable, and "writes nothing" is checked byte for byte.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eventlog.errors import ReadOnlyStore, Refused, StoreError
from eventlog.records import ChainStatus
from eventlog.sqlite import SQLiteStore
from eventlog.sqlite.schema import SCHEMA_VERSION
from tests.eventlog.sqlite._files import raw
from tests.eventlog.store_conformance import SID, append, created, todo

GOLDEN_DEMO = Path(__file__).resolve().parents[2] / "golden" / "sessions" / "demo"
GOLDEN_SID = "sess_20261130_231819_679c"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    store = SQLiteStore(tmp_path / "s.sqlite")
    append(store, created(), todo("a"))
    store.close()
    return tmp_path / "s.sqlite"


def test_a_read_only_store_reads_what_was_written_and_refuses_every_append(path: Path) -> None:
    before = path.read_bytes()
    store = SQLiteStore(path, read_only=True)
    [refused] = store.append_batch([todo("b")])
    assert ([1, 2], ChainStatus(session_id=SID, events=2, legacy_events=0)) == (
        [e.seq for e in store.iter_events(SID)],
        store.check_chain(SID),
    )
    store.close()
    assert isinstance(refused, ReadOnlyStore)
    assert isinstance(refused, Refused)
    assert before == path.read_bytes()


def test_a_read_only_store_of_a_missing_file_is_refused_and_creates_nothing(
    tmp_path: Path,
) -> None:
    with pytest.raises(StoreError, match="no such file"):
        SQLiteStore(tmp_path / "home" / "s.sqlite", read_only=True)
    assert [] == list(tmp_path.iterdir())


def test_a_zero_byte_file_is_refused_read_only_as_too_old_to_read(tmp_path: Path) -> None:
    (tmp_path / "s.sqlite").touch()
    with pytest.raises(StoreError, match=r"schema \(version 0\) is older than this clew reads"):
        SQLiteStore(tmp_path / "s.sqlite", read_only=True)
    assert 0 == (tmp_path / "s.sqlite").stat().st_size


def test_a_store_from_a_newer_clew_is_refused_read_only(path: Path) -> None:
    conn = raw(path)
    conn.pragma("user_version", SCHEMA_VERSION + 1)
    conn.close()
    with pytest.raises(StoreError, match="newer than this clew"):
        SQLiteStore(path, read_only=True)


def test_an_older_schema_is_read_as_it_is_without_migrating_it(tmp_path: Path) -> None:
    path = Path(shutil.copy(GOLDEN_DEMO / "home" / "sessions.sqlite", tmp_path / "s.sqlite"))
    before = path.read_bytes()
    store = SQLiteStore(path, read_only=True)
    assert (102, ChainStatus(session_id=GOLDEN_SID, events=102, legacy_events=102)) == (
        len(list(store.iter_events(GOLDEN_SID))),
        store.check_chain(GOLDEN_SID),
    )
    assert 1 == len(store.list_sessions())
    store.close()
    assert before == path.read_bytes()
    conn = raw(path)
    assert 1 == conn.pragma("user_version")
    conn.close()
