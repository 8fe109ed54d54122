"""Usage priced by model (``projections/costs.py``): cells of (model, role, phase), each
priced by its model, summed by model, role, phase or all."""

from __future__ import annotations

import math

from _events import stored_event
from hypothesis import given
from hypothesis import strategies as st
from strategies import usages

from eventlog.events import TokenUsage, Usage
from projections import usage
from projections.costs import (
    Price,
    by_model,
    by_nothing,
    by_phase,
    by_role,
    grouped,
    price_of,
    usage_cells,
)
from projections.usage import Totals


def test_a_price_charges_uncached_input_cache_and_output_tokens() -> None:
    totals = Totals(
        calls=1,
        input_tokens=1_000_000,
        output_tokens=500_000,
        cache_read_tokens=200_000,
        cache_write_tokens=100_000,
    )
    price = Price(input=2.0, output=8.0, cache_read=0.5)
    # 700k uncached × 2 + 200k × 0.5 + 100k × 2 (cache writes at the input price) + 500k × 8
    assert math.isclose(1.4 + 0.1 + 0.2 + 4.0, price.cost(totals))


def test_a_model_is_priced_by_its_name_or_the_name_after_its_provider() -> None:
    prices = {"openai:gpt-4o": Price(input=1, output=2), "claude-x": Price(input=3, output=4)}
    assert 1 == price_of(prices, "openai:gpt-4o").input  # type: ignore[union-attr]
    assert 3 == price_of(prices, "anthropic:claude-x").input  # type: ignore[union-attr]
    assert price_of(prices, "scripted:demo") is None


def test_a_group_mixing_priced_and_unpriced_calls_is_partial() -> None:
    events = [
        stored_event(
            1, TokenUsage(model="m1", role="lead", phase="primary", usage=Usage(input_tokens=10**6))
        ),
        stored_event(
            2, TokenUsage(model="m2", role="lead", phase="primary", usage=Usage(input_tokens=5))
        ),
    ]
    cells = usage_cells(events)
    [lead] = grouped(cells, {"m1": Price(input=3, output=0)}, by_role)
    assert ("lead", 2, 3.0, True) == (lead.name, lead.totals.calls, lead.cost, lead.partial)
    [unpriced] = grouped(cells, {}, by_nothing)
    assert (None, False) == (unpriced.cost, unpriced.partial)


CALLS = st.lists(
    st.tuples(
        st.sampled_from(["m1", "m2", "p:m3"]),
        st.sampled_from(["lead", "w"]),
        st.sampled_from(["route", "worker"]),
        usages(),
    ),
    max_size=30,
)


@given(CALLS)
def test_every_breakdown_sums_to_the_usage_totals_and_the_same_cost(
    calls: list[tuple[str, str, str, Usage]],
) -> None:
    events = [
        stored_event(i, TokenUsage(model=m, role=r, phase=p, usage=u))
        for i, (m, r, p, u) in enumerate(calls, start=1)
    ]
    cells = usage_cells([*events, *events])  # redelivered: counted once
    prices = {"m1": Price(input=1.5, output=6), "m3": Price(input=0.25, output=1, cache_read=0.1)}
    [total] = grouped(cells, prices, by_nothing) or [None]  # type: ignore[list-item]
    expected = usage.rebuild(events).total
    if total is None:
        assert Totals() == expected
        return
    assert expected == total.totals
    for by in (by_model, by_role, by_phase):
        groups = grouped(cells, prices, by)
        assert expected.total_tokens == sum(g.totals.total_tokens for g in groups)
        assert expected.calls == sum(g.totals.calls for g in groups)
        cost = sum(g.cost or 0.0 for g in groups)
        assert math.isclose(total.cost or 0.0, cost, rel_tol=1e-9, abs_tol=1e-9)
