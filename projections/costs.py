"""Token usage by (model, role, phase), and its cost at per-model prices.

A fold over ``token_usage`` events, idempotent by event id like
:class:`projections.usage.UsageTotals`, which keeps each breakdown on its own; this one
keeps the cells of the three together, because a price belongs to a model: the cost of a
role or a phase is the sum of its cells, each priced by its model. Prices are data the
caller gives (``clew usage --prices``); nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import msgspec

from eventlog.events import TokenUsage
from eventlog.records import StoredEvent
from projections.usage import Totals

#: Tokens a price is quoted for.
PER_TOKENS = 1_000_000

#: A cell of the breakdown: (model, role, phase).
Cell = tuple[str, str, str]


class Price(msgspec.Struct, frozen=True, kw_only=True):
    """A model's price per million tokens (in one currency for the whole price list).

    ``cache_read`` / ``cache_write`` default to the input price: cached tokens are part of
    a call's input tokens (see :class:`~projections.usage.Totals`).
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, t: Totals) -> float:
        """Return what ``t`` costs at this price."""
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        uncached = max(0, t.input_tokens - t.cache_read_tokens - t.cache_write_tokens)
        spent = (
            uncached * self.input
            + t.cache_read_tokens * cache_read
            + t.cache_write_tokens * cache_write
            + t.output_tokens * self.output
        )
        return spent / PER_TOKENS


def price_of(prices: Mapping[str, Price], model: str) -> Price | None:
    """Return the price of ``model``: listed under its recorded name (``openai:gpt-4o``),
    else under the name after the provider (``gpt-4o``); None when it has none."""
    found = prices.get(model)
    if found is None and ":" in model:
        found = prices.get(model.split(":", 1)[1])
    return found


def usage_cells(events: Iterable[StoredEvent]) -> dict[Cell, Totals]:
    """Fold the ``token_usage`` events of ``events`` into totals per (model, role, phase)."""
    seen: set[str] = set()
    cells: dict[Cell, Totals] = {}
    for stored in events:
        event = stored.event
        if not isinstance(event, TokenUsage) or stored.event_id in seen:
            continue
        seen.add(stored.event_id)
        key = (event.model, event.role, event.phase)
        cells[key] = cells.get(key, Totals()).plus(event.usage)
    return cells


class Group(msgspec.Struct, kw_only=True):
    """The usage of one model, role or phase: its totals and, if priced, its cost."""

    name: str
    totals: Totals = Totals()
    #: None when no call of the group has a price.
    cost: float | None = None
    #: Some of the group's calls have no price: ``cost`` covers the others only.
    partial: bool = False


def by_model(cell: Cell) -> str:
    """Group a cell under its model (for :func:`grouped`)."""
    return cell[0]


def by_role(cell: Cell) -> str:
    """Group a cell under its role."""
    return cell[1]


def by_phase(cell: Cell) -> str:
    """Group a cell under its phase."""
    return cell[2]


def by_nothing(cell: Cell) -> str:
    """Group every cell together: the session's total."""
    return "total"


def grouped(
    cells: Mapping[Cell, Totals], prices: Mapping[str, Price], by: Callable[[Cell], str]
) -> list[Group]:
    """Return the cells summed by ``by`` (:func:`by_model`, :func:`by_role`,
    :func:`by_phase`, :func:`by_nothing`), the most tokens first; each cell is priced by
    its own model before it is summed."""
    groups: dict[str, Group] = {}
    for cell, totals in cells.items():
        name = by(cell)
        group = groups.setdefault(name, Group(name=name))
        group.totals = _sum(group.totals, totals)
        price = price_of(prices, cell[0])
        if price is None:
            group.partial = True
        else:
            group.cost = (group.cost or 0.0) + price.cost(totals)
    for g in groups.values():
        g.partial = g.partial and g.cost is not None
    return sorted(groups.values(), key=lambda g: (-g.totals.total_tokens, g.name))


def _sum(a: Totals, b: Totals) -> Totals:
    return Totals(
        calls=a.calls + b.calls,
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
    )
