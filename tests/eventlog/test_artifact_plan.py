"""The artifact plan: which blocks become artifacts, in what form, and older forms."""

from __future__ import annotations

from pathlib import Path

from eventlog.artifact_plan import PREVIEW_CHARS, plan_artifacts, stored_forms
from eventlog.artifacts import ArtifactFiles
from eventlog.blocks import ArtifactRefBlock, JsonBlock, TextBlock, ToolResultBlock
from eventlog.events import ArtifactCreated, Node, NodeAppended, ToolCallFinished

SID = "sess_20260101_000000_a1b2"
LIMIT = 100
BIG = "line of a large result\n" * 50  # 1,150 bytes: over LIMIT


def finished(*blocks: TextBlock | JsonBlock) -> ToolCallFinished:
    return ToolCallFinished(tool_call_id="c1", tool_name="dump", content=list(blocks))


def tool_node(*parts: TextBlock | JsonBlock) -> NodeAppended:
    result = ToolResultBlock(tool_call_id="c1", name="dump", content=list(parts))
    node = Node(node_id="n2", parent_id="n1", agent_id="a", role="tool", content=[result])
    return NodeAppended(node=node)


def test_a_large_text_result_becomes_one_artifact_with_its_tool_call_id() -> None:
    planned, artifacts = plan_artifacts(SID, finished(TextBlock(text=BIG)), LIMIT)

    ((created, data),) = artifacts
    assert isinstance(planned, ToolCallFinished)
    (ref,) = planned.content
    assert isinstance(ref, ArtifactRefBlock)
    assert (BIG.encode(), "c1", None) == (data, created.tool_call_id, created.node_id)
    assert (created.artifact_id, "text/plain; charset=utf-8") == (ref.artifact_id, ref.mime_type)
    assert created.path.endswith(".txt") and len(BIG.encode()) == created.size_bytes
    # The reference carries the size and a bounded preview.
    assert f"{len(BIG.encode()):,} bytes" in ref.summary and BIG[:40] in ref.summary
    assert len(ref.summary) < PREVIEW_CHARS + 300


def test_a_small_result_and_a_user_text_stay_inline() -> None:
    small = finished(TextBlock(text="short"))
    assert (small, []) == plan_artifacts(SID, small, LIMIT)
    prompt = NodeAppended(
        node=Node(
            node_id="n1", parent_id=None, agent_id="a", role="user", content=[TextBlock(text=BIG)]
        )
    )
    assert (prompt, []) == plan_artifacts(SID, prompt, LIMIT)


def test_a_node_holding_the_same_result_refers_to_the_same_artifact() -> None:
    from_event = plan_artifacts(SID, finished(TextBlock(text=BIG)), LIMIT)[1][0][0]
    planned, ((created, _),) = plan_artifacts(SID, tool_node(TextBlock(text=BIG)), LIMIT)

    assert isinstance(planned, NodeAppended)
    (block,) = planned.node.content
    assert isinstance(block, ToolResultBlock)
    (ref,) = block.content
    assert isinstance(ref, ArtifactRefBlock)
    assert (from_event.artifact_id, "n2", "c1") == (
        ref.artifact_id,
        created.node_id,
        created.tool_call_id,
    )


def test_a_json_result_over_the_threshold_becomes_a_json_artifact() -> None:
    planned, ((created, _),) = plan_artifacts(SID, finished(JsonBlock(data={"rows": [BIG]})), LIMIT)
    assert ("application/json", True) == (created.mime_type, created.path.endswith(".json"))
    assert isinstance(planned, ToolCallFinished)


def test_an_old_recording_s_inline_result_is_one_of_the_stored_forms() -> None:
    event = tool_node(TextBlock(text=BIG))
    forms = stored_forms(SID, event, LIMIT)

    assert 2 == len(forms)
    today, legacy = forms
    assert [ArtifactCreated, NodeAppended] == [type(e) for e in today]
    assert [event] == legacy  # 0.1.0 kept a tool result inline


def test_an_existing_artifact_file_is_checked_by_its_hash_not_trusted(tmp_path: Path) -> None:
    files = ArtifactFiles(tmp_path)
    rel, _, _ = files.write(SID, b"x" * 1000, ext="txt")
    (tmp_path / rel).write_bytes(b"y" * 1000)  # same size, corrupt (a crash, a bad disk)

    ArtifactFiles(tmp_path).write(SID, b"x" * 1000, ext="txt")
    assert b"x" * 1000 == (tmp_path / rel).read_bytes()
    assert b"xx" == files.read_range(rel, 10, 2)
