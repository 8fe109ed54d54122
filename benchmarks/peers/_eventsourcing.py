"""eventsourcing (SQLite) side: an aggregate whose events are the conversation's messages.

Its SQLite recorder uses WAL and the library default ``synchronous`` (FULL here: Python's
sqlite3 is built with DEFAULT_SYNCHRONOUS=2 and DEFAULT_WAL_SYNCHRONOUS=2; run.py checks).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from _common import Point, Unavailable, disk_bytes, reply_text, settle, turn_at, user_text

NAME = "eventsourcing"

try:
    from eventsourcing.application import Application
    from eventsourcing.domain import Aggregate, event
except ImportError as e:  # pragma: no cover - the optional extra is not installed
    raise Unavailable(f"eventsourcing: {e}") from e


class Conversation(Aggregate):
    """A conversation: one event per message (role, text)."""

    @event("Started")
    def __init__(self) -> None:
        self.count = 0

    @event("MessageAdded")
    def add(self, role: str, text: str) -> None:
        self.count += 1


def open_app(folder: Path) -> Application:
    folder.mkdir(parents=True, exist_ok=True)
    return Application(
        env={
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(folder / "es.sqlite"),
            "IS_SNAPSHOTTING_ENABLED": "n",
        }
    )


class EsSteps:
    """Case 1: one durable step = one aggregate event saved (one commit)."""

    def __init__(self, folder: Path) -> None:
        self.app = open_app(folder)
        self.conv = Conversation()
        self.app.save(self.conv)

    def step(self, i: int) -> None:
        self.conv.add("user" if i % 2 else "assistant", user_text(i))
        self.app.save(self.conv)

    def close(self) -> None:
        self.app.close()


def conversation(folder: Path, checkpoints: tuple[int, ...]) -> list[Point]:
    """Case 2: per turn, the user message and the reply saved together (one commit)."""
    app = open_app(folder)
    conv = Conversation()
    app.save(conv)
    out: list[Point] = []
    turns: list[float] = []
    cpu: list[float] = []
    elapsed = 0.0
    for t in range(max(checkpoints) // 2):
        t0 = time.perf_counter()
        c0 = time.process_time()
        conv.add("user", user_text(t))
        conv.add("assistant", reply_text(t))
        app.save(conv)
        turns.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        elapsed += turns[-1]
        if 2 * (t + 1) in checkpoints:
            settle(folder)
            out.append((2 * (t + 1), elapsed, disk_bytes(folder), turn_at(turns), turn_at(cpu)))
    (folder / "aggregate_id").write_text(str(conv.id))
    app.close()
    return out


def write_events(folder: Path, n: int, payload: str) -> Any:
    """Case 3 setup: one aggregate of ``n`` events, saved 1,000 at a time."""
    app = open_app(folder)
    conv = Conversation()
    for i in range(n - 1):
        conv.add("user", payload)
        if i % 1000 == 999:
            app.save(conv)
    app.save(conv)
    app.close()
    return conv.id


def reader(folder: Path, aggregate_id: Any) -> tuple[Any, Any]:
    """Case 3: (read, close): ``read`` rebuilds the aggregate from all its events (the
    repository's read + fold) on an application opened once."""
    app = open_app(folder)
    return (lambda: int(app.repository.get(aggregate_id).version)), app.close


READY_SCRIPT = """
import sys, uuid
from eventsourcing.application import Application
app = Application(env={"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                       "SQLITE_DBNAME": sys.argv[1], "IS_SNAPSHOTTING_ENABLED": "n"})
sys.path.insert(0, sys.argv[3])
import _eventsourcing
conv = app.repository.get(uuid.UUID(sys.argv[2]))
print("ready", conv.version)
"""


def ready_argv(folder: Path) -> list[str]:
    """Case 5: start, open the store, rebuild the conversation's aggregate."""
    agg = (folder / "aggregate_id").read_text()
    here = str(Path(__file__).parent)
    return [sys.executable, "-c", READY_SCRIPT, str(folder / "es.sqlite"), agg, here]
