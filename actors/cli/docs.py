"""The JSON documents of the ``clew`` CLI's read commands (``--json``), one function each.

The shapes are a contract, documented in docs/cli.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from actors.runtime.runtime import Runtime
from actors.tasks.inspect import inspect_wals
from eventlog.blocks import ContentBlock
from eventlog.records import StoredEvent
from projections.tree import NodeTree


def tasks_doc(rt: Runtime, sid: str) -> dict[str, Any]:
    """Return ``clew tasks --json``: every task of every WAL, the latest WAL, all WALs."""
    names = rt.wal_names(sid)
    wals = inspect_wals(rt.session_dir(sid), sid, names, wals=rt.task_wals(sid))
    latest = names[-1] if names else None
    current = next((w for w, _ in wals if w.name == latest), wals[-1][0] if wals else None)
    return {
        "session_id": sid,
        "tasks": [
            {
                "id": t.task_id,
                "status": t.status,
                "deps": list(t.deps),
                "after": list(t.after),
                "title": t.title,
                "owner": t.owner,
                "result_summary": t.result_summary,
                "wal": w.name,
            }
            for w, tasks in wals
            for t in tasks
        ],
        "wal": None if current is None else msgspec.to_builtins(current),
        "wals": [msgspec.to_builtins(w) for w, _ in wals],
    }


def tree_doc(
    sid: str, tree: NodeTree, excerpt: Callable[[list[ContentBlock]], str]
) -> dict[str, Any]:
    """Return ``clew show --json``: every node (flat, node_seq order) and the active path."""
    active = tree.active_path_ids()
    on_path = set(active)
    nodes = [
        {
            "node_id": n.node_id,
            "parent_id": n.parent_id,
            "node_seq": n.node_seq,
            "agent_id": n.agent_id,
            "run_id": n.run_id,
            "role": n.role,
            "node_type": n.node_type,
            "created_at": n.created_at,
            "text": excerpt(n.content),
            "children": tree.children(n.node_id),
            "on_active_path": n.node_id in on_path,
            "token_count": n.token_count,
            # A compaction node: the id range it replaces and the first node it keeps.
            "compacted": n.metadata.get("compacted") if n.node_type == "compaction" else None,
        }
        for n in tree.rows()
    ]
    return {
        "session_id": sid,
        "active_node_id": tree.active_node_id,
        "active_path": active,
        "roots": tree.roots(),
        "branch_points": tree.branch_points(),
        "nodes": nodes,
    }


def event_row(e: StoredEvent) -> dict[str, Any]:
    """Return one event as ``clew export`` / ``timeline --json`` print it."""
    return {
        "seq": e.seq,
        "run_id": e.run_id,
        "run_seq": e.run_seq,
        "event_type": e.event_type,
        "node_id": e.node_id,
        "agent_id": e.agent_id,
        "level": e.level,
        "tool_call_id": e.tool_call_id,
        "event_id": e.event_id,
        "created_at": e.created_at,
        "payload": msgspec.to_builtins(e.event),
    }
