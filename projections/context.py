"""Context building: the active path turned into provider-neutral messages.

Input is the active path, root first, as ``NodeRow`` (``store.read_active_path``) or
``Node`` (:meth:`projections.tree.NodeTree.active_path`); the cost grows with the
path's depth, never with the session's size. The rules:

1. The last ``compaction`` node on the path stands in for everything above it: the
   messages start at that node (its content is the summary).
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
from typing import Protocol

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


def compaction_start(path: Sequence[PathNode]) -> int:
    """Return the index of the last ``compaction`` node on ``path`` (0 when there is none)."""
    for i in range(len(path) - 1, -1, -1):
        if path[i].node_type == "compaction":
            return i
    return 0


def build_context(path: Sequence[PathNode]) -> list[Message]:
    """Return the messages for a model call whose context is ``path`` (root first)."""
    nodes = path[compaction_start(path) :]
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
