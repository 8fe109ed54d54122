"""The one transaction context manager and the apsw → ``StoreError`` translation table."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from eventlog.errors import ClewError, InvalidSessionId, StoreError
from eventlog.sqlite import translate_errors
from eventlog.sqlite.transaction import Transaction
from tests.eventlog.sqlite._files import raw

#: (raised, the start of the sentence it becomes when raised while doing "op").
TRANSLATION_TABLE: list[tuple[BaseException, str]] = [
    (apsw.ConstraintError("UNIQUE constraint failed"), "op: constraint violated"),
    (apsw.BusyError("database is locked"), "op: database is locked by another writer"),
    (apsw.CorruptError("malformed"), "op: database file is corrupt"),
    (apsw.NotADBError("file is not a database"), "op: database file is corrupt"),
    (apsw.CantOpenError("unable to open"), "op: cannot open or write the database"),
    (apsw.PermissionsError("denied"), "op: cannot open or write the database"),
    (apsw.ReadOnlyError("readonly"), "op: cannot open or write the database"),
    (apsw.FullError("disk full"), "op: disk full"),
    (apsw.SQLError("no such table: x"), "op: SQLError: no such table: x"),
    (apsw.IOError("disk I/O error"), "op: IOError: disk I/O error"),
    (FileNotFoundError(2, "No such file or directory"), "op: No such file or directory"),
]


def _error_id(value: object) -> str | None:
    return type(value).__name__ if isinstance(value, BaseException) else None


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    c = raw(tmp_path / "t.sqlite")
    c.execute("CREATE TABLE t (x INTEGER UNIQUE)")
    yield c
    c.close()


def _rows(conn: apsw.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")]


# --- the translation table -----------------------------------------------------------------


@pytest.mark.parametrize(("raised", "expected"), TRANSLATION_TABLE, ids=_error_id)
def test_apsw_and_os_errors_become_one_store_error_sentence(
    raised: BaseException, expected: str
) -> None:
    with pytest.raises(StoreError) as info, translate_errors("op"):
        raise raised
    assert str(info.value).startswith(expected)
    assert raised is info.value.__cause__


@pytest.mark.parametrize(("raised", "expected"), TRANSLATION_TABLE, ids=_error_id)
def test_a_transaction_rolls_back_then_raises_the_same_sentence(
    conn: apsw.Connection, raised: BaseException, expected: str
) -> None:
    with pytest.raises(StoreError) as info, Transaction(conn, "op"):
        conn.execute("INSERT INTO t VALUES (1)")
        raise raised
    assert str(info.value).startswith(expected)
    assert raised is info.value.__cause__
    assert ([], True) == (_rows(conn), conn.getautocommit())


@pytest.mark.parametrize("error", [InvalidSessionId("bad"), StoreError("mine")])
def test_clew_errors_pass_through_translation_unchanged(error: ClewError) -> None:
    with pytest.raises(type(error)) as info, translate_errors("op"):
        raise error
    assert error is info.value


def test_other_exceptions_are_not_translated() -> None:
    with pytest.raises(KeyError), translate_errors("op"):
        raise KeyError("bug")


# --- the transaction -------------------------------------------------------------------------


def test_a_transaction_commits_when_its_body_returns(conn: apsw.Connection) -> None:
    with Transaction(conn, "op") as txn:
        conn.execute("INSERT INTO t VALUES (1)")
        assert not conn.getautocommit()
    assert ([1], True, True) == (_rows(conn), conn.getautocommit(), txn.began)


def test_a_constraint_violation_in_the_body_rolls_back_everything(conn: apsw.Connection) -> None:
    with pytest.raises(StoreError, match=r"^op: constraint violated"), Transaction(conn, "op"):
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("INSERT INTO t VALUES (1)")
    assert [] == _rows(conn)


@pytest.mark.parametrize("error", [StoreError("mine"), KeyError("bug"), KeyboardInterrupt()])
def test_any_other_exception_propagates_unchanged_after_the_rollback(
    conn: apsw.Connection, error: BaseException
) -> None:
    with pytest.raises(type(error)) as info, Transaction(conn, "op"):
        conn.execute("INSERT INTO t VALUES (1)")
        raise error
    assert error is info.value
    assert ([], True) == (_rows(conn), conn.getautocommit())


def test_a_begin_that_fails_is_translated_and_runs_nothing(
    conn: apsw.Connection, tmp_path: Path
) -> None:
    other = raw(tmp_path / "t.sqlite")
    other.execute("BEGIN IMMEDIATE")  # holds the write lock; conn does not wait for it
    txn = Transaction(conn, "op")
    with pytest.raises(StoreError, match=r"^beginning op: database is locked"), txn:
        raise AssertionError("the body must not run")
    other.execute("ROLLBACK")
    other.close()
    assert (False, True) == (txn.began, conn.getautocommit())


def test_a_commit_that_fails_is_rolled_back_and_translated(conn: apsw.Connection) -> None:
    conn.pragma("foreign_keys", True)
    conn.execute("CREATE TABLE child (p INTEGER REFERENCES t(x) DEFERRABLE INITIALLY DEFERRED)")
    # A deferred foreign key is checked at COMMIT: the commit itself fails.
    with (
        pytest.raises(StoreError, match=r"^committing op: constraint violated"),
        Transaction(conn, "op"),
    ):
        conn.execute("INSERT INTO child VALUES (7)")
    assert ([], True) == (list(conn.execute("SELECT p FROM child")), conn.getautocommit())


# --- savepoints ------------------------------------------------------------------------------


def test_a_failed_savepoint_undoes_only_its_own_work(conn: apsw.Connection) -> None:
    with Transaction(conn, "op") as txn:
        conn.execute("INSERT INTO t VALUES (1)")
        with (
            pytest.raises(StoreError, match=r"^one row: constraint violated"),
            txn.savepoint("one row"),
        ):
            conn.execute("INSERT INTO t VALUES (2)")
            conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("INSERT INTO t VALUES (3)")
    assert [1, 3] == _rows(conn)


def test_savepoints_nest_and_an_inner_failure_keeps_the_outer_work(
    conn: apsw.Connection,
) -> None:
    with Transaction(conn, "op") as txn, txn.savepoint():
        conn.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(KeyError), txn.savepoint():
            conn.execute("INSERT INTO t VALUES (2)")
            raise KeyError("bug")
    assert [1] == _rows(conn)
