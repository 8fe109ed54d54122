"""Context building: the active path turned into provider-neutral messages.

Input is the active path, root first, as ``NodeRow`` (``store.read_active_path``) or
``Node`` (:meth:`projections.tree.NodeTree.active_path`); the cost grows with the
path's depth, never with the session's size. The rules:

1. The last ``compaction`` node on the path stands in for what it summarises: its
   message (the summary) comes first. Without ``metadata.compacted.kept_from`` it
   replaces everything above it; with it, the path from that node up to the
   compaction node (the kept tail, verbatim) follows the summary, then whatever came
   after the compaction node. Nothing is deleted: the tree keeps every node
   (docs/context.md).
2. Each node becomes one message with the node's role and its content blocks,
   whatever its ``node_type`` (skill/memory context, plan/task instructions, child
   results and notes are context too). Nodes with no content are skipped.
3. Tool pairs stay together: right after an assistant message with ``tool_call``
   blocks comes one ``tool`` message holding their ``tool_result`` blocks, in call
   order, wherever on the path those results were recorded. A call whose result is
   not on the path gets an ``is_error`` result saying so (providers reject an
   unanswered call); a result whose call is not on the path (cut off by a compaction)
   is dropped (providers reject an orphan result too).
4. ``artifact_ref`` blocks stay references with their summary; nothing is inlined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from eventlog.blocks import (
    ContentBlock,
    Message,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

MISSING_RESULT_TEXT = "no result was recorded for this tool call"


class PathNode(Protocol):
    """What context building reads from a node: ``Node`` and ``NodeRow`` both fit."""

    @property
    def role(self) -> str: ...

    @property
    def node_type(self) -> str: ...

    @property
    def content(self) -> list[ContentBlock]: ...

    @property
    def node_id(self) -> str: ...

    @property
    def metadata(self) -> dict[str, Any]: ...


def compaction_start(path: Sequence[PathNode]) -> int:
    """Return the index of the last ``compaction`` node on ``path`` (0 when there is none)."""
    for i in range(len(path) - 1, -1, -1):
        if path[i].node_type == "compaction":
            return i
    return 0


N = TypeVar("N", bound=PathNode)


def kept_from(node: PathNode) -> str | None:
    """Return the first node of the tail a compaction node keeps verbatim, if any."""
    compacted = node.metadata.get("compacted") if node.node_type == "compaction" else None
    first = compacted.get("kept_from") if isinstance(compacted, dict) else None
    return first if isinstance(first, str) else None


def context_nodes(path: Sequence[N]) -> list[N]:
    """Return the nodes of ``path`` a model call sees, in order (rule 1 applied)."""
    start = compaction_start(path)
    keep = kept_from(path[start]) if path else None
    if keep is not None:
        for j in range(start - 1, -1, -1):
            if path[j].node_id == keep:
                return [path[start], *path[j:start], *path[start + 1 :]]
    return list(path[start:])


def build_context(path: Sequence[PathNode]) -> list[Message]:
    """Return the messages for a model call whose context is ``path`` (root first)."""
    nodes = context_nodes(path)
    # Index results by call id first, so a call can pull its result forward. A result
    # recorded twice (a retried tool) counts once: the last one wins.
    results: dict[str, ToolResultBlock] = {}
    for node in nodes:
        for block in node.content:
            if isinstance(block, ToolResultBlock):
                results[block.tool_call_id] = block
    out: list[Message] = []
    for node in nodes:
        role: Role = node.role  # type: ignore[assignment]
        kept: list[ContentBlock] = [b for b in node.content if not isinstance(b, ToolResultBlock)]
        if kept:
            out.append(Message(role=role, content=kept))
        calls = [b for b in kept if isinstance(b, ToolCallBlock)] if role == "assistant" else []
        if calls:
            out.append(Message(role="tool", content=[_result_for(c, results) for c in calls]))
    return out


def _result_for(call: ToolCallBlock, results: dict[str, ToolResultBlock]) -> ContentBlock:
    found = results.pop(call.id, None)
    if found is not None:
        return found
    return ToolResultBlock(
        tool_call_id=call.id,
        name=call.name,
        content=[TextBlock(text=MISSING_RESULT_TEXT)],
        is_error=True,
    )
