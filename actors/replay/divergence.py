"""A readable divergence: the first place a replay left its recording, and what followed.

A changed request makes one run diverge; everything after it in that run, and every run
it would have started, is only a consequence. The report names the first divergence
(the earliest recorded event, by session ``seq``) with the field that tells most —
a text's unified diff, or ``old → new`` — and folds the rest into counts: "and 3 later
events not reached".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from actors.divergences import FieldDiff, RunDivergence
from eventlog.records import StoredEvent

#: Fields that only say *that* something changed: named last, when nothing else differs.
_OPAQUE = ("request_hash",)
#: A value longer than this is cut in the one-line headline (the JSON has all of it).
_SHOWN = 160


class FirstDivergence(msgspec.Struct, frozen=True, kw_only=True):
    """The earliest divergence of a replay.

    ``field`` is its most telling changed field (a hash only when nothing else differs);
    ``recorded``/``current`` its two values, ``diff`` their unified diff when they are
    texts (``-`` recorded, ``+`` today); ``fields`` every changed field.
    """

    seq: int | None
    run_id: str
    run_seq: int | None
    event_type: str | None
    current_type: str | None
    field: str | None
    recorded: Any = None
    current: Any = None
    diff: list[str] = msgspec.field(default_factory=list)
    fields: list[FieldDiff] = msgspec.field(default_factory=list)

    def headline(self) -> str:
        """One line: where, what, and the change."""
        where = f"seq {self.seq}" if self.seq is not None else "past the recording"
        line = (
            f"{where} in run {self.run_id} (run_seq {self.run_seq}):"
            f" recorded {self.event_type}, today {self.current_type}"
        )
        if self.field is None:
            return line
        if self.diff:
            changed = " ".join(x for x in self.diff if x.startswith(("-", "+")))
            return f"{line}; {self.field} changed: {_cut(changed)}"
        return f"{line}; {self.field}: {_cut(repr(self.recorded))} → {_cut(repr(self.current))}"


class Consequences(msgspec.Struct, frozen=True, kw_only=True):
    """What only follows from the divergences, folded into counts.

    ``count``: recorded events never reached (after a run's divergence point, or in a run
    never reached); ``runs_not_reached``/``runs_not_recorded``: runs recorded and never
    run, or run and never recorded; ``other_divergences``: the other runs that diverged on
    their own (``same_change`` of them at the same field as the first).
    """

    count: int
    runs_not_reached: list[str] = msgspec.field(default_factory=list)
    runs_not_recorded: list[str] = msgspec.field(default_factory=list)
    other_divergences: list[str] = msgspec.field(default_factory=list)
    same_change: int = 0

    def fold(self) -> str:
        """The consequences as the tail of the report's one line."""
        out = ""
        if self.count:
            out += f"; and {self.count} later events not reached"
            if self.runs_not_reached:
                out += f" ({_runs(len(self.runs_not_reached))} never reached)"
        if self.runs_not_recorded:
            out += f"; {_runs(len(self.runs_not_recorded))} ran but never recorded"
        if self.other_divergences:
            same = f", {self.same_change} at the same field" if self.same_change else ""
            n = len(self.other_divergences)
            out += f"; {n} more {'run' if n == 1 else 'runs'} diverged{same}"
        return out


def telling(diff: list[FieldDiff]) -> FieldDiff | None:
    """Return the changed field that tells most: a text with a diff, else a value, else a hash."""
    plain = [d for d in diff if d.path not in _OPAQUE]
    for d in plain:
        if d.lines:
            return d
    return plain[0] if plain else (diff[0] if diff else None)


def fold(
    divergences: list[RunDivergence],
    recording: Mapping[str, list[StoredEvent]],
    compared: Mapping[str, int],
) -> tuple[FirstDivergence | None, Consequences | None]:
    """Return the first divergence and the consequences of them all (None, None: none)."""
    real = [d for d in divergences if d.kind == "diverged"]
    if not real:
        real = list(divergences)
    if not real:
        return None, None
    first = min(real, key=lambda d: (d.seq is None, d.seq or 0, d.run_id))
    field = telling(first.diff)
    head = FirstDivergence(
        seq=first.seq,
        run_id=first.run_id,
        run_seq=first.run_seq,
        event_type=first.expected_type,
        current_type=first.actual_type,
        field=field.path if field else None,
        recorded=field.expected if field else None,
        current=field.actual if field else None,
        diff=field.lines if field else [],
        fields=first.diff,
    )
    others = [d for d in real if d is not first and d.kind == "diverged"]
    not_reached = [d.run_id for d in divergences if d.kind == "not_reached"]
    later = sum(_after(recording.get(d.run_id, []), d.run_seq) for d in real)
    later += sum(len(recording.get(r, [])) - compared.get(r, 0) for r in not_reached)
    return head, Consequences(
        count=later,
        runs_not_reached=not_reached,
        runs_not_recorded=[d.run_id for d in divergences if d.kind == "unrecorded"],
        other_divergences=[d.run_id for d in others],
        same_change=sum(1 for d in others if _field(d) == head.field),
    )


def _after(events: list[StoredEvent], run_seq: int | None) -> int:
    """Return how many of a run's recorded events come after ``run_seq``."""
    if run_seq is None:
        return 0
    return sum(1 for e in events if e.run_seq is not None and e.run_seq > run_seq)


def _field(d: RunDivergence) -> str | None:
    f = telling(d.diff)
    return f.path if f else None


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def ordered(diff: list[FieldDiff]) -> list[FieldDiff]:
    """Return the changed fields with the ones that only say *that* it changed last."""
    return sorted(diff, key=lambda d: d.path in _OPAQUE)


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
