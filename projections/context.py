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

:class:`ContextMemo` keeps the last build of a growing path, so the next run of a
conversation builds only the nodes appended since (the same messages as a whole build).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeVar

from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    Message,
    ResultPart,
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


def artifact_ids(messages: Iterable[Message]) -> frozenset[str]:
    """Return the ids of the artifacts referenced in ``messages`` (tool results included)."""
    found: set[str] = set()

    def scan(blocks: Iterable[ContentBlock] | Iterable[ResultPart]) -> None:
        for b in blocks:
            if isinstance(b, ArtifactRefBlock):
                found.add(b.artifact_id)
            elif isinstance(b, ToolResultBlock):
                scan(b.content)

    for m in messages:
        scan(m.content)
    return frozenset(found)


class ContextMemo:
    """:func:`build_context` of one conversation's growing path, kept between builds.

    A path that starts with the very rows of the kept one (the same objects: a store's
    kept path hands them out again, ``eventlog.path_memo``) builds only its new nodes,
    appended to the kept messages — unless one of them is a ``compaction`` node, or a
    tool call or result id of theirs is on the kept path (a result pulled forward across
    the two parts, or a retried one): then, as for any other path, the whole path is
    built. Either way the messages equal ``build_context(path)``; the kept ones are the
    same objects from build to build, so an incremental request hasher matches them.
    Not thread-safe.
    """

    def __init__(self) -> None:
        self._path: Sequence[PathNode] = ()
        self._messages: list[Message] = []
        #: Every tool call and tool result id on the kept path.
        self._tool_ids: set[str] = set()

    def build(self, path: Sequence[PathNode]) -> list[Message]:
        """Return ``build_context(path)`` (a new list)."""
        kept = self._path
        n = len(kept)
        if n and len(path) >= n and all(map(operator.is_, kept, path)):
            new = path[n:]
            ids = _tool_ids(new)
            if ids.isdisjoint(self._tool_ids) and all(
                node.node_type != "compaction" for node in new
            ):
                self._messages.extend(build_context(new))
                self._tool_ids |= ids
                self._path = tuple(path)
                return list(self._messages)
        self._messages = build_context(path)
        self._path, self._tool_ids = tuple(path), _tool_ids(path)
        return list(self._messages)


def _tool_ids(nodes: Sequence[PathNode]) -> set[str]:
    """Return the ids of the tool calls and tool results in ``nodes``."""
    ids: set[str] = set()
    for node in nodes:
        for block in node.content:
            if isinstance(block, ToolCallBlock):
                ids.add(block.id)
            elif isinstance(block, ToolResultBlock):
                ids.add(block.tool_call_id)
    return ids
