"""A session's token usage by model, role and phase: ``clew usage --json`` (with the
cost where prices are given) and the inspector's usage tables (tokens only), the second
derived from the first; the usage cells a long-lived inspector folds once per session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from actors.runtime.runtime import Runtime
from projections.costs import (
    Cell,
    Group,
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

#: The breakdowns, in the order they are shown: (JSON key, column title, grouping).
BREAKDOWNS: tuple[tuple[str, str, Callable[[Cell], str]], ...] = (
    ("by_model", "model", by_model),
    ("by_role", "role", by_role),
    ("by_phase", "phase", by_phase),
)


def _group_json(g: Group) -> dict[str, Any]:
    t = g.totals
    return {
        "name": g.name,
        "calls": t.calls,
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
        "cache_read_tokens": t.cache_read_tokens,
        "cache_write_tokens": t.cache_write_tokens,
        "total_tokens": t.total_tokens,
        "cost": None if g.cost is None else round(g.cost, 6),
        "partial": g.partial,
    }


def usage_doc(
    sid: str, cells: Mapping[Cell, Totals], currency: str, prices: Mapping[str, Price]
) -> dict[str, Any]:
    """Return ``clew usage --json``."""
    total = grouped(cells, prices, by_nothing) or [Group(name="total")]
    models = sorted({cell[0] for cell in cells})
    return {
        "session_id": sid,
        "currency": currency if prices else None,
        "total": _group_json(total[0]),
        **{key: [_group_json(g) for g in grouped(cells, prices, by)] for key, _, by in BREAKDOWNS},
        "unpriced_models": [m for m in models if price_of(prices, m) is None] if prices else [],
    }


class UsageCache:
    """Each session's usage cells, folded once and then only over the events that landed
    since (the first look at a session of 10⁵ events reads them all; the next ones don't)."""

    def __init__(self) -> None:
        self._cells: dict[str, tuple[int, dict[Cell, Totals]]] = {}
        self._lock = threading.Lock()

    def cells(self, rt: Runtime, sid: str) -> dict[Cell, Totals]:
        with self._lock:
            last, cells = self._cells.get(sid, (0, {}))
            events = rt.store.iter_events(sid) if last == 0 else rt.store.read_events(sid, last)
            seen = last
            fresh = []
            for e in events:
                if e.seq > seen:
                    fresh.append(e)
                    seen = e.seq
            merged = dict(cells)
            for key, totals in usage_cells(fresh).items():
                old = merged.get(key, Totals())
                merged[key] = Totals(
                    calls=old.calls + totals.calls,
                    input_tokens=old.input_tokens + totals.input_tokens,
                    output_tokens=old.output_tokens + totals.output_tokens,
                    cache_read_tokens=old.cache_read_tokens + totals.cache_read_tokens,
                    cache_write_tokens=old.cache_write_tokens + totals.cache_write_tokens,
                )
            self._cells[sid] = (seen, merged)
            return merged


def tokens_doc(rt: Runtime, sid: str, cache: UsageCache | None = None) -> dict[str, Any]:
    """Return the inspector's usage: :func:`usage_doc`'s breakdowns without prices, each
    group's calls and tokens (an unnamed group shown as ``-``)."""
    doc = usage_doc(sid, (cache or UsageCache()).cells(rt, sid), "", {})
    keep = ("calls", "input_tokens", "output_tokens", "total_tokens")
    out: dict[str, Any] = {"session_id": sid}
    for key, _, _ in BREAKDOWNS:
        out[key] = [{"name": g["name"] or "-", **{k: g[k] for k in keep}} for g in doc[key]]
    return out
