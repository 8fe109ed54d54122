"""``clew demo``, ``clew run``, ``clew resume``: the commands that run a session."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import typer

from actors.cli import render
from actors.cli.app import app
from actors.cli.options import (
    BaseUrl,
    Home,
    Json,
    ModelOverride,
    Project,
    SessionArg,
    SessionOption,
    TeamOption,
    Where,
    open_runtime,
    open_session,
    where_from,
)
from actors.cli.output import exit_with, fail, print_json, utf8_text
from actors.cli.progress import Progress
from actors.cli.read_commands import print_tasks, print_tree
from actors.cli.recipes import (
    ModelRecipe,
    build_model,
    check_reachable,
    load_agent,
    models_for_resume,
    recipe_of,
    team_from_file,
)
from actors.cli.team_file import DEMO_TEAM
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.errors import SessionBusy, StillWaiting, UsageError
from actors.models.protocol import Model
from actors.models.scripted import MAX_DELAY_MS
from actors.models.tools import Tool
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Team
from actors.runtime.runtime import Runtime
from actors.runtime.session import Session
from actors.runtime.start import check_prompt
from eventlog.errors import ReplayDivergence, StoreError
from eventlog.events import ModelFailed
from eventlog.records import SessionRow

if TYPE_CHECKING:
    from actors.orchestration.brain import RunKind


def _print_now(line: str) -> None:
    print(line, flush=True)


@app.command()
def demo(
    workers: Annotated[int, typer.Option(min=1, max=32, help="number of workers")] = 3,
    slow: Annotated[
        int, typer.Option(metavar="MS", min=0, max=MAX_DELAY_MS, help="delay per model call")
    ] = 0,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Run the built-in scripted scenario, show its tree and DAG, and replay-check it."""
    where = where_from(home, project)
    check_recordable(where)
    out = render.make_console()
    # The shipped team file: the default team over the demo's tools (same events as ever).
    team = _team(str(DEMO_TEAM), demo_tools(where.project), base_url=None)
    with open_runtime(where) as rt:
        recipe = ModelRecipe(scenario="demo", workers=workers)
        session = rt.new_session(metadata=msgspec.to_builtins(recipe))
        if not as_json:
            # Printed (and flushed) first, so a person or a test can kill the run and resume it.
            out.print(f"session {session.id}")
            sys.stdout.flush()
        model = demo_model(workers, slow)
        if as_json:
            outcome = session.run(DEMO_PROMPT, model=model, team=team)
        else:
            # Live progress from the first second: one line per step as its events land.
            handle = session.start(DEMO_PROMPT, model=model, team=team)
            Progress(session.id, _print_now).follow(handle.stream())
            outcome = handle.result()
        report = rt.replay(session.id)
        ok = outcome.status == "completed" and report.identical
        if as_json:
            print_json({**outcome_json(outcome), "replay": report.to_json()})
            exit_with(0 if ok else 1)
            return
        out.print(f"status: {outcome.status}")
        out.print(f"answer: {outcome.answer or outcome.error or outcome.question}")
        print_tree(rt, session.id)
        print_tasks(rt, rt.store.read_session(session.id))
        out.print(f"replay check: {report.summary()}")
        out.print(
            f"next: clew show {session.id} · clew timeline {session.id} · clew replay {session.id}"
        )
    exit_with(0 if ok else 1)


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="the user request")],
    model: Annotated[
        str,
        typer.Option(
            "--model", metavar="SPEC", help="scripted:PATH, openai:<model> or anthropic:<model>"
        ),
    ],
    fallback: Annotated[
        list[str] | None,
        typer.Option(
            "--fallback", metavar="SPEC", help="a fallback model (repeatable, tried in order)"
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url", metavar="URL", help="provider base URL (else OPENAI_/ANTHROPIC_BASE_URL)"
        ),
    ] = None,
    team_file: TeamOption = None,
    session_id: SessionOption = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Run PROMPT with a model chain (and a team), in a new session or a given one."""
    where = where_from(home, project)
    specs = [model, *(fallback or [])]
    # Everything that can be refused is checked before anything is written.
    _check_run_input(where, prompt, specs, base_url)
    sid = _existing_session(where, session_id) if session_id is not None else None
    models = [build_model(s, env=os.environ, base_url=base_url) for s in specs]
    team = _team(team_file, [], base_url) if team_file is not None else None
    check_reachable(specs, os.environ, base_url)
    recipe = ModelRecipe(
        scenario="run",
        model=model,
        fallback=specs[1:],
        base_url=base_url,
        team=str(Path(team_file).resolve()) if team_file is not None else None,
    )
    rt = open_runtime(where)
    try:
        session = _session(rt, sid, recipe)
        outcome = session.run(prompt, model=models, team=team)
        gave_up = outcome.status == "failed" and any(
            isinstance(e.event, ModelFailed) and not e.event.will_fallback
            for e in rt.store.iter_events(session.id)
        )
    finally:
        rt.close()
        for m in models:
            close = getattr(m, "close", None)
            if close is not None:
                close()
    _report(outcome, gave_up=gave_up, as_json=as_json)


def _check_run_input(where: Where, prompt: str, specs: list[str], base_url: str | None) -> None:
    """Refuse, before the session exists, text it could not record or an empty prompt."""
    check_recordable(
        where,
        ("the prompt", prompt),
        *(("a --model spec", s) for s in specs),
        ("--base-url", base_url),
    )
    check_prompt(prompt)


def _existing_session(where: Where, session_id: str) -> str:
    """Return the id of the session ``--session`` names (an id, a prefix, ``last``);
    refuse an unknown one. Read-only: nothing is written before every check passed."""
    with open_session(msgspec.structs.replace(where, read_only=True), session_id) as (_, row):
        return row.session_id


def _session(rt: Runtime, sid: str | None, recipe: ModelRecipe) -> Session:
    """Return the session to run in: the given one (``UnknownSession`` if absent), or a new
    one recording how its models were built."""
    if sid is not None:
        return rt.session(sid)
    return rt.new_session(metadata=msgspec.to_builtins(recipe))


def going_on_with(
    rt: Runtime,
    row: SessionRow,
    *,
    model: str | None,
    base_url: str | None,
    team_file: str | None,
    slow: int | None = None,
) -> tuple[list[Model], list[Tool], Team | None]:
    """Return the models, tools and team a session goes on with (``resume``, ``retry``):
    those it was created with, or ``--model`` / ``--team`` instead where given."""
    models, tools = models_for_resume(
        row,
        env=os.environ,
        project_dir=rt.session_dir(row.session_id),
        slow_ms=slow,
        override=[model] if model else [],
        base_url=base_url,
    )
    recipe = recipe_of(row)
    chosen = team_file or (recipe.team if recipe is not None else None)
    team = _team(chosen, tools, base_url) if chosen is not None else None
    return models, tools, team


def _team(path: str, tools: list[Tool], base_url: str | None) -> Team:
    """Load a team file; its model specs are built like ``--model``'s."""
    return team_from_file(path, tools, base_url)


