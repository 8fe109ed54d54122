"""Token usage totals by model, role, phase and run, from ``token_usage`` events.

Idempotent by event id: folding the same stored event twice counts it once, so a
live fold that also sees a replayed tail never double counts.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from eventlog.events import TokenUsage, Usage
from eventlog.records import StoredEvent
from projections.folding import ComparedByValue, fold, fold_all

#: ``fold`` is :func:`projections.folding.fold`, exported here like every projection's.
__all__ = ["Totals", "UsageTotals", "fold", "rebuild"]


class Totals(msgspec.Struct, frozen=True, kw_only=True):
    """Summed usage of a group of model calls."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input + output tokens (cache reads and writes are part of the input)."""
        return self.input_tokens + self.output_tokens

    def plus(self, usage: Usage) -> Totals:
        """Return these totals with one more call of ``usage`` added."""
        return Totals(
            calls=self.calls + 1,
            input_tokens=self.input_tokens + usage.input_tokens,
            output_tokens=self.output_tokens + usage.output_tokens,
            cache_read_tokens=self.cache_read_tokens + usage.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + usage.cache_write_tokens,
        )


_ZERO = Totals()


class UsageTotals(ComparedByValue):
    """Token totals of one session (mutable, owned by its folder)."""

    __slots__ = ("_seen", "by_model", "by_phase", "by_role", "by_run", "total")
    _COMPARED = ("_seen", "total", "by_model", "by_role", "by_phase", "by_run")

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self.total = _ZERO
        self.by_model: dict[str, Totals] = {}
        self.by_role: dict[str, Totals] = {}
        self.by_phase: dict[str, Totals] = {}
        # Keyed by the envelope's run_id; "" for usage recorded outside a run.
        self.by_run: dict[str, Totals] = {}

    def apply(self, stored: StoredEvent) -> None:
        """Fold one event; anything but a not-yet-seen ``token_usage`` is ignored."""
        event = stored.event
        if not isinstance(event, TokenUsage) or stored.event_id in self._seen:
            return
        self._seen.add(stored.event_id)
        usage = event.usage
        self.total = self.total.plus(usage)
        for table, key in (
            (self.by_model, event.model),
            (self.by_role, event.role),
            (self.by_phase, event.phase),
            (self.by_run, stored.run_id or ""),
        ):
            table[key] = table.get(key, _ZERO).plus(usage)

    def __repr__(self) -> str:
        return f"UsageTotals({self.total!r})"


def rebuild(events: Iterable[StoredEvent]) -> UsageTotals:
    """Fold ``events`` into new totals."""
    return fold_all(UsageTotals(), events)
