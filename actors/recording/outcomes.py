"""Events and errors the recorder builds by itself: the settling of an in-doubt tool
call, and the divergence of an event from the recorded one."""

from __future__ import annotations

import msgspec

from actors.divergences import FieldDiff
from actors.errors import Divergence
from actors.models.protocol import ModelRequest
from actors.models.tools import InDoubtPolicy
from actors.replay.diff import diff_values
from actors.replay.options import ReplayOptions
from actors.replay.request_diff import request_change, with_request_change
from eventlog.blocks import TextBlock
from eventlog.events import (
    Event,
    InDoubtResolved,
    ModelRequested,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    event_type_of,
)
from eventlog.records import StoredEvent


def type_divergence(
    run_id: str, run_seq: int | None, expected: str | None, actual: str
) -> Divergence:
    """Return the divergence of an ``actual`` event where the recording has ``expected``
    (``(end of …)`` when the recording has nothing there: no recorded type in the diff)."""
    recorded = None if expected is None or expected.startswith("(") else expected
    diff = [FieldDiff(path="event_type", expected=recorded, actual=actual)]
    return Divergence(run_id, run_seq, expected, actual, diff)


def event_divergence(
    run_id: str,
    rec: StoredEvent,
    ev: Event,
    request: ModelRequest | None,
    options: ReplayOptions,
) -> Divergence:
    """Return the divergence of ``ev`` from the recorded ``rec``: its changed fields, and
    for a model request (``request``: the one today's code built) what changed in the
    request (a tool's description…), rebuilt from the log when recorded by reference."""
    diff = diff_values(msgspec.to_builtins(rec.event), msgspec.to_builtins(ev))
    if isinstance(rec.event, ModelRequested) and request is not None:
        change = request_change(rec.event, options.recorded_specs, request, options.requests)
        diff = with_request_change(diff, change)
    return Divergence(run_id, rec.run_seq, rec.event_type, event_type_of(ev), diff)


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
