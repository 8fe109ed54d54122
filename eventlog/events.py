"""The event vocabulary: every state change of a session is one of these facts.

Each event is a frozen msgspec Struct tagged by ``event_type`` with a
``schema_version``. The row envelope (event_id, seq, run_seq, agent_id, run_id,
node_id, tool_call_id, created_at) is *not* part of the payload: the writer
assigns it. Rules for evolving them live in ``docs/events.md``: new fields get
defaults, a field's type never changes, old versions are upcast in
``eventlog.codec``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

import msgspec

from eventlog.blocks import ContentBlock
from eventlog.event_base import Level, _Event
from eventlog.graph_events import GraphEvent
from eventlog.packets import BrainTaskContext, HandoffPacket, WorkerResult
from eventlog.request_events import ContentKind as ContentKind  # noqa: PLC0414 (re-export)
from eventlog.request_events import ContentStored as ContentStored  # noqa: PLC0414 (re-export)
from eventlog.request_events import ModelRequested as ModelRequested  # noqa: PLC0414 (re-export)

SessionStatus = Literal["active", "archived"]
AgentStatus = Literal["idle", "running", "completed", "failed", "cancelled"]
#: A run's status column: ``running`` from ``run_started``, ``waiting`` while it waits for
#: a person (``run_waiting``), then how ``run_ended`` ended it.
RunStatus = Literal["running", "completed", "failed", "cancelled", "waiting", "refused"]
#: How a run ended (``run_ended.status``; v1 also allowed the never-produced ``queued``,
#: ``pending``, ``running`` and ``aborted``: its upcaster maps them, see ``codec``).
#: ``refused``: the input guardrail refused the prompt.
RunEndStatus = Literal["completed", "failed", "cancelled", "refused"]
EndReason = Literal[
    "completed",
    "max_turns",
    "aborted_streaming",
    "aborted_tools",
    "prompt_too_long",
    "max_output_tokens_recovery",
    "failed",
    "cancelled",
]
#: Who asked a run to stop: its handle, Ctrl-C in the embedding process, another
#: process (``clew cancel``), or one of the run's timeouts.
CancelSource = Literal["handle", "interrupt", "external", "timeout"]
#: What the run was doing when it noticed: between steps, in a model call, in a tool call.
CancelPhase = Literal["", "model", "tool"]
#: ``orchestrator``: a session's Brain; ``sub``: a worker; ``fork``: produced by forks (#18).
#: (v1 also allowed ``main``, never produced: clew always runs in orchestrator mode.)
AgentType = Literal["orchestrator", "sub", "fork"]
NodeRole = Literal["user", "assistant", "tool", "system"]
NodeType = Literal[
    "message",
    "skill_context",
    "memory_context",
    "compaction",
    "child_result",
    "plan_instruction",
    "task_instruction",
    "task_board",
    "system_note",
]
TodoStatus = Literal["pending", "ready", "running", "completed", "failed", "blocked", "cancelled"]
InDoubtDecision = Literal["retry", "fail", "skip"]
#: What a person decided about a tool call waiting for approval.
ApprovalDecision = Literal["approve", "deny", "edit"]
#: What a run parked for: a tool call's approval, or the answer to a clarification.
WaitReason = Literal["approval", "clarification"]
#: What a hook decided: let it be, stop it (with a reason), change the arguments, or the
#: hook raised (contained: the run goes on as if it allowed).
HookVerdict = Literal["allow", "deny", "edit", "error"]


class Node(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A conversation tree node (the row of ``nodes_<sid>`` minus node_seq/created_at)."""

    node_id: str
    parent_id: str | None
    agent_id: str
    run_id: str | None = None
    role: NodeRole
    node_type: NodeType = "message"
    content: list[ContentBlock]
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    token_count: int | None = None