def outcome_json(outcome: RunOutcome) -> dict[str, Any]:
    """Return a run outcome as JSON builtins (a typed ``output`` as its JSON)."""

    def typed(value: Any) -> Any:
        dump = getattr(value, "model_dump", None)
        if dump is None:
            raise TypeError(f"cannot encode {type(value).__name__}")
        return dump(mode="json")

    out: dict[str, Any] = msgspec.to_builtins(outcome, enc_hook=typed)
    return out


def check_recordable(where: Where, *texts: tuple[str, str | None]) -> None:
    """Refuse, before a session exists, text the session would record but cannot store.

    The project dir is recorded in ``session_created``; prompts, specs and URLs in the
    run's events. An argument with bytes that are not UTF-8 reaches Python as lone
    surrogates, which no event can hold: the run would stop half-way (``run_ended``
    without ``run_started``) instead of being refused.

    Raises:
        UsageError: naming the argument and the bad byte.
    """
    utf8_text("the --project path", str(where.project))
    for what, value in texts:
        if value is not None:
            utf8_text(what, value)


def _report(outcome: RunOutcome, *, gave_up: bool, as_json: bool) -> None:
    """Print a run's outcome; exit 1 if it failed (2 if no model could be used at all)."""
    if as_json:
        print_json(outcome_json(outcome))
    elif outcome.status == "completed":
        print(outcome.answer)
        print(f"session {outcome.session_id} ({outcome.status})", file=sys.stderr)
    elif outcome.status == "needs_clarification":
        print(f"needs clarification: {outcome.question}")
        print(f"session {outcome.session_id}", file=sys.stderr)
    elif outcome.status == "waiting":
        calls = ", ".join(f"{p.tool_call_id} ({p.tool_name})" for p in outcome.pending)
        print(f"waiting for approval: {calls}")
        print(f"session {outcome.session_id} (waiting: clew pending)", file=sys.stderr)
    if outcome.status in ("completed", "needs_clarification", "waiting"):
        return
    if gave_up:
        # The model could not be used at all (every candidate failed): a config problem.
        fail(f"the model failed: {outcome.error} (recorded in session {outcome.session_id})", 2)
    fail(f"run {outcome.status}: {outcome.error} (session {outcome.session_id})")


