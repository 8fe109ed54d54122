"""Where a resume went on past a divergence, read back from a run's recording.

A resume with ``from_divergence`` records ``resumed_past_divergence`` into the run that
left its recording: the run's events from the marker's ``run_seq`` up to the marker are
abandoned, the events after it are what today's code did. :func:`follow_cuts` turns a
run's raw events into the recording a re-execution follows (abandoned events and markers
left out) and says where each cut is; :func:`past_divergence` builds the marker.
"""

from __future__ import annotations

import re

import msgspec

from actors.errors import Divergence
from eventlog.events import AgentCreated, NodeAppended, ResumedPastDivergence, RunStarted
from eventlog.records import StoredEvent


class Cut(msgspec.Struct, frozen=True):
    """From ``index`` of the followed recording on, the run's node counter is at least
    ``next_node``."""

    index: int
    next_node: int


def follow_cuts(events: list[StoredEvent]) -> tuple[list[StoredEvent], list[Cut]]:
    """Return the events a re-execution of the run follows, and the cuts in them."""
    if not any(isinstance(e.event, ResumedPastDivergence) for e in events):
        return events, []
    kept: list[StoredEvent] = []
    cuts: list[Cut] = []
    for e in events:
        if isinstance(e.event, ResumedPastDivergence):
            at = e.event.run_seq
            kept = [k for k in kept if k.run_seq is None or k.run_seq < at]
            cuts = [c for c in cuts if c.index <= len(kept)]
            cuts.append(Cut(len(kept), e.event.next_node))
        else:
            kept.append(e)
    return kept, cuts


def node_counter(cuts: list[Cut], cursor: int, counter: int) -> int:
    """Return the node counter once ``cursor`` events of the followed recording matched."""
    return max([counter] + [c.next_node for c in cuts if c.index <= cursor])


def past_divergence(
    run_id: str,
    recorded: list[StoredEvent],
    cursor: int,
    d: Divergence,
    current_type: str,
    counter: int,
) -> ResumedPastDivergence:
    """Return the marker of going on live at ``recorded[cursor]`` (where ``d`` happened).

    Raises:
        Divergence: ``d`` again when the run kept nothing of its own yet (it diverged at
            its agent's creation or its start): its recorded rows cannot be created twice.
    """
    prefix = recorded[:cursor]
    if not any(isinstance(e.event, RunStarted) for e in prefix) or isinstance(
        recorded[cursor].event, AgentCreated | RunStarted
    ):
        raise d
    first = recorded[cursor]
    assert first.run_seq is not None
    used = [
        int(m.group(1))
        for e in recorded[cursor:]
        if isinstance(e.event, NodeAppended)
        and (m := re.fullmatch(re.escape(run_id) + r":n(\d+)", e.event.node.node_id))
    ]
    return ResumedPastDivergence(
        run_seq=first.run_seq,
        seq=first.seq,
        recorded_type=first.event_type,
        current_type=current_type,
        reason=str(d),
        abandoned=len(recorded) - cursor,
        next_node=max([counter, *used]),
    )
