"""A writer process: appends batches of todo events, run ``r<n>``, to one session."""

from __future__ import annotations

import sys

from eventlog.errors import ClewError
from eventlog.events import TodoUpdated
from eventlog.postgres import PostgresStore
from eventlog.records import AppendRequest


def main(url: str, sid: str, n: int, batches: int, per_batch: int) -> None:
    store = PostgresStore(url)
    k = 0
    for _ in range(batches):
        requests = []
        for _ in range(per_batch):
            event = TodoUpdated(todo_id="t", status="running", note=f"{n}-{k}")
            requests.append(
                AppendRequest(
                    session_id=sid, event=event, created_at="2026-01-01T00:00:00+00:00",
                    agent_id="a1", run_id=f"r{n}",
                )
            )  # fmt: skip
            k += 1
        for result in store.append_batch(requests):
            if isinstance(result, ClewError):
                raise result
    store.close()


if __name__ == "__main__":
    url, sid, n, batches, per_batch = sys.argv[1:6]
    main(url, sid, int(n), int(batches), int(per_batch))
