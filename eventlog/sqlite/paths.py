"""The SQL that walks a session's node tree up from a node (``SQLiteReads.read_active_path``,
with :class:`eventlog.path_memo.PathMemo`)."""

from __future__ import annotations


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
