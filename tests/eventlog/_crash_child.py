"""Crash-test child: append through the Writer forever, print each committed event's seq.

Usage: ``python tests/eventlog/_crash_child.py <db> <tag>``. The parent reads stdout and
SIGKILLs this process at a moment of its choosing. A line is printed (and flushed) only
after the event's future resolved, i.e. after its transaction committed — so every
printed seq must be in the file after the kill.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from eventlog.blocks import TextBlock
from eventlog.events import Node, NodeAppended, SessionCreated, TodoUpdated
from eventlog.records import AppendRequest, StoredEvent
from eventlog.sqlite import SQLiteStore
from eventlog.writer import Writer

SID = "sess_crash"
PRODUCERS = 4
OUTSTANDING = 64

_print_lock = threading.Lock()


def _report(stored: list[StoredEvent]) -> None:
    with _print_lock:
        sys.stdout.write("".join(f"{e.seq}\n" for e in stored))
        sys.stdout.flush()


def _produce(writer: Writer, tag: str, p: int) -> None:
    run_id = f"{tag}_run{p}"
    parent: str | None = None
    i = 0
    while True:
        futures = []
        for _ in range(OUTSTANDING):
            i += 1
            if i % 2:
                node_id = f"{tag}_p{p}_n{i}"
                node = Node(
                    node_id=node_id,
                    parent_id=parent,
                    agent_id=f"a{p}",
                    run_id=run_id,
                    role="user",
                    content=[TextBlock(text="x" * 200)],
                )
                event: NodeAppended | TodoUpdated = NodeAppended(node=node, activate=True)
                parent = node_id
            else:
                event = TodoUpdated(todo_id=f"t{p}", status="running", note=str(i))
            futures.append(
                writer.submit(
                    AppendRequest(
                        session_id=SID,
                        event=event,
                        created_at=f"t{i}",
                        agent_id=f"a{p}",
                        run_id=run_id,
                    )
                )
            )
        for f in futures:
            _report(f.get(timeout=60))


def main() -> None:
    db, tag = Path(sys.argv[1]), sys.argv[2]
    store = SQLiteStore(db, durability="normal")
    writer = Writer(store)
    if not store.session_exists(SID):
        writer.append(
            AppendRequest(
                session_id=SID,
                event=SessionCreated(session_id=SID, cwd="/", root_agent_id="a0"),
                created_at="t0",
            )
        )
    threads = [
        threading.Thread(target=_produce, args=(writer, tag, p), daemon=True)
        for p in range(PRODUCERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
