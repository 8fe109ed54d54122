"""Seams for time and identity, and the rules for ids.

Every timestamp and every id that ends up in an event comes through here, so a
replay can reproduce them: ids are *derived* (session id + agent path + a
per-scope counter), never drawn from a random generator at the point of use.
The only random part, the 4-hex suffix of a new session id, is recorded in the
``session_created`` event (the session id *is* the record).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import secrets
import threading
from typing import Protocol

from eventlog.errors import InvalidSessionId

SESSION_ID_RE = re.compile(r"^[a-zA-Z0-9_]+$")
# Long enough for any id clew generates (~26 chars) plus user-chosen prefixes; short
# enough that ``events_<sid>`` stays a sane identifier.
MAX_SESSION_ID_LEN = 128


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is safe to put into a table name, else raise.

    Raises:
        InvalidSessionId: not a str, empty, too long, or any char outside ``[a-zA-Z0-9_]``.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InvalidSessionId(f"invalid session id {session_id!r}: must be a non-empty string")
    if len(session_id) > MAX_SESSION_ID_LEN:
        raise InvalidSessionId(
            f"invalid session id {session_id[:40]!r}…: longer than {MAX_SESSION_ID_LEN} characters"
        )
    if not SESSION_ID_RE.fullmatch(session_id):
        raise InvalidSessionId(
            f"invalid session id {session_id!r}: only letters, digits and '_' are allowed"
        )
    return session_id


class Clock(Protocol):
    """Source of wall-clock timestamps written into events."""

    def now(self) -> str:
        """Return the current time as an ISO-8601 UTC string with microseconds."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> str:
        return _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds")


class ManualClock:
    """A deterministic clock for tests: starts at ``start`` and ticks ``step_us`` per call."""

    def __init__(self, start: str = "2026-01-01T00:00:00+00:00", step_us: int = 1000) -> None:
        self._t = _dt.datetime.fromisoformat(start)
        self._step = _dt.timedelta(microseconds=step_us)
        self._lock = threading.Lock()

    def now(self) -> str:
        with self._lock:
            self._t += self._step
            return self._t.isoformat(timespec="microseconds")


class IdSource(Protocol):
    """Source of ids. ``next_id`` must be deterministic given the call sequence per scope."""

    def new_session_id(self, now: str) -> str:
        """Return a fresh session id like ``sess_20260612_153022_a1b2`` for time ``now``."""
        ...

    def next_id(self, scope: str, kind: str) -> str:
        """Return the next id of ``kind`` inside ``scope`` (e.g. scope=agent id, kind='n')."""
        ...


class DerivedIds:
    """Ids derived from a scope and a per-(scope, kind) counter: ``<scope>:<kind><n>``.

    A scope is owned by exactly one actor (an agent or a run), so the counter
    sequence is that actor's program order — identical in a replay. The lock
    only protects the dict against actors of *different* scopes.
    """

    def __init__(self, suffix: str | None = None) -> None:
        self._counters: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._suffix = suffix

    def new_session_id(self, now: str) -> str:
        t = _dt.datetime.fromisoformat(now)
        suffix = self._suffix if self._suffix is not None else secrets.token_hex(2)
        return f"sess_{t:%Y%m%d_%H%M%S}_{suffix}"

    def next_id(self, scope: str, kind: str) -> str:
        with self._lock:
            n = self._counters.get((scope, kind), 0) + 1
            self._counters[(scope, kind)] = n
        return f"{scope}:{kind}{n}"


def stable_hash(data: bytes, length: int = 16) -> str:
    """Return a short, stable hex digest (sha256) — for request hashes and artifact ids."""
    return hashlib.sha256(data).hexdigest()[:length]


def seed_for(run_id: str) -> int:
    """Derive the RNG seed of a run from its id (recorded in ``run_started``)."""
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big")
