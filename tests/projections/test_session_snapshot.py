# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from functools import partial

from _events import stored_event
from hypothesis import given
from hypothesis import strategies as st

from eventlog.blocks import TextBlock
from eventlog.events import (
    Event,
    Node,
    NodeAppended,
    RunEnded,
    RunStarted,
    SessionCreated,
    WorkerFailed,
    WorkerResultReceived,
)
from eventlog.packets import WorkerResult
from eventlog.records import StoredEvent
from projections.references import SessionReference, expand_references
from projections.snapshot import (
    FIELD_MAX_BYTES,
    SNAPSHOT_MAX_BYTES,
    clip_utf8,
    format_snapshot,
    session_snapshot,
)


def test_text_exactly_at_the_limit_is_not_clipped() -> None:
    text = "a" * 6144
    assert text == clip_utf8(text, FIELD_MAX_BYTES)


def test_text_one_byte_over_is_clipped_to_the_limit() -> None:
    clipped = clip_utf8("a" * 6145, FIELD_MAX_BYTES)
    assert clipped.endswith("…[clipped]")
    assert FIELD_MAX_BYTES == len(clipped.encode())


def test_a_multibyte_character_at_the_cut_is_never_split() -> None:
    # "€" is 3 bytes: the cut falls inside one whatever the offset.
    for prefix in range(3):
        text = "a" * prefix + "€" * 3000
        clipped = clip_utf8(text, FIELD_MAX_BYTES)
        data = clipped.encode()  # would fail on a split surrogate; decode() proves no split
        assert len(data) <= FIELD_MAX_BYTES
        assert clipped.removesuffix(" …[clipped]") == text[: len(clipped) - len(" …[clipped]")]


@given(st.text(), st.integers(0, 64))
def test_clipping_never_exceeds_the_limit_and_keeps_a_prefix(text: str, limit: int) -> None:
    clipped = clip_utf8(text, limit)
    if len(text.encode()) <= limit:
        assert text == clipped
        return
    assert len(clipped.encode()) <= limit
    mark = " …[clipped]" if len(" …[clipped]".encode()) <= limit else ""
    assert text.startswith(clipped.removesuffix(mark))


stored = partial(stored_event, agent_id="main")


def session(prompt: str, summary: str, workers: int = 1) -> list[StoredEvent]:
    events: list[Event] = [
        SessionCreated(session_id="sess_old", cwd="/", root_agent_id="main"),
        RunStarted(run_id="r1", agent_id="main"),
        NodeAppended(
            node=Node(
                node_id="n1",
                parent_id=None,
                agent_id="main",
                role="user",
                content=[TextBlock(text=prompt)],
            )
        ),
        NodeAppended(
            node=Node(
                node_id="n2",
                parent_id="n1",
                agent_id="main",
                role="assistant",
                content=[TextBlock(text="private transcript text")],
            )
        ),
    ]
    events += [
        WorkerResultReceived(
            result=WorkerResult(handoff_id="h", task_id=f"t{i}", parent_id="r1", summary="found it")
        )
        for i in range(workers)
    ]
    events += [
        WorkerFailed(task_id="t9", error_type="Timeout", message="too slow"),
        RunEnded(
            run_id="r1", status="completed", end_reason="completed", outcome={"summary": summary}
        ),
    ]
    return [stored(i, e) for i, e in enumerate(events, start=1)]


def test_a_snapshot_has_the_four_fields_and_no_transcript() -> None:
    snap = session_snapshot(session("fix the bug", "fixed it"))
    assert (
        "fix the bug",
        "fixed it",
        ["t0 [completed]: found it"],
        ["worker t9 failed: Timeout: too slow"],
    ) == (snap.first_prompt, snap.final_summary, snap.worker_summaries, snap.errors)
    assert "private transcript text" not in format_snapshot(snap)


def test_a_huge_session_snapshot_stays_within_24_kib_and_6_kib_per_field() -> None:
    events = session("é" * 10_000, "€" * 10_000, workers=2000)
    expanded = expand_references("recall @@sess_old", ".", lambda sid: events)
    [ref] = expanded.references
    assert isinstance(ref, SessionReference)
    assert len(ref.snapshot.encode()) <= SNAPSHOT_MAX_BYTES
    for section in ref.snapshot.split("\n\n## ")[1:]:
        body = section.split("\n", 1)[1]
        assert len(body.encode()) <= FIELD_MAX_BYTES
    assert "private transcript text" not in ref.snapshot
