"""Packets: the only things that cross an actor boundary (seed 000).

Direction is explicit in the type: a ``HandoffPacket`` flows brain → agent, a
``WorkerResult`` agent → brain. There is no agent → agent packet on purpose.
"""

from __future__ import annotations

from typing import Literal

import msgspec

ContextLayer = Literal["brain", "agent"]
RefKind = Literal["file", "thread", "summary", "artifact"]
ProgressStatus = Literal["pending", "running", "completed", "failed", "blocked", "cancelled"]
WorkerStatus = Literal["completed", "failed", "blocked", "cancelled"]


class ContextRef(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A pointer to something the receiver may want: file, thread, summary or artifact."""

    kind: RefKind
    uri: str
    label: str | None = None


class TaskProgress(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Where a task stands."""

    status: ProgressStatus = "pending"
    completed_steps: int = 0
    total_steps: int = 0
    note: str = ""


class BrainTaskContext(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The orchestration context of one Brain run (exactly one per run)."""

    id: str
    layer: Literal["brain"] = "brain"
    goal: str
    progress: TaskProgress = TaskProgress()
    child_context_ids: list[str] = msgspec.field(default_factory=list)
    context_refs: list[ContextRef] = msgspec.field(default_factory=list)


class AgentTaskContext(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The isolated task context of one worker invocation."""

    id: str
    parent_id: str
    layer: Literal["agent"] = "agent"
    agent_role: str
    goal: str
    progress: TaskProgress = TaskProgress()
    context_refs: list[ContextRef] = msgspec.field(default_factory=list)


class HandoffPacket(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Brain → agent: everything a worker is given about its task."""

    from_layer: Literal["brain"] = "brain"
    to_layer: Literal["agent"] = "agent"
    id: str
    task: AgentTaskContext
    constraints: list[str] = msgspec.field(default_factory=list)
    expected_result: str = ""


class WorkerResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Agent → brain: a worker's findings. Never a transcript."""

    from_layer: Literal["agent"] = "agent"
    to_layer: Literal["brain"] = "brain"
    handoff_id: str
    task_id: str
    parent_id: str
    status: WorkerStatus = "completed"
    progress: TaskProgress = TaskProgress(status="completed")
    summary: str = ""
    artifacts: list[ContextRef] = msgspec.field(default_factory=list)
    risks: list[str] = msgspec.field(default_factory=list)
    next_questions: list[str] = msgspec.field(default_factory=list)
    error: str | None = None
    #: A review worker's verdict: ``approved`` or ``changes_requested`` (None otherwise).
    verdict: str | None = None


Packet = HandoffPacket | WorkerResult
