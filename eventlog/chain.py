"""The hash chain over each session's events: what makes the log tamper-evident.

Neutral: both backends hash the same values the same way (SQLite's ``events_<sid>``,
PostgreSQL's ``events``; the writer's :func:`link`, the readers' :class:`ChainWalk`).

Each event row carries ``hash``, the lowercase hex of::

    sha256(previous row's hash  +  JSON array of this row's stored values)

where the array is ``[event_id, seq, run_seq, agent_id, run_id, level, event_type,
node_id, tool_call_id, payload_json, created_at]`` exactly as stored (msgspec's compact
JSON), and the previous hash of a session's first row is the empty string. The writer
computes it inside the append transaction; ``sessions.chain_head`` holds the hash of the
session's last row, updated in the same transaction, so removing the newest rows is
seen too.

Rows written before clew hashed events (schema version 1) are *legacy*: the migration
sets ``sessions.chain_from`` to the seq after a session's last row, and rows below it
carry no hash. They still feed the running digest, so the first chained row seals the
legacy rows as they were when it was written. A row at or after ``chain_from`` must
carry its hash. What this does not cover (no secret key: anyone who can write the file
can recompute every hash) is written down in ``docs/replay-and-recovery.md``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from eventlog.errors import IntegrityError
from eventlog.records import ChainStatus

#: The stored columns of ``events_<sid>``, in table order, that the hash covers.
EVENT_COLUMNS = (
    "event_id, seq, run_seq, agent_id, run_id, level, event_type, node_id, tool_call_id,"
    " payload_json, created_at"
)
#: The "previous hash" of a session's first row.
GENESIS = ""

_encode = msgspec.json.Encoder().encode
_sha256 = hashlib.sha256


def link(prev: str, row: Sequence[Any]) -> str:
    """Return the hash of ``row`` (the stored values of :data:`EVENT_COLUMNS`) after ``prev``."""
    return _sha256(prev.encode() + _encode(row)).hexdigest()


class ChainWalk:
    """Follow one session's chain row by row, in seq order; raise at the first break.

    ``chain_from`` None means the file predates the chain (read-only on schema
    version 1): nothing can be checked, every row is legacy.
    """

    __slots__ = ("chain_from", "digest", "events", "head", "last_seq", "legacy", "sid")

    def __init__(self, sid: str, chain_from: int | None, head: str | None) -> None:
        self.sid = sid
        self.chain_from = chain_from
        self.head = head
        self.digest = GENESIS
        self.events = 0
        self.legacy = 0
        self.last_seq = 0

    def step(self, row: Sequence[Any], stored: str | None) -> None:
        """Check one row (the values of :data:`EVENT_COLUMNS`) and its stored hash.

        Raises:
            IntegrityError: the row's hash does not follow from it and the rows before it.
        """
        seq = row[1]
        self.events += 1
        self.last_seq = seq
        chain_from = self.chain_from
        if chain_from is None:
            self.legacy += 1
            return
        digest = self.digest = link(self.digest, row)
        if stored is None:
            if seq >= chain_from:
                raise IntegrityError(
                    f"session {self.sid}: event seq {seq} has no hash, though the hash chain"
                    f" covers every event from seq {chain_from}"
                )
            self.legacy += 1
        elif stored != digest:
            raise IntegrityError(
                f"session {self.sid}: the hash chain breaks at seq {seq}: this event or one"
                " before it was changed, removed or moved"
            )
        elif seq < chain_from:
            raise IntegrityError(
                f"session {self.sid}: event seq {seq} is chained, though the session's chain"
                f" is said to start at seq {chain_from} (sessions.chain_from was changed)"
            )

    def fast_from(self) -> int | float:
        """Return the first seq from which a reader may check rows inline (:meth:`settle`).

        From there a row is sound exactly when its stored hash equals the running digest;
        any other row (a legacy one, a missing or wrong hash, or every row of a file
        without the chain: ``inf``) goes through :meth:`step`.
        """
        return float("inf") if self.chain_from is None else max(self.chain_from, 1)

    def slow_step(self, row: Sequence[Any], stored: str | None, digest: str, count: int) -> str:
        """Check ``row`` with :meth:`step`, after ``count`` rows whose running digest was
        ``digest`` checked inline by the reader; return the digest after it.

        Raises:
            IntegrityError: as :meth:`step`.
        """
        self.digest, self.events, self.last_seq = digest, count, 0
        self.step(row, stored)
        return self.digest

    def settle(self, digest: str, count: int, last_seq: int) -> ChainStatus:
        """Take the state of a reader that walked ``count`` rows (the last ``last_seq``)
        inline, ending with ``digest``; then :meth:`finish`."""
        self.digest, self.events, self.last_seq = digest, count, last_seq
        return self.finish()

    def finish(self) -> ChainStatus:
        """Check the chain head against the last row; return what was walked.

        Raises:
            IntegrityError: the head does not match (the newest events were removed).
        """
        if self.chain_from is not None:
            chained = self.events > self.legacy
            if (self.head != self.digest) if chained else (self.head is not None):
                last = f"its last event (seq {self.last_seq})" if self.events else "no event"
                raise IntegrityError(
                    f"session {self.sid}: the hash chain head does not match {last}:"
                    " newer events were removed or the head was changed"
                )
        return ChainStatus(session_id=self.sid, events=self.events, legacy_events=self.legacy)


def follow_chain(walk: ChainWalk, rows: Iterable[Sequence[Any]]) -> ChainStatus:
    """Walk ``rows`` (the values of :data:`EVENT_COLUMNS`, then the stored hash) with
    ``walk``, checking each row inline and only a row that does not pass with
    :meth:`ChainWalk.step`; return :meth:`ChainWalk.finish`'s status.

    Raises:
        IntegrityError: as :meth:`ChainWalk.step` and :meth:`ChainWalk.finish`.
    """
    fast_from = walk.fast_from()
    prev, digest, count, seq = b"", GENESIS, 0, 0
    for row in rows:
        values, stored = row[:-1], row[-1]
        digest = _sha256(prev + _encode(values)).hexdigest()
        seq = values[1]
        if digest != stored or seq < fast_from:
            digest = walk.slow_step(values, stored, prev.decode(), count)
        prev = digest.encode()
        count += 1
    return walk.settle(digest, count, seq)
