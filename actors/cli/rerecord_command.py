"""``clew rerecord BUNDLE --team FILE``: accept an intended change of a recorded session
without running the agent live again (:func:`~actors.runtime.bundles.replay.rerecord_bundle`):
the diff is shown first, then the bundle is rewritten."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from actors.cli import render
from actors.cli.app import app
from actors.cli.options import BaseUrl, TeamOption
from actors.cli.output import clipped
from actors.cli.recipes import build_model
from actors.cli.team_file import load_team
from actors.errors import UsageError
from actors.models.protocol import Model
from actors.orchestration.team import Team
from actors.recording.recorded import session_tools
from actors.runtime.bundles.files import import_bundle
from actors.runtime.bundles.replay import App, Rerecorded, rerecord_bundle
from actors.runtime.runtime import Runtime


def _team(file: str, bundle: str, base_url: str | None) -> Team:
    """Load the team file over the bundle's recorded tools (stand-ins: never run)."""

    def model_of(spec: str) -> Model:
        return build_model(spec, env=os.environ, base_url=base_url)

    with tempfile.TemporaryDirectory(prefix="clew-rerecord-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        project.mkdir()
        sid = import_bundle(home, bundle, project).session_id
        with Runtime(home, project, read_only=True) as rt:
            tools = dict(session_tools(rt.store, sid))
    return load_team(file, tools=tools, build_model=model_of)


@app.command()
def rerecord(
    bundle: Annotated[str, typer.Argument(metavar="BUNDLE", help="a session bundle file")],
    team_file: TeamOption = None,
    model: Annotated[
        str | None,
        typer.Option("--model", metavar="SPEC", help="the model asked for the changed calls"),
    ] = None,
    base_url: BaseUrl = None,
    out: Annotated[
        str | None, typer.Option("--out", metavar="FILE", help="write here (default: BUNDLE)")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="show the diff; write nothing")
    ] = False,
) -> None:
    """Re-record BUNDLE with today's team: its last run re-executed, unchanged model calls
    served from the recording, changed ones asked of --model; shows the diff, then writes."""
    if team_file is None:
        raise UsageError("clew rerecord needs --team FILE: today's team to re-record with")
    team = _team(team_file, bundle, base_url)
    live = build_model(model, env=os.environ, base_url=base_url) if model else None
    code = App(team=team, model=live)

    def show(done: Rerecorded) -> bool:
        print("\n".join(render.replay_lines(done.before)))
        if done.rerun is not None:
            rerun = done.rerun
            print(f"re-recorded as {rerun.session_id}: {rerun.served_calls} model calls"
                  f" served from the recording, {rerun.live_calls} asked live")  # fmt: skip
        return not dry_run

    done = rerecord_bundle(bundle, code, out=out, confirm=show)
    if done.rerun is None:
        print(f"{clipped(bundle)}: {done.before.summary()}; nothing to re-record")
    elif done.file is not None:
        print(f"wrote {clipped(done.file)}")
