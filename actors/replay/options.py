"""How a re-execution treats its recording beyond plain comparison.

:class:`ReplayOptions` is handed to every recorder of a replay or resume: the run's
recorded tool specs (so a changed request is described by its text, not its hash),
whether idempotent tools run again and their outputs are compared (``live_tools``),
and whether a resume goes on live past a divergence (``from_divergence``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from actors.models.protocol import ToolSpec
from actors.replay.requests import StoreRequests


class ToolTally:
    """Counts, thread-safely, the tool calls a live-tools replay ran and did not run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ran = 0
        self.not_run = 0

    def count(self, ran: bool) -> None:
        with self._lock:
            if ran:
                self.ran += 1
            else:
                self.not_run += 1


@dataclass(frozen=True)
class ReplayOptions:
    """See the module docstring."""

    #: The run's recorded tool specs by name (``RunInputs.tools``).
    recorded_specs: Mapping[str, ToolSpec] = field(default_factory=dict)
    #: Run each recorded call of an idempotent tool again and compare its output.
    live_tools: bool = False
    tally: ToolTally = field(default_factory=ToolTally)
    #: Resuming: at a divergence, keep the prefix, record it, and go on live.
    from_divergence: bool = False
    #: The recorded session's log, to rebuild a request recorded by reference (a
    #: divergence then shows its changed text); None: only by-value requests are shown.
    requests: StoreRequests | None = None