class Usage(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Token usage of one model call, normalised across providers."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def plus(self, other: Usage) -> Usage:
        """Return the sum of this usage and ``other``."""
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class Todo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One checkable item of a routed plan."""

    id: str
    title: str
    owner_role: str
    #: Must complete before this one starts (a failed one blocks it).
    deps: list[str] = msgspec.field(default_factory=list)
    #: Must have settled (completed, failed or blocked) before this one starts; a failure
    #: does not block it: the primary waits for every worker this way, and reports failures.
    after: list[str] = msgspec.field(default_factory=list)


# --- sessions, agents, runs -------------------------------------------------------------


class SessionCreated(_Event, frozen=True, kw_only=True, tag="session_created"):
    session_id: str
    cwd: str
    root_agent_id: str
    parent_session_id: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class SessionArchived(_Event, frozen=True, kw_only=True, tag="session_archived"):
    reason: str = ""


class AgentCreated(_Event, frozen=True, kw_only=True, tag="agent_created"):
    """An agent joined the session. v2 dropped the never-produced agent type ``main``."""

    schema_version: int = 2
    agent_id: str
    agent_type: AgentType
    parent_agent_id: str | None = None
    created_by_run_id: str | None = None
    fork_from_node_id: str | None = None
    role: str = ""
    purpose: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class AgentStatusChanged(_Event, frozen=True, kw_only=True, tag="agent_status_changed"):
    agent_id: str
    status: AgentStatus
    result: dict[str, Any] | None = None


class RunStarted(_Event, frozen=True, kw_only=True, tag="run_started"):
    run_id: str
    agent_id: str
    phase: str = ""
    start_node_id: str | None = None
    rng_seed: int = 0
    attempt: int = 1
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class RunEnded(_Event, frozen=True, kw_only=True, tag="run_ended"):
    """A run ended; always its last event. v2 narrowed ``status`` to the end statuses.

    ``outcome`` of a main run: ``status`` (``completed``/``needs_clarification``) and,
    since flow 2, the final answer as ``summary`` and the worker results (``workers``).
    """

    schema_version: int = 2
    run_id: str
    status: RunEndStatus
    end_reason: EndReason
    end_node_id: str | None = None
    turn_count: int = 0
    usage: Usage = Usage()
    error: dict[str, Any] | None = None
    outcome: dict[str, Any] = msgspec.field(default_factory=dict)


# --- the node tree ----------------------------------------------------------------------


class NodeAppended(_Event, frozen=True, kw_only=True, tag="node_appended"):
    """A node joined the tree. ``activate`` moves the session's active node to it."""

    node: Node
    activate: bool = False


class ActiveNodeSwitched(_Event, frozen=True, kw_only=True, tag="active_node_switched"):
    from_node_id: str | None
    to_node_id: str


# --- model calls ------------------------------------------------------------------------


class ModelResponded(_Event, frozen=True, kw_only=True, tag="model_responded"):
    call_index: int
    attempt: int = 1
    model: str
    content: list[ContentBlock]
    stop_reason: str = "end_turn"
    usage: Usage = Usage()


class ModelFailed(_Event, frozen=True, kw_only=True, tag="model_failed"):
    LEVEL: ClassVar[Level] = "warning"
    call_index: int
    attempt: int = 1
    model: str
    error_type: str
    message: str
    status: int | None = None
    will_fallback: bool = False


# --- tools ------------------------------------------------------------------------------


class ToolCallStarted(_Event, frozen=True, kw_only=True, tag="tool_call_started"):
    """Durable *before* the tool runs: a start without a result is an in-doubt call."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    idempotent: bool = False


class ToolCallFinished(_Event, frozen=True, kw_only=True, tag="tool_call_finished"):
    tool_call_id: str
    tool_name: str
    content: list[ContentBlock] = msgspec.field(default_factory=list)
    is_error: bool = False


class ToolFailed(_Event, frozen=True, kw_only=True, tag="tool_failed"):
    LEVEL: ClassVar[Level] = "warning"
    tool_call_id: str
    tool_name: str
    error_type: str
    message: str


class InDoubtResolved(_Event, frozen=True, kw_only=True, tag="in_doubt_resolved"):
    """On resume, a tool call that started but never finished was settled by policy."""

    LEVEL: ClassVar[Level] = "warning"
    tool_call_id: str
    tool_name: str
    decision: InDoubtDecision
    reason: str = ""


# --- orchestration ----------------------------------------------------------------------


class HandoffSent(_Event, frozen=True, kw_only=True, tag="handoff_sent"):
    packet: HandoffPacket


class WorkerResultReceived(_Event, frozen=True, kw_only=True, tag="worker_result_received"):
    result: WorkerResult


class WorkerFailed(_Event, frozen=True, kw_only=True, tag="worker_failed"):
    LEVEL: ClassVar[Level] = "error"
    task_id: str
    error_type: str
    message: str


class PlanRejected(_Event, frozen=True, kw_only=True, tag="plan_rejected"):
    """The router's reply was not a valid plan; ``fallback`` says what was done instead."""

    LEVEL: ClassVar[Level] = "warning"
    error: str
    fallback: str


class ArtifactCreated(_Event, frozen=True, kw_only=True, tag="artifact_created"):
    artifact_id: str
    path: str
    filename: str | None = None
    mime_type: str = "application/json"
    size_bytes: int = 0
    sha256: str = ""
    summary: str = ""
    node_id: str | None = None
    tool_call_id: str | None = None


class TokenUsage(_Event, frozen=True, kw_only=True, tag="token_usage"):
    """Provider usage of one model call. v1 had flat ``input_tokens``/``output_tokens``."""

    schema_version: int = 2
    model: str
    role: str = ""
    phase: str = ""
    task_id: str | None = None
    call_index: int = 0
    usage: Usage = Usage()


class ClarificationRequested(_Event, frozen=True, kw_only=True, tag="clarification_requested"):
    reason: str = ""
    question: str
    missing_fields: list[str] = msgspec.field(default_factory=list)
    options: list[str] = msgspec.field(default_factory=list)


class TodoPlanned(_Event, frozen=True, kw_only=True, tag="todo_planned"):
    """The routed plan's todos and the Brain's orchestration context (seed: context_plan).

    ``task_name``: the plan's task name (the router's choice, sanitised and unique in the
    session); its Task WAL is ``<task_name>.wal.jsonl``. Empty in runs recorded before
    it: their WAL is named after the run id (``eventlog.ids.wal_name_for``).
    """

    todos: list[Todo]
    context: BrainTaskContext | None = None
    task_name: str = ""


class TodoUpdated(_Event, frozen=True, kw_only=True, tag="todo_updated"):
    todo_id: str
    status: TodoStatus
    note: str = ""


class FixIteration(_Event, frozen=True, kw_only=True, tag="fix_iteration"):
    iteration: int
    trigger: str


class RunCancelling(_Event, frozen=True, kw_only=True, tag="run_cancelling"):
    """The run noticed a cancellation here and stops: its last steps follow.

    Recorded at the exact point the run stopped, so a replay stops there too (a
    re-executed run meeting this event where it would emit another one stops).
    ``scope`` is ``run`` when the whole main run stops, ``worker`` when only this
    worker's run does (its own timeout).
    """

    LEVEL: ClassVar[Level] = "warning"
    reason: str
    source: CancelSource
    during: CancelPhase = ""
    scope: Literal["run", "worker"] = "run"


# --- waiting for a person ---------------------------------------------------------------


class ApprovalRequested(_Event, frozen=True, kw_only=True, tag="approval_requested"):
    """A tool call needs a person's approval before it runs (recorded in the calling run)."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    agent_id: str
    role: str = ""
    reason: str = ""


class ApprovalDecided(_Event, frozen=True, kw_only=True, tag="approval_decided"):
    """A person decided a pending approval (written into the waiting run by any process).

    ``arguments`` are the edited arguments of an ``edit``; None otherwise.
    """

    tool_call_id: str
    decision: ApprovalDecision
    reason: str = ""
    arguments: dict[str, Any] | None = None


class RunWaiting(_Event, frozen=True, kw_only=True, tag="run_waiting"):
    """The run parks here until a person decides (its status becomes ``waiting``).

    ``pending`` lists the tool call ids waiting for approval; ``question`` is the
    clarification asked.
    """

    run_id: str
    reason: WaitReason
    pending: list[str] = msgspec.field(default_factory=list)
    question: str = ""


class RunResumed(_Event, frozen=True, kw_only=True, tag="run_resumed"):
    """A parked run goes on: its wait was decided (its status is ``running`` again)."""

    run_id: str


class ClarificationAnswered(_Event, frozen=True, kw_only=True, tag="clarification_answered"):
    """A person answered the run's clarification question (written into the waiting run)."""

    answer: str


class HookDecided(_Event, frozen=True, kw_only=True, tag="hook_decided"):
    """An application hook changed the run (or raised): recorded, so replay never calls it.

    ``hook`` is ``on_run_start``, ``before_model``, ``before_tool``, ``after_tool``,
    ``on_run_end``, ``input_guardrail`` or ``output_guardrail``.
    """

    hook: str
    decision: HookVerdict
    reason: str = ""
    tool_call_id: str | None = None
    arguments: dict[str, Any] | None = None


class ResumedPastDivergence(_Event, frozen=True, kw_only=True, tag="resumed_past_divergence"):
    """A resume went on live where today's code left the run's recording (its events from
    ``run_seq`` up to this one are no longer followed); see docs/events.md."""

    LEVEL: ClassVar[Level] = "warning"
    run_seq: int
    seq: int
    recorded_type: str
    current_type: str
    reason: str
    abandoned: int
    next_node: int = 0


Event = (
    SessionCreated
    | SessionArchived
    | AgentCreated
    | AgentStatusChanged
    | RunStarted
    | RunEnded
    | NodeAppended
    | ActiveNodeSwitched
    | ModelRequested
    | ContentStored
    | ModelResponded
    | ModelFailed
    | ToolCallStarted
    | ToolCallFinished
    | ToolFailed
    | InDoubtResolved
    | HandoffSent
    | WorkerResultReceived
    | WorkerFailed
    | PlanRejected
    | ArtifactCreated
    | TokenUsage
    | ClarificationRequested
    | TodoPlanned
    | TodoUpdated
    | FixIteration
    | RunCancelling
    | ApprovalRequested
    | ApprovalDecided
    | RunWaiting
    | RunResumed
    | ClarificationAnswered
    | HookDecided
    | ResumedPastDivergence
    | GraphEvent
)

EVENT_TYPES: dict[str, type[_Event]] = {cls.__struct_config__.tag: cls for cls in get_args(Event)}


def event_type_of(event: Event) -> str:
    """Return the ``event_type`` tag of ``event``."""
    return type(event).__struct_config__.tag  # type: ignore[return-value]


def level_of(event: Event) -> Level:
    """Return the level column value for ``event``."""
    return type(event).LEVEL