FromDivergence = Annotated[
    bool,
    typer.Option(
        "--from-divergence",
        help="where today's code diverges from the recording, keep the recorded prefix,"
        " record it (resumed_past_divergence) and go on live",
    ),
]


def _resume(
    rt: Runtime,
    sid: str,
    made_of: tuple[list[Model], list[Tool], Team | None] | RunKind,
    past: bool,
) -> RunOutcome:
    """Resume ``sid`` (with its models, tools and team, or the framework agent that made
    it); a refusal or an environment failure is one line on stderr."""
    try:
        if not isinstance(made_of, tuple):
            return rt.resume(sid, agent=made_of, from_divergence=past)
        models, tools, team = made_of
        return rt.resume(sid, model=models, tools=tools, team=team, from_divergence=past)
    except ReplayDivergence as e:
        # A refusal (exit 2): nothing was written; the flag is the way past it.
        hint = "" if past else f" (clew resume {sid} --from-divergence goes on past it)"
        fail(f"{e}{hint}", code=2)
    except StoreError as e:
        # An environment failure (disk full, I/O error, a lock held too long): say so,
        # and that the session is still there to resume.
        again = f"once the cause is fixed, resume it: clew resume {sid}"
        fail(f"resume of session {sid} stopped: {e}; {again}")


@app.command()
def resume(
    session: SessionArg,
    slow: Annotated[
        int | None,
        typer.Option(metavar="MS", min=0, max=MAX_DELAY_MS, help="delay per scripted model call"),
    ] = None,
    model: ModelOverride = None,
    base_url: BaseUrl = None,
    team_file: TeamOption = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
    from_divergence: FromDivergence = False,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="MODULE:CALLABLE",
            help="the framework agent that made the run (a callable returning it:"
            " a DurableAgent, a DurableRunner)",
        ),
    ] = None,
) -> None:
    """Finish an interrupted session: replay it to the end of its log, then go on live."""
    where = where_from(home, project)
    check_recordable(where, ("a --model spec", model), ("--base-url", base_url))
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        if not rt.interrupted_runs(sid) and not rt.waiting(sid):
            if rt.is_owned(sid):
                raise SessionBusy(f"session {sid} is in use by another process")
            raise UsageError(f"session {sid} has no interrupted run; nothing to resume")
        for state in rt.waiting(sid):
            if not state.ready:  # named before the model is asked for (it may be unknown)
                raise StillWaiting(
                    f"session {sid} is still waiting for {state.describe()};"
                    f" decide first (clew pending {sid})"
                )
        made_of = (
            load_agent(agent)
            if agent is not None
            else going_on_with(
                rt, row, model=model, base_url=base_url, team_file=team_file, slow=slow
            )
        )
        outcome = _resume(rt, sid, made_of, from_divergence)
    if as_json:
        print_json(outcome_json(outcome))
    elif outcome.status == "interrupted":
        # Stopped by its environment again (the runtime says what, and how to go on):
        # one error line, like the failure raised above, never "stopped by a divergence".
        fail(f"resume of session {sid} stopped: {outcome.error}")
    else:
        print(f"session {sid}: {outcome.status}")
        print(outcome.answer or outcome.error or outcome.question or "")
    exit_with(0 if outcome.status in ("completed", "needs_clarification", "waiting") else 1)
