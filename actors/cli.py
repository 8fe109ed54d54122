"""The ``clew`` command line: demo, run, inspect, replay, resume, verify, export.

Names, flags, exit codes and JSON shapes are a contract, documented in ``docs/cli.md``.
Exit codes: 0 success; 1 the work ran and found a problem (a divergence, a failed run,
a verify problem); 2 bad input or a refused request — one line on stderr, nothing written.
The CLI is the one place that configures logging: structlog renders warnings and above
to stderr, so ``--json`` output on stdout is never polluted.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Annotated

import msgspec
import typer

from actors import cli_render as render
from actors.cli_logging import configure_logging
from actors.cli_plumbing import (
    BEFORE_COMMAND,
    Where,
    exit_with,
    fail,
    home_exists,
    on_interrupt,
    one_line,
    open_runtime,
    open_session,
    print_json,
    stderr_is_tty,
    usage_error,
    where_from,
)
from actors.cli_support import (
    CliError,
    ModelRecipe,
    build_model,
    check_reachable,
    check_session,
    event_row,
    inspect_wals,
    main_run_ids,
    models_for_resume,
    resolve_run,
    tasks_doc,
    tree_doc,
)
from actors.demo import DEMO_PROMPT, demo_model, demo_tools
from actors.runtime import NothingToResume, Runtime, SessionBusy
from eventlog.errors import (
    ClewError,
    InvalidName,
    InvalidSessionId,
    ReplayDivergence,
)
from eventlog.errors import UnknownSession as UnknownSessionError
from eventlog.events import EVENT_TYPES, ModelFailed
from eventlog.records import SessionRow
from projections.tree import NodeTree, UnknownNode, check_switch_target

app = typer.Typer(
    name="clew",
    help="clew: an event-sourced actor runtime for LLM agent sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: Errors that mean "bad input or refused": exit 2, one line, nothing written.
_REFUSED: tuple[type[BaseException], ...] = (
    CliError,
    InvalidSessionId,
    InvalidName,
    UnknownSessionError,
    UnknownNode,
    NothingToResume,
    SessionBusy,
)

Home = Annotated[
    str | None,
    typer.Option("--home", metavar="DIR", help="clew home (default: $CLEW_HOME, else ~/.clew)",
                 show_default=False),
]
Project = Annotated[
    str | None,
    typer.Option("--project", metavar="DIR", help="project dir holding .clew/tasks (default: cwd)",
                 show_default=False),
]
Json = Annotated[bool, typer.Option("--json", help="print one JSON document and nothing else")]
SessionArg = Annotated[str, typer.Argument(metavar="SESSION", help="a session id")]


@app.callback()
def _root(home: Home = None, project: Project = None) -> None:
    """clew: an event-sourced actor runtime for LLM agent sessions.

    --home and --project work before the command or after it.
    """
    BEFORE_COMMAND.update(home=home, project=project)


# --- running ----------------------------------------------------------------------------


@app.command()
def demo(
    workers: Annotated[int, typer.Option(min=1, max=32, help="number of workers")] = 3,
    slow: Annotated[int, typer.Option(metavar="MS", min=0, help="delay per model call")] = 0,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Run the built-in scripted scenario, show its tree and DAG, and replay-check it."""
    where = where_from(home, project)
    out = render.make_console()
    rt = open_runtime(where)
    try:
        recipe = ModelRecipe(scenario="demo", workers=workers)
        session = rt.new_session(metadata=msgspec.to_builtins(recipe))
        if not as_json:
            # Printed (and flushed) first, so a person or a test can kill the run and resume it.
            out.print(f"session {session.id}")
            sys.stdout.flush()
        outcome = session.run(
            DEMO_PROMPT, model=demo_model(workers, slow), tools=demo_tools(where.project)
        )
        report = rt.replay(session.id)
        ok = outcome.status == "completed" and report.identical
        if as_json:
            print_json({**msgspec.to_builtins(outcome), "replay": report.to_json()})
            exit_with(0 if ok else 1)
            return
        out.print(f"status: {outcome.status}")
        out.print(f"answer: {outcome.answer or outcome.error or outcome.question}")
        _print_tree(rt, session.id)
        _print_tasks(rt, where, session.id, rt.store.read_session(session.id))
        out.print(f"replay check: {report.summary()}")
        out.print(f"next: clew show {session.id} · clew timeline {session.id}"
                  f" · clew replay {session.id}")
    finally:
        rt.close()
    exit_with(0 if ok else 1)


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="the user request")],
    model: Annotated[str, typer.Option("--model", metavar="SPEC",
                                       help="scripted:PATH, openai:<model> or anthropic:<model>")],
    fallback: Annotated[list[str] | None, typer.Option(
        "--fallback", metavar="SPEC", help="a fallback model (repeatable, tried in order)")] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", metavar="URL", help="provider base URL (else OPENAI_/ANTHROPIC_BASE_URL)")
    ] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Run PROMPT in a new session with a model chain; print the outcome and session id."""
    where = where_from(home, project)
    if not prompt.strip():
        raise CliError("the prompt is empty")
    specs = [model, *(fallback or [])]
    # Everything that can be refused is checked before the session exists.
    models = [build_model(s, env=os.environ, base_url=base_url) for s in specs]
    check_reachable(specs, os.environ, base_url)
    recipe = ModelRecipe(scenario="run", model=model, fallback=specs[1:], base_url=base_url)
    rt = open_runtime(where)
    try:
        session = rt.new_session(metadata=msgspec.to_builtins(recipe))
        outcome = session.run(prompt, model=models)
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
    if as_json:
        print_json(msgspec.to_builtins(outcome))
    elif outcome.status == "completed":
        print(outcome.answer)
        print(f"session {outcome.session_id} ({outcome.status})", file=sys.stderr)
    elif outcome.status == "needs_clarification":
        print(f"needs clarification: {outcome.question}")
        print(f"session {outcome.session_id}", file=sys.stderr)
    if outcome.status in ("completed", "needs_clarification"):
        return
    if gave_up:
        # The model could not be used at all (every candidate failed): a config problem.
        fail(f"the model failed: {outcome.error} (recorded in session {outcome.session_id})", 2)
    fail(f"run {outcome.status}: {outcome.error} (session {outcome.session_id})")


@app.command()
def resume(
    session: SessionArg,
    slow: Annotated[int | None, typer.Option(metavar="MS", min=0,
                                             help="delay per scripted model call")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", metavar="SPEC", help="override the model the session was created with")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", metavar="URL")] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Finish an interrupted session: replay it to the end of its log, then go on live."""
    where = where_from(home, project)
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        if not rt.interrupted_runs(sid):
            if rt.is_owned(sid):
                raise SessionBusy(f"session {sid} is in use by another process")
            raise CliError(f"session {sid} has no interrupted run; nothing to resume")
        models, tools = models_for_resume(
            row, env=os.environ, project_dir=where.project, slow_ms=slow,
            override=[model] if model else [], base_url=base_url,
        )
        try:
            outcome = rt.resume(sid, model=models, tools=tools)
        except ReplayDivergence as e:
            fail(str(e))
    if as_json:
        print_json(msgspec.to_builtins(outcome))
    else:
        print(f"session {sid}: {outcome.status}")
        print(outcome.answer or outcome.error or outcome.question or "")
    exit_with(0 if outcome.status in ("completed", "needs_clarification") else 1)


