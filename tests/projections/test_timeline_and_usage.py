# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from _events import stored_event
from _sequences import stored_histories
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.events import Event, ModelRequested, TokenUsage, Usage
from eventlog.records import StoredEvent
from projections import timeline, usage
from projections.usage import Totals


def stored(seq: int, event: Event, run_id: str | None = None, agent: str = "a") -> StoredEvent:
    return stored_event(seq, event, run_id=run_id, agent_id=agent, created_at="same time")


def tokens(model: str, role: str, phase: str, n: int) -> TokenUsage:
    return TokenUsage(
        model=model, role=role, phase=phase, usage=Usage(input_tokens=n, output_tokens=1)
    )


def test_usage_totals_group_by_model_role_phase_and_run() -> None:
    totals = usage.rebuild(
        [
            stored(1, tokens("m1", "brain", "route", 10), run_id="r1"),
            stored(2, tokens("m2", "worker", "work", 5), run_id="r2"),
            stored(3, tokens("m1", "worker", "work", 1), run_id="r2"),
            stored(4, ModelRequested(call_index=0, model="m1", request_hash="h")),
        ]
    )
    assert Totals(calls=3, input_tokens=16, output_tokens=3) == totals.total
    assert Totals(calls=2, input_tokens=11, output_tokens=2) == totals.by_model["m1"]
    assert Totals(calls=2, input_tokens=6, output_tokens=2) == totals.by_role["worker"]
    assert Totals(calls=1, input_tokens=10, output_tokens=1) == totals.by_phase["route"]
    assert Totals(calls=2, input_tokens=6, output_tokens=2) == totals.by_run["r2"]


def test_folding_the_same_usage_event_twice_counts_it_once() -> None:
    event = stored(1, tokens("m1", "brain", "route", 10))
    totals = usage.UsageTotals()
    usage.fold(totals, event)
    usage.fold(totals, event)
    assert Totals(calls=1, input_tokens=10, output_tokens=1) == totals.total


@settings(max_examples=60, deadline=None)
@given(stored_histories(), st.data())
def test_usage_and_timeline_are_idempotent_under_redelivery(
    events: list[StoredEvent], data: st.DataObject
) -> None:
    again = data.draw(st.lists(st.sampled_from(events))) if events else []
    assert usage.rebuild(events) == usage.rebuild([*events, *again])
    assert timeline.rebuild(events) == timeline.rebuild([*events, *again])


@settings(max_examples=60, deadline=None)
@given(stored_histories(), st.randoms())
def test_the_timeline_orders_by_seq_whatever_the_arrival_order(
    events: list[StoredEvent], rnd: object
) -> None:
    shuffled = list(events)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert events == timeline.rebuild(shuffled).events


def test_the_timeline_filters_by_run_agent_type_and_seq() -> None:
    tl = timeline.rebuild(
        [
            stored(1, tokens("m", "r", "p", 1), run_id="r1", agent="a"),
            stored(2, ModelRequested(call_index=0, model="m", request_hash="h"), run_id="r1"),
            stored(3, tokens("m", "r", "p", 1), run_id="r2", agent="b"),
        ]
    )
    assert [1, 2] == [e.seq for e in tl.filter(run_id="r1")]
    assert [3] == [e.seq for e in tl.filter(agent_id="b")]
    assert [1, 3] == [e.seq for e in tl.filter(event_types={"token_usage"})]
    assert [3] == [e.seq for e in tl.filter(after_seq=2)]
