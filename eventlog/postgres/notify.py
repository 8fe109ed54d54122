"""Wake-ups on commit: ``LISTEN clew_events`` for followers in any process, on any host.

Every append batch sends ``NOTIFY clew_events, '<session_id> <last_seq>'`` per session it
touched, inside its transaction (:mod:`eventlog.postgres.append`): PostgreSQL delivers it
when, and only if, the batch commits. A :class:`CommitWaiter` holds one connection that
listens, and :meth:`CommitWaiter.wait` returns as soon as a batch of *its* session commits
past the seq the follower has read — instead of the follower sleeping out its poll
interval. The follower still reads from the table (a notification is a wake-up, not
data), so a notification lost to a reconnect costs at most one poll interval.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from eventlog.postgres.append import CHANNEL
from eventlog.postgres.connections import redact, translate_errors


class CommitWaiter:
    """Wait for the next committed batch of one session (a listening connection)."""

    def __init__(self, url: str, session_id: str) -> None:
        self._sid = session_id
        with translate_errors(f"listening on {redact(url)}"):
            self._conn: psycopg.Connection[Any] = psycopg.connect(url, autocommit=True)
            self._conn.execute(f"LISTEN {CHANNEL}")

    def wait(self, after_seq: int, timeout: float) -> bool:
        """Block until a batch of the session commits past ``after_seq``, or ``timeout`` s.

        Returns:
            True when woken by such a commit, False on timeout.
        """
        deadline = time.monotonic() + timeout
        with translate_errors("waiting for a commit"):
            while (left := deadline - time.monotonic()) > 0:
                for note in self._conn.notifies(timeout=left):
                    sid, _, seq = note.payload.partition(" ")
                    if sid == self._sid and seq.isdigit() and int(seq) > after_seq:
                        return True
        return False

    def close(self) -> None:
        """Stop listening and close the connection."""
        self._conn.close()
