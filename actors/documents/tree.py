"""The node tree as documents: ``clew show --json`` (every node, flat), the inspector's
tree shape (no content), the excerpts of the nodes a view shows, one node in full, an
artifact's preview, and the points other agents and sessions were forked from.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from actors.documents.excerpts import excerpt
from eventlog.blocks import ArtifactRefBlock, ToolCallBlock, ToolResultBlock
from eventlog.ids import relative
from eventlog.records import NodeRow
from projections.tree import NodeTree

if TYPE_CHECKING:
    from actors.runtime.runtime import Runtime
    from actors.runtime.status import StatusReader

#: The most nodes one excerpts request answers (a page of the tree view).
MAX_EXCERPTS: Final = 500
#: The bytes of an artifact the preview shows.
PREVIEW_BYTES: Final = 64 * 1024


def tree_doc(sid: str, tree: NodeTree) -> dict[str, Any]:
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


def fork_points(rt: Runtime | StatusReader, sid: str) -> dict[str, str]:
    """Return the session's nodes (full ids) another agent or session was forked from,
    and by whom (``agent brain:r1/w1``, ``session sess_…``)."""
    points = {
        a.fork_from_node_id: f"agent {relative(sid, a.agent_id)}"
        for a in rt.store.read_agents(sid)
        if a.fork_from_node_id
    }
    for other in rt.store.list_sessions():
        node = other.metadata.get("fork_from_node_id")
        if other.parent_session_id == sid and isinstance(node, str):
            points[node] = f"session {other.session_id}"
    return points


def _links(rt: Runtime, sid: str) -> list[tuple[str, str | None, str, str, str]]:
    """Every node's (id, parent, agent, role, type): without content when the store can."""
    read = getattr(rt.store, "read_node_links", None)
    if read is not None:
        links: list[tuple[str, str | None, str, str, str]] = read(sid)
        return links
    return [
        (n.node_id, n.parent_id, n.agent_id, n.role, n.node_type) for n in rt.store.read_nodes(sid)
    ]


def tree_shape_doc(rt: Runtime, sid: str) -> dict[str, Any]:
    """Return the tree's shape: every node (node_seq order), the active path, fork points.

    One row per node: ``[id, parent, agent, role, node_type]`` with ids relative to the
    session; no content (the browser asks :func:`excerpts_doc` for the rows it shows),
    so a session of 10⁵ nodes costs one narrow query here.
    """
    row = rt.store.read_session(sid)
    active = [relative(sid, n.node_id) for n in rt.store.read_active_path(sid)]
    forks = {relative(sid, node): by for node, by in fork_points(rt, sid).items()}
    cut = len(sid) + 1
    return {
        "session_id": sid,
        "active_node_id": relative(sid, row.active_node_id) if row.active_node_id else None,
        "active_path": active,
        "forks": forks,
        "nodes": [
            [
                node[cut:] if node.startswith(sid) else node,
                (parent[cut:] if parent.startswith(sid) else parent) if parent else None,
                agent[cut:] if agent.startswith(sid) else agent,
                role,
                node_type,
            ]
            for node, parent, agent, role, node_type in _links(rt, sid)
        ],
    }


def _kinds(row: NodeRow) -> str:
    """Letters saying what a node holds: c tool call, r tool result, a artifact, e error."""
    out = set()
    for b in row.content:
        if isinstance(b, ToolCallBlock):
            out.add("c")
        elif isinstance(b, ToolResultBlock):
            out.add("r")
            if b.is_error:
                out.add("e")
            if any(isinstance(p, ArtifactRefBlock) for p in b.content):
                out.add("a")
        elif isinstance(b, ArtifactRefBlock):
            out.add("a")
    return "".join(sorted(out))


def excerpts_doc(rt: Runtime, sid: str, ids: Iterable[str]) -> dict[str, Any]:
    """Return ``{node: [excerpt, kinds]}`` for the nodes a tree view shows (at most
    :data:`MAX_EXCERPTS`); an unknown id is left out."""
    out: dict[str, Any] = {}
    for short in list(dict.fromkeys(i for i in ids if i))[:MAX_EXCERPTS]:
        row = _read_node(rt, sid, short)
        if row is not None:
            out[short] = [excerpt(row.content), _kinds(row)]
    return {"excerpts": out}


def _read_node(rt: Runtime, sid: str, node_id: str) -> NodeRow | None:
    """Read a node named in full or relative to its session (``brain:r1:n4``)."""
    if not node_id.startswith(f"{sid}:"):
        row = rt.store.read_node(sid, f"{sid}:{node_id}")
        if row is not None:
            return row
    return rt.store.read_node(sid, node_id)


def node_doc(rt: Runtime, sid: str, node_id: str) -> dict[str, Any] | None:
    """Return one node in full: its content blocks, metadata, and artifacts' rows."""
    row = _read_node(rt, sid, node_id)
    if row is None:
        return None
    full = row.node_id
    doc: dict[str, Any] = msgspec.to_builtins(row)
    doc["short"] = relative(sid, row.node_id)
    doc["children"] = [relative(sid, c.node_id) for c in rt.store.read_children(sid, full)]
    refs = {a.artifact_id for a in _artifact_refs(row.content)}
    doc["artifacts"] = [
        msgspec.to_builtins(a) for a in rt.store.read_artifacts(sid) if a.artifact_id in refs
    ]
    return doc


def _artifact_refs(blocks: Iterable[object]) -> Iterable[ArtifactRefBlock]:
    for b in blocks:
        if isinstance(b, ArtifactRefBlock):
            yield b
        elif isinstance(b, ToolResultBlock):
            yield from _artifact_refs(b.content)


def artifact_preview(rt: Runtime, sid: str, artifact_id: str) -> tuple[str, str, int] | None:
    """Return (mime type, the first bytes as text, size) of an artifact; None if unknown."""
    for a in rt.store.read_artifacts(sid):
        if a.artifact_id == artifact_id:
            data = rt.store.artifacts.read_range(a.path, 0, PREVIEW_BYTES)
            text = data.decode("utf-8", errors="replace")
            return a.mime_type or "application/octet-stream", text, a.size_bytes or len(data)
    return None