# --- reading ----------------------------------------------------------------------------


@app.command()
def sessions(home: Home = None, project: Project = None, as_json: Json = False) -> None:
    """List the sessions of the home."""
    where = where_from(home, project)
    if not home_exists(where):  # a read never creates a home
        infos, scenarios = [], {}
    else:
        rt = open_runtime(where)
        try:
            infos = rt.sessions()
            scenarios = {
                r.session_id: str(r.metadata.get("scenario", "")) for r in rt.store.list_sessions()
            }
        finally:
            rt.close()
    if as_json:
        print_json([{**msgspec.to_builtins(i), "scenario": scenarios.get(i.session_id) or None}
               for i in infos])
        return
    render.make_console().print(render.sessions_table(infos, scenarios))


def _print_tree(rt: Runtime, sid: str) -> None:
    row = rt.store.read_session(sid)
    tree = NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id)
    out = render.make_console()
    out.print(f"node tree of {sid} ({len(tree)} nodes; [bold green]▶[/bold green] active path,"
              " [yellow]⑂[/yellow] branch)")
    for t in render.node_trees(tree, sid):
        out.print(t)


@app.command()
def show(session: SessionArg, home: Home = None, project: Project = None,
         as_json: Json = False) -> None:
    """Show the node tree: every root, branches visible, the active path highlighted."""
    where = where_from(home, project)
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        if not as_json:
            _print_tree(rt, sid)
            return
        tree = NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id)
        print_json(tree_doc(sid, tree, render.excerpt))


