"""The values a divergence is made of: one changed field, and where one run left its recording.

:class:`FieldDiff` is carried by a :class:`~actors.errors.Divergence` (the exception a
re-executed run raises), by a request diff and by the replay report;
:class:`RunDivergence` is one run's entry in the report, folded into its first
divergence and consequences. Plain values, importing nothing of ``actors``: they sit
below ``errors.py`` and ``replay/``, which both import them (house style 32). The code
that builds them lives in ``replay/`` (``diff``, ``divergence``, ``report``).
"""

from __future__ import annotations

from typing import Any

import msgspec


class FieldDiff(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One differing field: a dotted path, the recorded value and the re-executed one.

    ``lines`` is a unified diff (``-`` recorded, ``+`` re-executed) when both values are
    texts and at least one has several lines; empty (and left out of the JSON) otherwise.
    """

    path: str
    expected: Any
    actual: Any
    lines: list[str] = msgspec.field(default_factory=list)


class RunDivergence(msgspec.Struct, frozen=True, kw_only=True):
    """The first place one run's re-execution differs from its recording."""

    run_id: str
    run_seq: int | None
    expected_type: str | None
    actual_type: str | None
    diff: list[FieldDiff] = msgspec.field(default_factory=list)
    message: str = ""
    #: ``diverged`` (today's code emitted something else), ``not_reached`` (recorded,
    #: never reached: a consequence) or ``unrecorded`` (ran, never recorded: likewise).
    kind: str = "diverged"
    #: The session ``seq`` of the recorded event it diverged at (None: no such event).
    seq: int | None = None
