"""Replay with live tools: run an idempotent tool again and compare its output.

A plain replay takes every tool's result from the recording, so a tool whose behaviour
changed still replays ``identical``. With ``live_tools`` the recorder hands each
recorded outcome of an *idempotent* call here: the tool runs again with the recorded
arguments and a different output is a :class:`Divergence` at that ``tool_call_finished``
(or ``tool_failed``), with a field diff of the two outcomes. A call of a tool that is not
idempotent is never run: its recorded outcome is used, and counted as not run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from actors.divergences import FieldDiff
from actors.errors import Divergence
from actors.replay.diff import diff_values, with_text_diffs
from actors.replay.options import ReplayOptions
from eventlog.artifact_plan import stored_forms
from eventlog.events import ToolCallFinished, ToolCallStarted, ToolFailed, event_type_of
from eventlog.records import StoredEvent

Outcome = ToolCallFinished | ToolFailed


def check_live_tool(
    options: ReplayOptions,
    *,
    run_id: str,
    session_id: str,
    started: ToolCallStarted,
    recorded: StoredEvent,
    run: Callable[[], Outcome],
    threshold: int,
) -> None:
    """Run ``started``'s tool again if it is idempotent; raise when its outcome changed.

    Raises:
        Divergence: the tool's outcome today differs from the recorded one.
    """
    options.tally.count(started.idempotent)
    if not started.idempotent:
        return
    outcome = run()
    forms = stored_forms(session_id, outcome, threshold)
    if any(form[-1] == recorded.event for form in forms):
        return
    today = forms[0][-1]
    raise Divergence(
        run_id,
        recorded.run_seq,
        recorded.event_type,
        event_type_of(today),
        outcome_diff(recorded.event, today),
    )


def outcome_diff(recorded: Any, today: Any) -> list[FieldDiff]:
    """Return the field differences of two tool outcomes; every changed text gets a diff."""
    return with_text_diffs(diff_values(msgspec.to_builtins(recorded), msgspec.to_builtins(today)))
