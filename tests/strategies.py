"""Hypothesis strategies for the whole vocabulary: content blocks, packets, nodes, events.

Import from here rather than building structs by hand in property tests::

    from tests.strategies import events, content_blocks, packets, nodes

Every strategy produces values that survive a JSON round trip unchanged: no NaN or
infinities, integers inside the 64-bit range msgspec encodes, lists rather than tuples.
"""

from __future__ import annotations

from typing import Any, get_args

from hypothesis import strategies as st

from eventlog import events as ev
from eventlog import graph_events as gev
from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    JsonBlock,
    Message,
    ResultPart,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.packets import (
    AgentTaskContext,
    BrainTaskContext,
    ContextRef,
    HandoffPacket,
    Packet,
    TaskProgress,
    WorkerResult,
)

__all__ = [
    "agent_task_contexts",
    "brain_task_contexts",
    "content_blocks",
    "context_refs",
    "event_of_type",
    "events",
    "handoff_packets",
    "ids",
    "json_values",
    "messages",
    "nodes",
    "packets",
    "result_parts",
    "session_ids",
    "task_progress",
    "todos",
    "usages",
    "worker_results",
]

_I64 = 2**63 - 1

# --- primitives ---------------------------------------------------------------------------

texts = st.text(max_size=40)
short_texts = st.text(max_size=12)
ints = st.integers(min_value=0, max_value=1_000_000)
ids = st.from_regex(r"[a-z][a-z0-9_:#]{0,15}", fullmatch=True)
session_ids = st.from_regex(r"sess_[a-zA-Z0-9_]{1,20}", fullmatch=True)
optional_ids = st.none() | ids

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-_I64, max_value=_I64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Return any JSON value (dicts with str keys, lists, scalars)."""
    return st.recursive(
        json_scalars,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(short_texts, children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


json_objects = st.dictionaries(short_texts, json_values(6), max_size=4)


def _literal(alias: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(get_args(alias))


# --- content blocks -----------------------------------------------------------------------

text_blocks = st.builds(TextBlock, text=texts)
json_blocks = st.builds(JsonBlock, data=json_values(), summary=texts)
artifact_ref_blocks = st.builds(
    ArtifactRefBlock,
    artifact_id=ids,
    summary=texts,
    mime_type=st.sampled_from(["application/json", "text/plain", "image/png"]),
)
tool_call_blocks = st.builds(ToolCallBlock, id=ids, name=ids, arguments=json_objects)


def result_parts() -> st.SearchStrategy[ResultPart]:
    """Return a block allowed inside a tool_result (text, json, artifact_ref)."""
    return st.one_of(text_blocks, json_blocks, artifact_ref_blocks)


tool_result_blocks = st.builds(
    ToolResultBlock,
    tool_call_id=ids,
    name=ids,
    content=st.lists(result_parts(), max_size=3),
    is_error=st.booleans(),
)


def content_blocks() -> st.SearchStrategy[ContentBlock]:
    """Return any content block of the tagged union."""
    return st.one_of(
        text_blocks, json_blocks, tool_call_blocks, tool_result_blocks, artifact_ref_blocks
    )


block_lists = st.lists(content_blocks(), max_size=4)


def messages() -> st.SearchStrategy[Message]:
    """Return a provider-neutral chat message."""
    return st.builds(
        Message, role=st.sampled_from(["user", "assistant", "tool", "system"]), content=block_lists
    )


# --- packets ------------------------------------------------------------------------------


def context_refs() -> st.SearchStrategy[ContextRef]:
    return st.builds(
        ContextRef,
        kind=st.sampled_from(["file", "thread", "summary", "artifact"]),
        uri=texts,
        label=st.none() | texts,
    )


def task_progress() -> st.SearchStrategy[TaskProgress]:
    return st.builds(
        TaskProgress,
        status=st.sampled_from(
            ["pending", "running", "completed", "failed", "blocked", "cancelled"]
        ),
        completed_steps=ints,
        total_steps=ints,
        note=texts,
    )


def brain_task_contexts() -> st.SearchStrategy[BrainTaskContext]:
    return st.builds(
        BrainTaskContext,
        id=ids,
        goal=texts,
        progress=task_progress(),
        child_context_ids=st.lists(ids, max_size=3),
        context_refs=st.lists(context_refs(), max_size=3),
    )


def agent_task_contexts() -> st.SearchStrategy[AgentTaskContext]:
    return st.builds(
        AgentTaskContext,
        id=ids,
        parent_id=ids,
        agent_role=short_texts,
        goal=texts,
        progress=task_progress(),
        context_refs=st.lists(context_refs(), max_size=3),
    )


def handoff_packets() -> st.SearchStrategy[HandoffPacket]:
    return st.builds(
        HandoffPacket,
        id=ids,
        task=agent_task_contexts(),
        constraints=st.lists(texts, max_size=3),
        expected_result=texts,
    )


def worker_results() -> st.SearchStrategy[WorkerResult]:
    return st.builds(
        WorkerResult,
        handoff_id=ids,
        task_id=ids,
        parent_id=ids,
        status=st.sampled_from(["completed", "failed", "blocked", "cancelled"]),
        progress=task_progress(),
        summary=texts,
        artifacts=st.lists(context_refs(), max_size=2),
        risks=st.lists(texts, max_size=2),
        next_questions=st.lists(texts, max_size=2),
        error=st.none() | texts,
    )


def packets() -> st.SearchStrategy[Packet]:
    """Return a packet that crosses an actor boundary (handoff or worker result)."""
    return st.one_of(handoff_packets(), worker_results())


# --- event parts --------------------------------------------------------------------------


def nodes(
    node_id: st.SearchStrategy[str] = ids,
    parent_id: st.SearchStrategy[str | None] = optional_ids,
) -> st.SearchStrategy[ev.Node]:
    """Return a conversation node; pass ``node_id``/``parent_id`` strategies to shape a tree."""
    return st.builds(
        ev.Node,
        node_id=node_id,
        parent_id=parent_id,
        agent_id=ids,
        run_id=optional_ids,
        role=_literal(ev.NodeRole),
        node_type=_literal(ev.NodeType),
        content=block_lists,
        metadata=json_objects,
        token_count=st.none() | ints,
    )


def usages() -> st.SearchStrategy[ev.Usage]:
    return st.builds(
        ev.Usage,
        input_tokens=ints,
        output_tokens=ints,
        cache_read_tokens=ints,
        cache_write_tokens=ints,
    )


def todos() -> st.SearchStrategy[ev.Todo]:
    return st.builds(
        ev.Todo,
        id=ids,
        title=texts,
        owner_role=short_texts,
        deps=st.lists(ids, max_size=3),
        after=st.lists(ids, max_size=3),
    )


# --- events -------------------------------------------------------------------------------

_attempts = st.integers(min_value=1, max_value=5)
#: The fields naming one model call, shared by its requested / responded / failed events.
_model_call: dict[str, st.SearchStrategy[Any]] = {
    "call_index": ints,
    "attempt": _attempts,
    "model": short_texts,
}
#: The fields naming one tool call, shared by every tool event.
_tool_call: dict[str, st.SearchStrategy[Any]] = {"tool_call_id": ids, "tool_name": ids}

_EVENT_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "session_created": st.builds(
        ev.SessionCreated,
        session_id=session_ids,
        cwd=texts,
        root_agent_id=ids,
        parent_session_id=st.none() | session_ids,
        metadata=json_objects,
    ),
    "session_archived": st.builds(ev.SessionArchived, reason=texts),
    "agent_created": st.builds(
        ev.AgentCreated,
        agent_id=ids,
        agent_type=_literal(ev.AgentType),
        parent_agent_id=optional_ids,
        created_by_run_id=optional_ids,
        fork_from_node_id=optional_ids,
        role=short_texts,
        purpose=short_texts,
        metadata=json_objects,
    ),
    "agent_status_changed": st.builds(
        ev.AgentStatusChanged,
        agent_id=ids,
        status=_literal(ev.AgentStatus),
        result=st.none() | json_objects,
    ),
    "run_started": st.builds(
        ev.RunStarted,
        run_id=ids,
        agent_id=ids,
        phase=short_texts,
        start_node_id=optional_ids,
        rng_seed=st.integers(min_value=0, max_value=2**63 - 1),
        attempt=_attempts,
        metadata=json_objects,
    ),
    "run_ended": st.builds(
        ev.RunEnded,
        run_id=ids,
        status=_literal(ev.RunEndStatus),
        end_reason=_literal(ev.EndReason),
        end_node_id=optional_ids,
        turn_count=ints,
        usage=usages(),
        error=st.none() | json_objects,
        outcome=json_objects,
    ),
    "node_appended": st.builds(ev.NodeAppended, node=nodes(), activate=st.booleans()),
    "active_node_switched": st.builds(
        ev.ActiveNodeSwitched, from_node_id=optional_ids, to_node_id=ids
    ),
    "model_requested": st.builds(
        ev.ModelRequested,
        **_model_call,
        role=short_texts,
        phase=short_texts,
        request_hash=st.from_regex(r"[0-9a-f]{16}", fullmatch=True),
        messages=st.lists(messages(), max_size=3),
        tools=st.lists(ids, max_size=3),
        system=texts,
        tip=optional_ids,
        message_count=st.none() | st.integers(min_value=0, max_value=10_000),
        system_ref=st.just("") | st.from_regex(r"[0-9a-f]{32}", fullmatch=True),
        tools_ref=st.just("") | st.from_regex(r"[0-9a-f]{32}", fullmatch=True),
        max_tokens=st.none() | st.integers(min_value=1, max_value=200_000),
        temperature=st.none() | st.floats(min_value=0, max_value=2),
    ),
    "content_stored": st.builds(
        ev.ContentStored,
        content_hash=st.from_regex(r"[0-9a-f]{32}", fullmatch=True),
        kind=st.sampled_from(["system", "tools"]),
        text=texts,
    ),
    "model_responded": st.builds(
        ev.ModelResponded,
        **_model_call,
        content=block_lists,
        stop_reason=short_texts,
        usage=usages(),
    ),
    "model_failed": st.builds(
        ev.ModelFailed,
        **_model_call,
        error_type=short_texts,
        message=texts,
        status=st.none() | st.integers(min_value=100, max_value=599),
        will_fallback=st.booleans(),
    ),
    "tool_call_started": st.builds(
        ev.ToolCallStarted,
        **_tool_call,
        arguments=json_objects,
        idempotent=st.booleans(),
    ),
    "tool_call_finished": st.builds(
        ev.ToolCallFinished,
        **_tool_call,
        content=block_lists,
        is_error=st.booleans(),
    ),
    "tool_failed": st.builds(ev.ToolFailed, **_tool_call, error_type=short_texts, message=texts),
    "in_doubt_resolved": st.builds(
        ev.InDoubtResolved,
        **_tool_call,
        decision=_literal(ev.InDoubtDecision),
        reason=texts,
    ),
    "handoff_sent": st.builds(ev.HandoffSent, packet=handoff_packets()),
    "worker_result_received": st.builds(ev.WorkerResultReceived, result=worker_results()),
    "worker_failed": st.builds(ev.WorkerFailed, task_id=ids, error_type=short_texts, message=texts),
    "plan_rejected": st.builds(ev.PlanRejected, error=texts, fallback=texts),
    "artifact_created": st.builds(
        ev.ArtifactCreated,
        artifact_id=ids,
        path=texts,
        filename=st.none() | texts,
        mime_type=st.sampled_from(["application/json", "text/plain"]),
        size_bytes=ints,
        sha256=st.from_regex(r"[0-9a-f]{64}", fullmatch=True),
        summary=texts,
        node_id=optional_ids,
        tool_call_id=optional_ids,
    ),
    "token_usage": st.builds(
        ev.TokenUsage,
        model=short_texts,
        role=short_texts,
        phase=short_texts,
        task_id=optional_ids,
        call_index=ints,
        usage=usages(),
    ),
    "clarification_requested": st.builds(
        ev.ClarificationRequested,
        reason=texts,
        question=texts,
        missing_fields=st.lists(short_texts, max_size=3),
        options=st.lists(short_texts, max_size=3),
    ),
    "todo_planned": st.builds(
        ev.TodoPlanned, todos=st.lists(todos(), max_size=4), task_name=short_texts
    ),
    "todo_updated": st.builds(
        ev.TodoUpdated, todo_id=ids, status=_literal(ev.TodoStatus), note=texts
    ),
    "fix_iteration": st.builds(
        ev.FixIteration, iteration=st.integers(min_value=1, max_value=10), trigger=texts
    ),
    "run_cancelling": st.builds(
        ev.RunCancelling,
        reason=texts,
        source=_literal(ev.CancelSource),
        during=_literal(ev.CancelPhase),
        scope=st.sampled_from(["run", "worker"]),
    ),
    "approval_requested": st.builds(
        ev.ApprovalRequested,
        **_tool_call,
        arguments=json_objects,
        agent_id=ids,
        role=short_texts,
        reason=texts,
    ),
    "approval_decided": st.builds(
        ev.ApprovalDecided,
        tool_call_id=ids,
        decision=_literal(ev.ApprovalDecision),
        reason=texts,
        arguments=st.none() | json_objects,
    ),
    "run_waiting": st.builds(
        ev.RunWaiting,
        run_id=ids,
        reason=_literal(ev.WaitReason),
        pending=st.lists(ids, max_size=3),
        question=texts,
    ),
    "run_resumed": st.builds(ev.RunResumed, run_id=ids),
    "clarification_answered": st.builds(ev.ClarificationAnswered, answer=texts),
    "hook_decided": st.builds(
        ev.HookDecided,
        hook=short_texts,
        decision=_literal(ev.HookVerdict),
        reason=texts,
        tool_call_id=optional_ids,
        arguments=st.none() | json_objects,
    ),
    "resumed_past_divergence": st.builds(
        ev.ResumedPastDivergence,
        run_seq=st.integers(min_value=1, max_value=10_000),
        seq=st.integers(min_value=1, max_value=10_000),
        recorded_type=st.sampled_from(sorted(ev.EVENT_TYPES)),
        current_type=st.sampled_from(sorted(ev.EVENT_TYPES)),
        reason=texts,
        abandoned=st.integers(min_value=0, max_value=1_000),
        next_node=st.integers(min_value=0, max_value=1_000),
    ),
}

# --- the LangGraph checkpointer's events (eventlog/graph_events.py) ---------------------

_versions = (
    st.text(max_size=40)
    | st.integers(min_value=0, max_value=10**9)
    | st.floats(allow_nan=False, allow_infinity=False)
)
_channel_blobs = st.builds(
    gev.ChannelBlob,
    channel=short_texts,
    version=_versions,
    type=st.sampled_from(["msgpack", "empty", "bytes", "null", "json"]),
    data=st.binary(max_size=40),
    extends=st.none() | _versions,
)
_EVENT_STRATEGIES["checkpoint_saved"] = st.builds(
    gev.CheckpointSaved,
    thread_id=texts,
    checkpoint_ns=short_texts,
    checkpoint_id=ids,
    parent_checkpoint_id=optional_ids,
    checkpoint_type=short_texts,
    checkpoint=st.binary(max_size=60),
    metadata_type=short_texts,
    metadata=st.binary(max_size=60),
    channels=st.lists(_channel_blobs, max_size=3),
    step=st.none() | st.integers(min_value=-1, max_value=10_000),
    source=short_texts,
    run_id=optional_ids,
)
_EVENT_STRATEGIES["checkpoint_writes"] = st.builds(
    gev.CheckpointWrites,
    thread_id=texts,
    checkpoint_ns=short_texts,
    checkpoint_id=ids,
    task_id=ids,
    task_path=texts,
    writes=st.lists(
        st.builds(
            gev.PendingWriteBlob,
            idx=st.integers(min_value=-4, max_value=50),
            channel=short_texts,
            type=short_texts,
            data=st.binary(max_size=40),
        ),
        max_size=3,
    ),
)
_EVENT_STRATEGIES["checkpoints_removed"] = st.builds(
    gev.CheckpointsRemoved,
    thread_id=texts,
    removed=st.lists(
        st.builds(gev.RemovedCheckpoint, checkpoint_ns=short_texts, checkpoint_id=ids),
        min_size=1,
        max_size=3,
    ),
    reason=texts,
)

_missing = set(ev.EVENT_TYPES) ^ set(_EVENT_STRATEGIES)
if _missing:  # pragma: no cover - fails loudly the moment an event type is added
    raise AssertionError(f"tests/strategies.py has no strategy for event types {_missing}")


def event_of_type(event_type: str) -> st.SearchStrategy[ev.Event]:
    """Return a strategy for events of one ``event_type`` tag."""
    strategy: st.SearchStrategy[ev.Event] = _EVENT_STRATEGIES[event_type]
    return strategy


def events() -> st.SearchStrategy[ev.Event]:
    """Return any event of any type in ``EVENT_TYPES``."""
    return st.one_of(*(_EVENT_STRATEGIES[t] for t in sorted(_EVENT_STRATEGIES)))
