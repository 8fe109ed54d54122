"""Events and errors the recorder builds by itself: the settling of an in-doubt tool
call, and the divergence of an event of another type than the recorded one."""

from __future__ import annotations

from actors.errors import Divergence
from actors.models.tools import InDoubtPolicy
from actors.replay.diff import FieldDiff
from eventlog.blocks import TextBlock
from eventlog.events import InDoubtResolved, ToolCallFinished, ToolCallStarted, ToolFailed


def type_divergence(
    run_id: str, run_seq: int | None, expected: str | None, actual: str
) -> Divergence:
    """Return the divergence of an ``actual`` event where the recording has ``expected``
    (``(end of …)`` when the recording has nothing there: no recorded type in the diff)."""
    recorded = None if expected is None or expected.startswith("(") else expected
    diff = [FieldDiff(path="event_type", expected=recorded, actual=actual)]
    return Divergence(run_id, run_seq, expected, actual, diff)


def in_doubt_resolved(started: ToolCallStarted, decision: InDoubtPolicy) -> InDoubtResolved:
    """Return how an in-doubt call (started, no recorded outcome) is settled."""
    reason = (
        "idempotent tool: run again"
        if started.idempotent
        else f"started before a crash with no recorded result; policy {decision}"
    )
    return InDoubtResolved(
        tool_call_id=started.tool_call_id,
        tool_name=started.tool_name,
        decision=decision,
        reason=reason,
    )


def in_doubt_outcome(
    started: ToolCallStarted, decision: InDoubtPolicy
) -> ToolCallFinished | ToolFailed:
    """Return the outcome of an in-doubt call that is not run again (``skip``/``fail``)."""
    if decision == "skip":
        return ToolCallFinished(
            tool_call_id=started.tool_call_id,
            tool_name=started.tool_name,
            content=[TextBlock(text="tool call skipped after a crash (in-doubt policy skip)")],
        )
    return ToolFailed(
        tool_call_id=started.tool_call_id,
        tool_name=started.tool_name,
        error_type="InDoubt",
        message="the tool call was interrupted by a crash and may or may not have"
        " taken effect; it was not run again (in-doubt policy fail)",
    )
