"""What a new main run records about its context: windows, the budget, the instruction file.

Resolved once, when the run starts, into the run's :class:`~actors.recording.inputs.ContextRecord`:
a replay or a resume reads the record back and never asks a model for its window or
reads the instruction file again (docs/context.md).
"""

from __future__ import annotations

import math
from pathlib import Path

from actors.errors import UsageError
from actors.models.protocol import Model
from actors.models.windows import window_of
from actors.orchestration.instructions import read_instructions
from actors.orchestration.roster import Roster
from actors.recording.inputs import ContextRecord, RunSettings


def context_record(
    settings: RunSettings, models: dict[str, list[Model]], roster: Roster, project: Path
) -> ContextRecord:
    """Return a new run's context record.

    Each model chain's window is its first model's ``context_window``; a role of the team
    that sets its own window overrides it.

    Raises:
        UsageError: ``context_budget`` is not in (0, 1], or the instruction file cannot
            be used (nothing is written).
    """
    budget = settings.context_budget
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not math.isfinite(budget):
        raise UsageError(f"context_budget must be a number in (0, 1], not {budget!r}")
    if not 0 < budget <= 1:
        raise UsageError(f"context_budget must be in (0, 1], not {budget}")
    windows: dict[str, int] = {}
    for key, chain in models.items():
        window = window_of(chain[0]) if chain else None
        if window is not None:
            windows[key] = window
    windows.update(roster.context_windows)
    instructions = read_instructions(
        project, settings.instructions_file, settings.instructions_max_bytes
    )
    return ContextRecord(budget=float(budget), windows=windows, instructions=instructions)
