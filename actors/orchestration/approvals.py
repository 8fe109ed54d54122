"""Tool calls that wait for a person: the approval policy, the durable wait, decisions.

A call needs approval when its tool says so (``@tool(..., needs_approval=True)`` or a
policy ``needs_approval(call, ctx) -> bool``) or the run's settings name its tool
(``RunSettings.approval_required``). Then, before ``tool_call_started``, the run records
``approval_requested`` and parks (``run_waiting``): the tool does not run. A person's
``approval_decided`` is written into the same run by any process; the resumed run
re-executes to the wait, takes the decision from its recording, records ``run_resumed``
and goes on: the tool runs (with the edited arguments), or the model gets the denial as
an error result.

The policy is application code, so it is asked only live: re-executing, whether a call
waited is read from the recording (its ``approval_requested`` is next, or not).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from actors.models.storable import safe_text
from actors.models.tools import Tool, ToolContext
from actors.orchestration.env import SessionEnv
from actors.recording.recorder import RunRecorder
from eventlog.blocks import ToolCallBlock
from eventlog.events import ApprovalDecided, ApprovalRequested, RunWaiting, ToolFailed

#: A tool's approval policy: True when this call must wait for a person.
ApprovalPolicy = Callable[[ToolCallBlock, ToolContext], bool]


class Approve(msgspec.Struct, frozen=True, kw_only=True, tag="approve"):
    """Let the call run as the model asked."""


class Deny(msgspec.Struct, frozen=True, kw_only=True, tag="deny"):
    """Do not run the call: the model gets ``reason`` as the call's error result."""

    reason: str = "denied"


class Edit(msgspec.Struct, frozen=True, kw_only=True, tag="edit"):
    """Run the call with these arguments instead of the model's."""

    arguments: dict[str, Any]


#: What a person decides about a pending approval.
Decision = Approve | Deny | Edit


class PendingApproval(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call waiting for a person's decision."""

    session_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    agent_id: str
    role: str = ""
    reason: str = ""


def decided_event(decision: Decision, tool_call_id: str) -> ApprovalDecided:
    """Return the ``approval_decided`` event recording ``decision``."""
    match decision:
        case Approve():
            return ApprovalDecided(tool_call_id=tool_call_id, decision="approve")
        case Deny(reason=reason):
            return ApprovalDecided(tool_call_id=tool_call_id, decision="deny", reason=reason)
        case Edit(arguments=arguments):
            return ApprovalDecided(
                tool_call_id=tool_call_id, decision="edit", arguments=dict(arguments)
            )
    raise TypeError(f"not a decision: {decision!r}")  # pragma: no cover


def pending_of(session_id: str, run_id: str, e: ApprovalRequested) -> PendingApproval:
    """Return the pending approval ``e`` asks for."""
    return PendingApproval(
        session_id=session_id,
        run_id=run_id,
        tool_call_id=e.tool_call_id,
        tool_name=e.tool_name,
        arguments=dict(e.arguments),
        agent_id=e.agent_id,
        role=e.role,
        reason=e.reason,
    )


def policy_reason(env: SessionEnv, t: Tool, call: ToolCallBlock, ctx: ToolContext) -> str | None:
    """Ask the live policies whether ``call`` needs approval; return why, or None."""
    required = env.settings.approval_required
    if call.name in required or "*" in required:
        return "the run's settings require approval for this tool"
    flag = getattr(t, "needs_approval", False)
    if flag is True:
        return f"tool {call.name!r} needs approval"
    if callable(flag):
        try:
            if flag(call, ctx):
                return f"the approval policy of tool {call.name!r} asked for it"
        except Exception as e:  # a broken policy asks a person rather than letting it run
            return safe_text(f"the approval policy raised {type(e).__name__}: {e}")
    return None


def gate(
    env: SessionEnv,
    rec: RunRecorder,
    t: Tool,
    call: ToolCallBlock,
    ctx: ToolContext,
) -> ToolCallBlock | ToolFailed:
    """Return the call to run (with edited arguments), or the ``tool_failed`` of a denial.

    Raises:
        RunParked: the call waits for a person (``approval_requested`` and
            ``run_waiting`` are recorded).
    """
    request = _request(env, rec, t, call, ctx)
    if request is None:
        return call
    rec.emit(request)
    pending = [pending_of(env.session_id, rec.run_id, request)]
    rec.wait_point(RunWaiting(run_id=rec.run_id, reason="approval", pending=[call.id]), pending)
    decided = _decision(rec, call.id)
    rec.go_on(decided is not None, pending)
    assert decided is not None
    return apply(call, decided, "a person")


def apply(call: ToolCallBlock, decided: ApprovalDecided, who: str) -> ToolCallBlock | ToolFailed:
    """Return the call a decision lets run, or the ``tool_failed`` of a denial."""
    if decided.decision == "deny":
        return ToolFailed(
            tool_call_id=call.id,
            tool_name=call.name,
            error_type="ApprovalDenied",
            message=safe_text(f"{who} denied this call: {decided.reason or 'no reason given'}"),
        )
    if decided.decision == "edit" and decided.arguments is not None:
        return msgspec.structs.replace(call, arguments=dict(decided.arguments))
    return call


def _decision(rec: RunRecorder, call_id: str) -> ApprovalDecided | None:
    return rec.take_recorded(ApprovalDecided, lambda e: e.tool_call_id == call_id)


def _request(
    env: SessionEnv, rec: RunRecorder, t: Tool, call: ToolCallBlock, ctx: ToolContext
) -> ApprovalRequested | None:
    """Return the ``approval_requested`` of ``call`` if it must wait, else None."""
    if rec.replaying:
        nxt = rec.peek()
        recorded = nxt.event if nxt is not None else None
        if not isinstance(recorded, ApprovalRequested) or recorded.tool_call_id != call.id:
            return None
        reason = recorded.reason  # the recorded policy's answer, not a new one
    else:
        asked = policy_reason(env, t, call, ctx)
        if asked is None:
            return None
        reason = asked
    return ApprovalRequested(
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=dict(call.arguments),
        agent_id=rec.agent_id,
        role=ctx.role,
        reason=reason,
    )
