"""The active path a store keeps per session, so a conversation's next run reads only
the nodes below the previous run's tip (``read_active_path`` of both backends). Nodes
never change once appended, so the kept rows are what reading them again would return.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from eventlog.records import NodeRow


class PathMemo:
    """The last active path read of a few sessions, each with the ``created_at`` of the
    session it was read from (a session deleted and made again under its id is another
    session). Thread-safe: entries are replaced whole, never changed."""

    #: Sessions whose last path is kept (least recently read dropped first).
    SESSIONS = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: OrderedDict[str, tuple[str, list[NodeRow]]] = OrderedDict()

    def get(self, sid: str, created_at: str) -> list[NodeRow] | None:
        """Return the kept path of ``sid`` (as made at ``created_at``), or None."""
        with self._lock:
            kept = self._paths.get(sid)
            if kept is None or kept[0] != created_at or not kept[1]:
                return None
            self._paths.move_to_end(sid)
            return kept[1]

    def read(
        self, sid: str, created_at: str, walk: Callable[[str | None], list[NodeRow]]
    ) -> list[NodeRow]:
        """Return a path of ``sid`` (made at ``created_at``) with the kept one's help.

        ``walk(stop)`` reads the path up from the node asked for, stopping at the node
        ``stop`` when it meets it (then the first row), else at the root (``stop`` None:
        at the root). When the walk meets the kept tip, the kept path leads to it —
        unless another session was made under this id since (same created_at), whose
        node of that id is not the kept one: then the whole path is read.
        """
        known = self.get(sid, created_at)
        path = walk(known[-1].node_id if known else None)
        if known and path and path[0].node_id == known[-1].node_id:
            path = known + path[1:] if path[0] == known[-1] else walk(None)
        self.keep(sid, created_at, path)
        return list(path)

    def keep(self, sid: str, created_at: str, path: list[NodeRow]) -> None:
        """Keep ``path`` as ``sid``'s last path (the list is not changed afterwards)."""
        with self._lock:
            self._paths[sid] = (created_at, path)
            self._paths.move_to_end(sid)
            while len(self._paths) > self.SESSIONS:
                self._paths.popitem(last=False)
