from pathlib import Path

from eventlog.sqlite import SQLiteStore
from eventlog.store import EventStore


def test_the_sqlite_store_implements_the_event_store_contract(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    assert isinstance(store, EventStore)
    store.close()
