"""SessionMemo: what a session's runs keep between runs is what building it afresh gives."""

from __future__ import annotations

import msgspec

from actors.models.protocol import ModelRequest, request_hash
from actors.orchestration.session_memo import SessionMemo
from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import Node
from projections.context import artifact_ids, build_context


def _node(i: int, parent: Node | None, role: str, *content: ContentBlock) -> Node:
    return Node(
        node_id=f"n{i}",
        parent_id=parent.node_id if parent else None,
        agent_id="a",
        role=role,  # type: ignore[arg-type]
        content=list(content),
    )


def _conversation(turns: int, start: int = 0, tip: Node | None = None) -> list[Node]:
    """Return ``turns`` turns: a question, a tool call, its result (an artifact), a reply."""
    path: list[Node] = []
    for t in range(start, start + turns):
        call = ToolCallBlock(id=f"c{t}", name="read", arguments={})
        ref = ArtifactRefBlock(artifact_id=f"art{t}", summary="s")
        for role, block in (
            ("user", TextBlock(text=f"q{t}")),
            ("assistant", call),
            ("tool", ToolResultBlock(tool_call_id=f"c{t}", name="read", content=[ref])),
            ("assistant", TextBlock(text=f"a{t}")),
        ):
            tip = _node(4 * t + len(path) % 4, tip, role, block)
            path.append(tip)
    return path


def test_history_and_artifact_ids_are_a_fresh_builds_as_the_path_grows_and_changes() -> None:
    memo = SessionMemo()
    path = _conversation(2)
    for step in range(4):
        messages, found = memo.history(path)
        assert build_context(path) == messages
        assert artifact_ids(build_context(path)) == found
        if step == 1:  # a new store handle: equal rows, not the same ones
            path = [msgspec.structs.replace(n) for n in path]
        else:  # the next run's nodes
            path = [*path, *_conversation(1, start=2 + step, tip=path[-1])]


def test_the_memos_request_hash_is_request_hash_across_runs_and_roles() -> None:
    memo = SessionMemo()
    path = _conversation(1)
    for run in range(3):
        history, _ = memo.history(path)
        for role in ("router", "lead"):
            for extra in range(2):
                sent = [*history, *(msgspec.structs.replace(m) for m in history[-extra:] if extra)]
                request = ModelRequest(model="m", messages=sent, role=role, system=f"s{run}")
                assert request_hash(request) == memo.request_hash(request)
        path = [*path, *_conversation(1, start=1 + run, tip=path[-1])]
