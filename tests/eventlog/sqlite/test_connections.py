"""The store's connections: streaming reads reuse an idle connection of the thread."""

from __future__ import annotations

from pathlib import Path

from eventlog.sqlite.connections import IDLE_STREAMS, Connections


def _connections(tmp_path: Path) -> Connections:
    connections = Connections(tmp_path / "s.sqlite", "normal")
    writer = connections.connect()
    for sql in ("PRAGMA journal_mode=wal", "CREATE TABLE t(a)", "INSERT INTO t VALUES (1), (2)"):
        list(writer.execute(sql))
    writer.close()
    return connections


def test_a_connection_given_back_is_the_next_one_borrowed(tmp_path: Path) -> None:
    connections = _connections(tmp_path)
    first = connections.borrow()
    connections.give_back(first)
    assert first is connections.borrow()
    connections.close()


def test_a_connection_given_back_mid_snapshot_keeps_no_snapshot(tmp_path: Path) -> None:
    connections = _connections(tmp_path)
    conn = connections.borrow()
    conn.execute("BEGIN")
    rows = conn.execute("SELECT a FROM t")
    assert (1,) == next(rows)
    connections.give_back(conn)
    assert not conn.in_transaction
    assert [(1,), (2,)] == list(connections.borrow().execute("SELECT a FROM t"))
    connections.close()


def test_only_a_few_idle_connections_are_kept(tmp_path: Path) -> None:
    connections = _connections(tmp_path)
    borrowed = [connections.borrow() for _ in range(IDLE_STREAMS + 2)]
    for conn in borrowed:
        connections.give_back(conn)
    kept = [connections.borrow() for _ in range(IDLE_STREAMS)]
    assert set(map(id, kept)) <= set(map(id, borrowed))
    assert all(c not in kept for c in borrowed[IDLE_STREAMS:])
    connections.close()
