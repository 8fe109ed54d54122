"""The replay report: what re-executing a recorded session found, run by run.

Besides every run's divergence, the report names the *first* divergence (the earliest
in the session's log, with its changed field and text diff) and folds what only follows
from it — runs never reached, runs that ran but were never recorded, later events of a
diverged run — into :class:`Consequences` counts (``divergence.py`` builds them).
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.divergences import RunDivergence
from actors.errors import Divergence
from actors.replay.cuts import follow_cuts
from actors.replay.divergence import Consequences, FirstDivergence, fold
from actors.replay.log import ReplayLog
from eventlog.records import StoredEvent


class LiveToolsCount(msgspec.Struct, frozen=True, kw_only=True):
    """A live-tools replay's tool calls: run again and compared, or not run (not idempotent)."""

    ran: int
    not_run: int


class ReplayReport(msgspec.Struct, frozen=True, kw_only=True):
    """``identical`` when every recorded run reproduced event for event."""

    session_id: str
    identical: bool
    events: int
    runs: int
    divergences: list[RunDivergence]
    incomplete_runs: list[str] = msgspec.field(default_factory=list)
    first_divergence: FirstDivergence | None = None
    consequences: Consequences | None = None
    live_tools: LiveToolsCount | None = None

    def summary(self) -> str:
        """One line for humans."""
        if self.identical:
            line = f"{self.events} events in {self.runs} runs reproduced identically"
            if self.incomplete_runs:
                line += f" ({len(self.incomplete_runs)} interrupted runs checked up to their end)"
            return line
        first, then = self.first_divergence, self.consequences
        if first is None or then is None:  # pragma: no cover - built with both
            return f"{len(self.divergences)} of {self.runs} runs diverged"
        return f"diverged: {first.headline()}{then.fold()}"

    def to_json(self) -> dict[str, Any]:
        """The report as builtins (for ``--json``)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


def _from(run_id: str, d: Divergence) -> RunDivergence:
    return RunDivergence(
        run_id=run_id,
        run_seq=d.run_seq,
        expected_type=d.expected_type,
        actual_type=d.actual_type,
        diff=d.diff,
        message=str(d),
    )


def build_report(
    session_id: str, recording: dict[str, list[StoredEvent]], log: ReplayLog
) -> ReplayReport:
    """Compare what the re-execution did (``log``) with the recording, run by run."""
    divergences: list[RunDivergence] = []
    incomplete: list[str] = []
    events = 0
    recording = {run_id: follow_cuts(events)[0] for run_id, events in recording.items()}
    for run_id, recorded in recording.items():
        found = _check_recorded(run_id, recorded, log)
        if isinstance(found, RunDivergence):
            divergences.append(found)
            continue
        if found:
            # An interrupted recording, checked up to its end.
            incomplete.append(run_id)
        events += log.compared.get(run_id, 0)
    divergences += _unrecorded(recording, log)
    divergences.sort(key=lambda d: d.run_id)
    divergences = [_with_seq(d, recording) for d in divergences]
    first, consequences = fold(divergences, recording, log.compared)
    return ReplayReport(
        session_id=session_id,
        identical=not divergences,
        events=events,
        runs=len(recording),
        divergences=divergences,
        incomplete_runs=sorted(incomplete),
        first_divergence=first,
        consequences=consequences,
    )


def _with_seq(d: RunDivergence, recording: dict[str, list[StoredEvent]]) -> RunDivergence:
    """Return ``d`` with the session ``seq`` of the recorded event it diverged at."""
    at = next((e.seq for e in recording.get(d.run_id, []) if e.run_seq == d.run_seq), None)
    return msgspec.structs.replace(d, seq=at)


def _check_recorded(
    run_id: str, recorded: list[StoredEvent], log: ReplayLog
) -> RunDivergence | bool:
    """Return the divergence of a recorded run, else whether it ended early (interrupted)."""
    d = log.divergences.get(run_id)
    if d is not None:
        return _from(run_id, d)
    if run_id not in log.executed:
        return RunDivergence(
            run_id=run_id,
            run_seq=recorded[0].run_seq,
            expected_type=recorded[0].event_type,
            actual_type=None,
            message=f"run {run_id} was recorded but today's code never ran it",
            kind="not_reached",
        )
    if run_id in log.ended_early:
        return True
    compared = log.compared.get(run_id, 0)
    if compared < len(recorded):
        nxt = recorded[compared]
        return RunDivergence(
            run_id=run_id,
            run_seq=nxt.run_seq,
            expected_type=nxt.event_type,
            actual_type="(end of run)",
            message=f"run {run_id} stopped at run_seq {nxt.run_seq}:"
            f" expected {nxt.event_type}, got the end of the run",
        )
    return False


def _unrecorded(recording: dict[str, list[StoredEvent]], log: ReplayLog) -> list[RunDivergence]:
    """Return the divergences of runs that re-executed but were never recorded."""
    out: list[RunDivergence] = []
    for run_id in log.executed:
        # A run with no recording that stopped at its first event was about to start when
        # an interrupted recording ended: not a divergence.
        if run_id in log.ended_early:
            continue
        if run_id not in recording and run_id not in log.divergences:
            out.append(
                RunDivergence(
                    run_id=run_id,
                    run_seq=None,
                    expected_type=None,
                    actual_type="run_started",
                    message=f"run {run_id} ran but was never recorded",
                    kind="unrecorded",
                )
            )
    out += [_from(run_id, d) for run_id, d in log.divergences.items() if run_id not in recording]
    return out
