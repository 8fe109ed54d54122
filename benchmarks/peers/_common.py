"""What every side of the peer benchmark shares: the workload's text, sizes, timing."""

from __future__ import annotations

import functools
import gc
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "clew",
    "replays",
    "every",
    "event",
]


class Unavailable(Exception):
    """A peer that cannot be imported or run here: reported, never fatal."""


def prose(seed: int, n_bytes: int) -> str:
    """Return deterministic text of about ``n_bytes`` bytes."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n_bytes:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


@functools.cache
def user_text(i: int) -> str:
    """The i-th user message of the conversation workload (~240 bytes)."""
    return f"question {i}: " + prose(i, 220)


@functools.cache
def reply_text(i: int) -> str:
    """The i-th assistant reply of the conversation workload (~480 bytes)."""
    return f"answer {i}: " + prose(10_000 + i, 460)


def disk_bytes(folder: Path) -> int:
    """Return the bytes of every file under ``folder`` (database, WAL, journal, artifacts),
    but the ``-shm`` index SQLite deletes on close."""
    return sum(
        p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.name.endswith("-shm")
    )


def timed(fn: Callable[[], object]) -> float:
    """Run ``fn`` once (a collection first, off the clock); return its seconds."""
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


#: Messages at which the conversation is measured (each turn adds a user message and a reply).
CHECKPOINTS = (100, 200, 400, 800)
#: Turns a checkpoint's "time per turn" is the median of: the last ones before it.
TURN_WINDOW = 10

#: What a case-2 side returns at each checkpoint: (messages, seconds so far, bytes on
#: disk, the median wall seconds and the median process CPU seconds of the last
#: :data:`TURN_WINDOW` turns).
Point = tuple[int, float, int, float, float]


def turn_at(turns: list[float]) -> float:
    """Return the median of the last :data:`TURN_WINDOW` turn times (a turn at this size:
    one slow fsync moves a mean, not a median)."""
    last = sorted(turns[-TURN_WINDOW:])
    return last[len(last) // 2] if last else 0.0


#: One agent turn's asks in a bare pykka loop (the worker turn's events: model requested,
#: model responded, usage, assistant node, tool started, tool finished, tool node).
ASKS_PER_TURN = 7


def settle(folder: Path, *, apsw_files: bool = False) -> None:
    """Fold every SQLite WAL under ``folder`` into its database (``wal_checkpoint(TRUNCATE)``).

    A WAL file keeps its high-water size until a checkpoint, so without this the bytes
    measured would be the WAL's, not the data's. Applied to every system alike.

    ``apsw_files``: the files are open in this process through apsw (clew). They must be
    checkpointed through apsw too: two SQLite libraries in one process do not see each
    other's POSIX locks, and closing the sqlite3 connection would drop apsw's.
    """
    for p in folder.rglob("*"):
        if not p.is_file() or p.name.endswith(("-wal", "-shm", "-journal")):
            continue
        with p.open("rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                continue
        if apsw_files:
            import apsw  # noqa: PLC0415 - only the clew side has it for sure

            aconn = apsw.Connection(str(p))
            aconn.set_busy_timeout(30_000)
            aconn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            aconn.close()
            continue
        conn = sqlite3.connect(p, timeout=30)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            conn.close()
