"""What every projection's state shares: ``fold`` one event, ``fold_all`` of them, value equality.

A state is a mutable object with ``apply(stored)``. Each projection module exports
``fold`` (this one) and a ``rebuild(events)`` that folds into a fresh state, so that
``rebuild(all) == fold after each event``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol, TypeVar

from eventlog.records import StoredEvent


class Folds(Protocol):
    """A projection state: folds one stored event in place."""

    def apply(self, stored: StoredEvent) -> None:
        """Fold one stored event into the state."""


S = TypeVar("S", bound=Folds)


def fold(state: S, stored: StoredEvent) -> S:
    """Fold one event into ``state`` and return it (updated in place)."""
    state.apply(stored)
    return state


def fold_all(state: S, events: Iterable[StoredEvent]) -> S:
    """Fold ``events`` (in seq order) into ``state`` and return it (updated in place)."""
    apply = state.apply
    for stored in events:
        apply(stored)
    return state


class ComparedByValue:
    """Base of a mutable state compared by value: equal when every ``_COMPARED`` attribute is.

    A mutable state must not be hashable, so ``__hash__`` is None.
    """

    __slots__ = ()

    #: The attributes two states of the same class must agree on to be equal.
    _COMPARED: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._COMPARED)

    __hash__ = None  # type: ignore[assignment]