@app.command()
def timeline(
    session: SessionArg,
    run_id: Annotated[str | None, typer.Option("--run", metavar="RUN",
                                               help="only this run (full id or brain:r1)")] = None,
    types: Annotated[list[str] | None, typer.Option("--type", metavar="TYPE",
                                                    help="only this event type (repeatable)")
                     ] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """List the session's events in seq order."""
    where = where_from(home, project)
    unknown = sorted(set(types or []) - set(EVENT_TYPES))
    if unknown:
        known = ", ".join(sorted(EVENT_TYPES))
        raise CliError(f"unknown event type {unknown[0]!r}; known: {known}")
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        run = resolve_run(rt.store, sid, run_id) if run_id is not None else None
        wanted = set(types) if types else None
        events = [
            e for e in rt.store.iter_events(sid)
            if (run is None or e.run_id == run) and (wanted is None or e.event_type in wanted)
        ]
    if as_json:
        print_json({"session_id": sid, "events": [event_row(e) for e in events]})
        return
    render.make_console().print(render.timeline_table(sid, events))


def _print_tasks(rt: Runtime, where: Where, sid: str, row: SessionRow) -> None:
    out = render.make_console()
    runs = main_run_ids(rt.store, sid)
    wals = inspect_wals(where.project, sid, runs)
    for w, tasks in wals:
        if tasks:
            out.print(render.tasks_table(sid, w, tasks))
        out.print(render.wal_line(w))
    if not any(w.exists for w, _ in wals) and Path(row.cwd) != where.project:
        out.print(f"no Task WAL under {where.project}; this session was created with"
                  f" --project {row.cwd}")


@app.command()
def tasks(session: SessionArg, home: Home = None, project: Project = None,
          as_json: Json = False) -> None:
    """Show the session's task DAG and the status of its Task WAL (read-only)."""
    where = where_from(home, project)
    with open_session(where, session) as (rt, row):
        if as_json:
            print_json(tasks_doc(where.project, rt.store, row.session_id))
        else:
            _print_tasks(rt, where, row.session_id, row)


@app.command()
def replay(session: SessionArg, home: Home = None, project: Project = None,
           as_json: Json = False) -> None:
    """Re-execute the session against its recording: exit 0 identical, 1 diverged."""
    where = where_from(home, project)
    with open_session(where, session) as (rt, row), \
            render.progress_bar(stderr_is_tty() and not as_json, "replaying runs") as progress:
        report = rt.replay(row.session_id, progress=progress)
    if as_json:
        print_json(report.to_json())
    else:
        for line in render.replay_lines(report):
            print(line)
    exit_with(0 if report.identical else 1)


@app.command()
def verify(
    session: Annotated[str | None, typer.Argument(metavar="[SESSION]")] = None,
    all_: Annotated[bool, typer.Option("--all", help="verify every session")] = False,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Rebuild projections from events, compare with the tables, replay every Task WAL."""
    where = where_from(home, project)
    if (session is None) == (not all_):
        raise CliError("give one SESSION or --all" + (", not both" if all_ else ""))
    checks = []
    if session is not None:
        with open_session(where, session) as (rt, row):
            checks.append(check_session(rt.store, where.project, row.session_id))
    elif home_exists(where):
        rt = open_runtime(where)
        try:
            ids = [r.session_id for r in rt.store.list_sessions()]
            show = stderr_is_tty() and not as_json
            with render.progress_bar(show, "verifying sessions") as progress:
                for i, sid in enumerate(ids):
                    checks.append(check_session(rt.store, where.project, sid))
                    progress(i + 1, len(ids))
        finally:
            rt.close()
    ok = all(c.ok for c in checks)
    if as_json:
        print_json({"ok": ok, "sessions": [
            {"session_id": c.session_id, "ok": c.ok, "problems": c.problems, "events": c.events,
             "wals": [msgspec.to_builtins(w) for w in c.wals]}
            for c in checks
        ]})
    else:
        for c in checks:
            for line in render.verify_lines(c):
                print(line)
        print(f"{len(checks)} sessions verified: {'ok' if ok else 'PROBLEMS FOUND'}")
    exit_with(0 if ok else 1)


@app.command("switch-node")
def switch_node(
    session: SessionArg,
    node: Annotated[str, typer.Argument(metavar="NODE", help="node id (full or brain:r1:n2)")],
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Make NODE the active node; the next run branches from there. Nothing is deleted."""
    where = where_from(home, project)
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        known = {n.node_id for n in rt.store.read_nodes(sid)}
        target = node if node in known or f"{sid}:{node}" not in known else f"{sid}:{node}"
        # Refused here, before the runtime takes (and writes) the session's owner lock.
        check_switch_target(NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id),
                            target)
        previous = rt.switch_node(sid, target)
    if as_json:
        print_json({"session_id": sid, "from_node_id": previous, "to_node_id": target})
    else:
        print(f"{sid}: active node {previous} → {target}")


@app.command()
def export(session: SessionArg, home: Home = None, project: Project = None) -> None:
    """Print the session's events as JSON lines, by seq (always JSON: no --json needed)."""
    where = where_from(home, project)
    encode = msgspec.json.Encoder().encode
    with open_session(where, session) as (rt, row):
        write = sys.stdout.write
        for e in rt.store.iter_events(row.session_id):
            write(encode(event_row(e)).decode() + "\n")
    sys.stdout.flush()


# --- entry point ------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the clew CLI with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    configure_logging()
    BEFORE_COMMAND.clear()
    # Only the process's own entry point exits on Ctrl-C; a caller of main() (tests, an
    # embedding program) keeps its handler.
    # A process started with Ctrl-C ignored (nohup, a background job) keeps ignoring it.
    own = argv is None and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    previous = signal.signal(signal.SIGINT, on_interrupt) if own else None
    try:
        result = app(args=args, prog_name="clew", standalone_mode=False)
    except typer.Abort:
        print("interrupted", file=sys.stderr)
        return 130
    except _REFUSED as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except ClewError as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # `clew export … | head`: the reader left; stop quietly.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until the process exits
        return 0
    except Exception as e:
        code = usage_error(e)
        if code is None:
            raise
        return code
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
