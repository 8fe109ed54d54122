"""A writer process on a PostgreSQL store: for each line ``N`` read from stdin, append N
todo events to the session in one batch, then print ``ok`` (the batch is committed)."""

from __future__ import annotations

import sys

from eventlog.errors import ClewError
from eventlog.events import TodoUpdated
from eventlog.postgres import PostgresStore
from eventlog.records import AppendRequest


def main(url: str, sid: str) -> None:
    store = PostgresStore(url)
    for line in sys.stdin:
        requests = [
            AppendRequest(
                session_id=sid,
                event=TodoUpdated(todo_id="t", status="running", note=str(i)),
                created_at="2026-01-01T00:00:00+00:00",
            )
            for i in range(int(line))
        ]
        for result in store.append_batch(requests):
            if isinstance(result, ClewError):
                raise result
        print("ok", flush=True)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
