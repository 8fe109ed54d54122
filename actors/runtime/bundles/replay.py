"""Bundles as regression fixtures: replay one against today's code, re-record it.

:func:`replay_bundle` imports a session bundle (:mod:`actors.runtime.bundles.files`) into a
scratch home and replays it with the application's code — its team, tools and models,
an :class:`App` — returning the :class:`~actors.replay.report.ReplayReport` (what
``pytest --clew-replay`` turns into one test item per bundle; see docs/ci.md).

:func:`rerecord_bundle` accepts an intended change without running the agent live again:
when today's code diverges from the bundle, the session's last main run is rerun
(:func:`~actors.runtime.branching.rerun`) with today's role instructions, tools and
models, every unchanged model call served from the recording and only the changed ones
asked live (of ``App.model``). The rerun's fork must then replay identically with
today's code; it is written as the new bundle (the old session travels in it as its
parent). What is reported before anything is written: the divergence (the diff of the
two recordings' first difference) and the calls served and asked live.

Limits: a re-record re-executes the last main run only, and carries the roles'
instructions, tools and models — a change of the team's shared instructions, or of its
roles' catalogue, needs a live run (refused with ``UsageError``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from actors.errors import UsageError
from actors.models.chains import ModelArg
from actors.models.tools import Tool
from actors.orchestration.team import Team, resolve
from actors.recording.inputs import RoleRecord, RunInputs, TeamRecord
from actors.recording.recorded import RecordedModel, read_recording, run_started_of
from actors.replay.report import ReplayReport
from actors.runtime.branching import RerunReport
from actors.runtime.bundles.files import export_bundle, import_bundle
from actors.runtime.runtime import Runtime


@dataclass(frozen=True)
class App:
    """The application's code a bundle is replayed against (None: the recorded one)."""

    team: Team | None = None
    tools: Sequence[Tool] | None = None
    #: The models by name; a re-record asks them for the changed calls.
    model: ModelArg | None = None
    #: Run the idempotent ``tools`` again and compare their outputs.
    live_tools: bool = False


class Rerecorded(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`rerecord_bundle` did: the replay before, the rerun, where it wrote."""

    before: ReplayReport
    #: None when the bundle replayed identically (nothing was re-recorded).
    rerun: RerunReport | None = None
    file: str | None = None


def _replay(rt: Runtime, sid: str, app: App) -> ReplayReport:
    return rt.session(sid).replay(
        model=app.model, tools=app.tools, team=app.team, live_tools=app.live_tools
    )


def replay_bundle(file: str | Path, app: App | None = None) -> ReplayReport:
    """Replay the session of the bundle ``file`` against ``app`` (in a scratch home).

    Raises:
        BundleRefused: the file is not a readable, unaltered bundle.
    """
    app = app or App()
    with tempfile.TemporaryDirectory(prefix="clew-replay-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        project.mkdir()
        sid = import_bundle(home, file, project).session_id
        with Runtime(home, project) as rt:
            return _replay(rt, sid, app)


def rerecord_bundle(
    file: str | Path,
    app: App,
    *,
    out: str | Path | None = None,
    write: bool = True,
    confirm: Callable[[Rerecorded], bool] | None = None,
) -> Rerecorded:
    """Re-record the bundle ``file`` with ``app`` when it diverges; write the new bundle
    to ``out`` (default: over ``file``) unless ``write`` is False or ``confirm`` — shown
    what was re-recorded before anything is written — returns False.

    Raises:
        BundleRefused: the file is not a readable, unaltered bundle.
        UsageError: the change cannot be re-recorded from the recording (see the module
            docstring), or the re-recorded session still diverges (nothing is written).
    """
    with tempfile.TemporaryDirectory(prefix="clew-rerecord-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        project.mkdir()
        sid = import_bundle(home, file, project).session_id
        with Runtime(home, project) as rt:
            before = _replay(rt, sid, app)
            if before.identical:
                return Rerecorded(before=before)
            rerun = rt.session(sid).rerun(
                instructions=_instruction_changes(rt, sid, app),
                model=app.model,
                tools=app.tools,
                title="re-recorded",
            )
            after = _replay(rt, rerun.session_id, app)
        if not after.identical:
            raise UsageError(
                f"re-recording {sid} with today's code does not replay identically"
                f" ({after.summary()}); nothing was written"
            )
        done = Rerecorded(before=before, rerun=rerun)
        if not write or (confirm is not None and not confirm(done)):
            return done
        target = Path(out) if out is not None else Path(file)
        export_bundle(home, rerun.session_id, target, project)
        return msgspec.structs.replace(done, file=str(target))


def _instruction_changes(rt: Runtime, sid: str, app: App) -> dict[str, str]:
    """The roles whose instructions today's team changes, with today's text."""
    by_run, mains = read_recording(rt.store, sid)
    if not mains:
        raise UsageError(f"session {sid} has no main run to re-record")
    recorded = RunInputs.from_metadata(run_started_of(by_run[mains[-1]]).metadata).team
    today = resolve(app.team, app.tools or (), RecordedModel)[0].record() if app.team else None
    old, new = recorded or TeamRecord(), today or TeamRecord()
    if old.instructions != new.instructions:
        raise UsageError(
            f"today's team changes the shared instructions of {sid}'s team: re-recording"
            " carries role instructions, tools and models only (run it live)"
        )
    before = {r.name: r.instructions for r in _roles(old)}
    after = {r.name: r.instructions for r in _roles(new)}
    if set(before) != set(after):
        raise UsageError(
            f"today's team has other roles than {sid}'s recording: re-recording carries"
            " role instructions, tools and models only (run it live)"
        )
    return {name: text for name, text in after.items() if before[name] != text}


def _roles(team: TeamRecord) -> list[RoleRecord]:
    return [r for r in (*team.roles, team.router, team.summarizer) if r is not None]
