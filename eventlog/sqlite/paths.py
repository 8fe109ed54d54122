"""The active path of a session's node tree: the SQL that walks it up, and the path a
store keeps per session so a conversation's next run reads only its new nodes
(``SQLiteReads.read_active_path``)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from eventlog.records import NodeRow


def path_sql(sid: str, columns: str, join: str) -> str:
    """Return the query of the path root → ``?`` (the first parameter), as ``columns`` of
    ``nodes_<sid> n`` and ``join``, root first: a recursive walk up the parent links
    (one key lookup a node) that stops at the node named by the second parameter when it
    meets it (NULL: at the root), which is then the first row."""
    return f"""WITH RECURSIVE path(node_id, depth) AS (
            SELECT ?, 0
            UNION ALL
            SELECT n.parent_id, path.depth + 1 FROM nodes_{sid} n
            JOIN path ON n.node_id = path.node_id
            WHERE n.parent_id IS NOT NULL AND path.depth < 1000000
                AND path.node_id IS NOT ?
        )
        SELECT {columns} FROM path JOIN nodes_{sid} n ON n.node_id = path.node_id
        {join} ORDER BY path.depth DESC"""


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

    def keep(self, sid: str, created_at: str, path: list[NodeRow]) -> None:
        """Keep ``path`` as ``sid``'s last path (the list is not changed afterwards)."""
        with self._lock:
            self._paths[sid] = (created_at, path)
            self._paths.move_to_end(sid)
            while len(self._paths) > self.SESSIONS:
                self._paths.popitem(last=False)
