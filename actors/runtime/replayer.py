"""Replay a recorded session: re-execute every main run against its recording.

Nothing is written to the recorded session: model replies and tool results come from
the recording, and the Task WAL is rebuilt in a scratch directory thrown away after.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from actors.errors import UsageError
from actors.models.chains import ModelArg
from actors.models.tools import Tool
from actors.orchestration.brain import RunKind, RunRequest, executor_for
from actors.orchestration.env import SessionEnv
from actors.orchestration.roster import Roster
from actors.orchestration.team import Team
from actors.recording.inputs import RunInputs
from actors.recording.recorded import read_recording, recorded_specs, run_started_of
from actors.replay.log import ReplayLog
from actors.replay.options import ReplayOptions, ToolTally
from actors.replay.report import LiveToolsCount, ReplayReport, build_report
from actors.replay.requests import StoreRequests
from actors.runtime.config import Chains, team_for_replay
from actors.runtime.engine import Engine
from actors.tasks.manager import task_manager
from eventlog.ids import validate_session_id

Progress = Callable[[int, int], None]


def replay_session(
    engine: Engine,
    session_id: str,
    *,
    model: ModelArg | None = None,
    tools: Sequence[Tool] | None = None,
    team: Team | None = None,
    progress: Progress | None = None,
    live_tools: bool = False,
    kind: RunKind | None = None,
) -> ReplayReport:
    """Re-execute every recorded main run of the session; return the comparison.

    ``model``/``tools``/``team`` default to stand-ins with the recorded names, specs and
    team (pass today's tools or team to check they still match what was recorded).
    ``live_tools``: run today's idempotent ``tools`` again with the recorded arguments
    and compare their outputs (a tool that is not idempotent is never run). ``kind``: a
    framework's agent, which re-executes the main runs of its kind (``RunKind``).

    Raises:
        UsageError: ``live_tools`` without ``tools`` (or ``team``) to run.
    """
    if live_tools and tools is None and team is None:
        raise UsageError("a replay with live tools needs today's tools (tools=…)")
    sid = validate_session_id(session_id)
    engine.store.read_session(sid)
    by_run, mains = read_recording(engine.store, sid)
    log = ReplayLog()
    tally = ToolTally()
    scratch = Path(tempfile.mkdtemp(prefix="clew-replay-"))
    try:
        with task_manager(scratch, sid, clock=engine.clock) as tasks:
            for i, run_id in enumerate(mains):
                started = run_started_of(by_run[run_id])
                inputs = RunInputs.from_metadata(started.metadata)
                env = _replay_env(
                    engine, sid, inputs, team_for_replay(inputs, team, tools, model),
                    project_dir=scratch, recording=by_run, replay_log=log,
                    replay_options=ReplayOptions(
                        recorded_specs=recorded_specs(inputs), live_tools=live_tools, tally=tally,
                        requests=StoreRequests(engine.store, sid),
                    ),
                )  # fmt: skip
                request = RunRequest(
                    run_id=run_id,
                    parent_node_id=started.start_node_id,
                    inputs=inputs,
                    attempt=started.attempt,
                )
                executor_for(kind, started.phase)(env, tasks, request)
                if progress is not None:
                    progress(i + 1, len(mains))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report = build_report(sid, by_run, log)
    if not live_tools:
        return report
    return msgspec.structs.replace(
        report, live_tools=LiveToolsCount(ran=tally.ran, not_run=tally.not_run)
    )


def _replay_env(
    engine: Engine, sid: str, inputs: RunInputs, team: tuple[Roster, Chains], **kw: Any
) -> SessionEnv:
    """Return the environment of a replayed run: no writer, never live; ``kw``: the rest."""
    roster, chains = team
    return SessionEnv(
        session_id=sid,
        store=engine.store,
        writer=None,
        clock=engine.clock,
        models=chains,
        tools=roster.tools,
        roster=roster,
        settings=inputs.settings,
        flow=inputs.flow,
        live_allowed=False,
        artifact_threshold=engine.store.artifact_threshold,
        **kw,
    )
