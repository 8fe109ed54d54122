"""ContextMemo: a path built on the kept one gives build_context's messages, always."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import Node
from projections.context import ContextMemo, artifact_ids, build_context

# A small pool of tool call ids, so calls and results meet across runs (and repeat).
_call_ids = st.sampled_from(["c1", "c2", "c3"])
_blocks = st.one_of(
    st.builds(TextBlock, text=st.sampled_from(["a", "b", ""])),
    st.builds(ToolCallBlock, id=_call_ids, name=st.just("read"), arguments=st.just({})),
    st.builds(
        ToolResultBlock,
        tool_call_id=_call_ids,
        name=st.just("read"),
        content=st.lists(
            st.builds(ArtifactRefBlock, artifact_id=st.sampled_from(["x", "y"])), max_size=1
        ),
    ),
)
_new_node = st.tuples(
    st.sampled_from(["user", "assistant", "tool", "system"]),
    st.sampled_from(["message", "message", "message", "compaction"]),
    st.lists(_blocks, max_size=3),
    st.booleans(),  # a compaction keeps a tail
)
# One step between two builds: a run appends nodes; a switch or fork goes on from an
# earlier node; a new store handle reads equal rows, not the same ones.
steps = st.one_of(
    st.tuples(st.just("append"), st.lists(_new_node, max_size=4)),
    st.tuples(st.just("branch"), st.tuples(st.integers(0, 8), st.lists(_new_node, max_size=3))),
    st.tuples(st.just("reread"), st.none()),
)


def _append(path: list[Node], new: list[tuple[str, str, list[ContentBlock], bool]]) -> list[Node]:
    out = list(path)
    for role, node_type, content, keeps in new:
        metadata: dict[str, Any] = {}
        if node_type == "compaction" and keeps and out:
            metadata = {"compacted": {"kept_from": out[len(out) // 2].node_id}}
        out.append(
            Node(
                node_id=f"n{len(out)}_{len(content)}_{id(content)}",
                parent_id=out[-1].node_id if out else None,
                agent_id="a",
                role=role,  # type: ignore[arg-type]
                node_type=node_type,  # type: ignore[arg-type]
                content=content,
                metadata=metadata,
            )
        )
    return out


@given(st.lists(steps, max_size=12))
def test_the_memo_builds_what_build_context_builds(history: list[tuple[str, Any]]) -> None:
    memo = ContextMemo()
    path: list[Node] = []
    for kind, value in history:
        if kind == "append":
            path = _append(path, value)
        elif kind == "branch":
            at, new = value
            path = _append(path[: min(at, len(path))], new)
        else:
            path = [msgspec.structs.replace(n) for n in path]
        built = memo.build(path)
        assert build_context(path) == built
        assert artifact_ids(build_context(path)) == artifact_ids(built)


def test_a_path_built_on_the_kept_one_keeps_the_same_message_objects() -> None:
    memo = ContextMemo()
    path = _append([], [("user", "message", [TextBlock(text="q")], False)])
    first = memo.build(path)
    longer = _append(path, [("assistant", "message", [TextBlock(text="a")], False)])
    second = memo.build(longer)
    assert first[0] is second[0]
    assert build_context(longer) == second
