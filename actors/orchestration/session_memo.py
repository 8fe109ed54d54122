"""What a session's main runs keep from one run to the next, in this process.

A conversation's next run starts from the previous run's path: its context, the artifact
ids that context holds and the request hashes of its roles are the previous run's plus
a few messages. The :class:`~actors.runtime.engine.Engine` keeps one
:class:`SessionMemo` per recent session and hands it to a live run's environment, so a
turn costs the same at 800 messages as at 100 (docs/performance.md). Nothing in it is
ever trusted without a check that makes the result what building it afresh gives:

- the context (:class:`~projections.context.ContextMemo`) is reused only for a path that
  starts with the very rows built last time (the store's kept path hands them out again);
  a fork, a switch of the active node, a compaction or a new store handle builds anew;
- the request hashers (:class:`~actors.models.protocol.RequestHasher`) match messages by
  identity and go on from the state after the last match: the hash is
  ``request_hash``'s, byte for byte, whatever the run sends;
- the artifact ids go on from the kept messages only while the context's list starts
  with the same objects.

Replay and recovery read the same: a memo changes no recorded byte, only what is
computed again. A lock makes two runs of one session (a replay beside a live run)
safe: each use holds it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from actors.models.protocol import ModelRequest, RequestHasher
from eventlog.blocks import Message
from projections.context import ContextMemo, PathNode, artifact_ids


class SessionMemo:
    """One session's context, artifact ids and role hashers, kept between its runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._context = ContextMemo()
        self._hashers: dict[str, RequestHasher] = {}
        #: The messages last scanned for artifact ids: how many, the last one, the ids.
        self._scan: tuple[int, Message | None, frozenset[str]] = (0, None, frozenset())

    def history(self, path: Sequence[PathNode]) -> tuple[list[Message], frozenset[str]]:
        """Return ``build_context(path)`` and the ids of the artifacts it references."""
        with self._lock:
            messages = self._context.build(path)
            count, last, found = self._scan
            if not (count and len(messages) >= count and messages[count - 1] is last):
                count, found = 0, frozenset()
            if len(messages) > count:
                found = found | artifact_ids(messages[count:])
            self._scan = (len(messages), messages[-1] if messages else None, found)
            return messages, found

    def request_hash(self, request: ModelRequest) -> str:
        """Return ``request_hash(request)``, incrementally per role across the runs."""
        with self._lock:
            hasher = self._hashers.get(request.role)
            if hasher is None:
                hasher = self._hashers[request.role] = RequestHasher()
            return hasher.hash(request)
