"""``clew submit``, ``clew queue``, ``clew serve``: the run queue and the serving process
(docs/serve.md)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import msgspec
import typer

from actors.cli.app import app
from actors.cli.ids import resolve_session
from actors.cli.options import MAX_COUNT, Home, Json, Project, Where, home_exists, where_from
from actors.cli.output import print_json, print_result, utf8_text
from actors.errors import UsageError
from actors.models.specs import SCRIPTED
from actors.runtime.coord.location import is_database_url
from actors.runtime.coord.protocol import DEFAULT_LEASE_TTL_S, QueuedRun
from actors.runtime.runtime import Runtime
from actors.runtime.serving import Recipes, load_app
from eventlog.errors import StoreError, clipped
from eventlog.ids import validate_session_id

Coordination = Annotated[
    str | None,
    typer.Option(
        "--coordination",
        metavar="URL",
        envvar="CLEW_COORDINATION",
        help="a postgresql:// database for leases and the run queue (default: the home's"
        " coord.sqlite)",
    ),
]
LeaseTtl = Annotated[
    float,
    typer.Option(
        "--lease-ttl",
        metavar="SECONDS",
        min=0.5,
        help="a dead process's sessions are taken over after this long",
    ),
]

MetricsPort = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        metavar="PORT",
        min=0,
        max=65535,
        help="serve /metrics (Prometheus text) and /healthz on this port (0: any free)",
    ),
]
MetricsHost = Annotated[
    str, typer.Option("--metrics-host", metavar="HOST", help="the address metrics bind")
]


def _open(where: Where, coordination: str | None, lease_ttl: float) -> Runtime:
    """Open the runtime of the home with its coordinator (refusing a bad URL first)."""
    if coordination is not None and not is_database_url(coordination):
        raise UsageError(
            f"--coordination {clipped(coordination)} is not a postgresql:// URL (without it"
            " the home's coord.sqlite is used)"
        )
    # On a PostgreSQL store the sessions' leases and queue live in the same database.
    coordination = coordination or where.store
    try:
        rt = Runtime.from_env(
            os.environ,
            home=str(where.home),
            project_dir=str(where.project),
            store=where.store,
            coordination=coordination,
            lease_ttl=lease_ttl,
        )
    except (OSError, StoreError) as e:
        if where.store is not None:  # a PostgreSQL store: the home holds only lock files
            raise UsageError(f"cannot open the store: {e}") from e
        raise UsageError(f"cannot open the clew home {where.home}: {e}") from e
    try:
        rt.coordinator()
    except StoreError as e:
        rt.close()
        raise UsageError(f"cannot open the run queue: {e}") from e
    return rt


def _row_json(row: QueuedRun) -> dict[str, Any]:
    doc: dict[str, Any] = msgspec.to_builtins(row)
    return doc


@app.command()
def submit(
    prompt: Annotated[str, typer.Argument(help="the user request")],
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="SESSION", help="run in this session (id, prefix, last)"),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            metavar="NAME_OR_SPEC",
            help="a model recipe of the app, or a spec as clew run takes"
            " (scripted:PATH, openai:<model>, anthropic:<model>)",
        ),
    ] = "demo",
    tools: Annotated[
        str | None,
        typer.Option("--tools", metavar="NAME", help="the tools recipe (default: demo's own)"),
    ] = None,
    team: Annotated[
        str | None, typer.Option("--team", metavar="NAME", help="the team recipe")
    ] = None,
    app_ref: Annotated[
        str | None,
        typer.Option(
            "--app",
            metavar="MODULE:CALLABLE",
            help="check the names against this app's Recipes (what clew serve --app runs)",
        ),
    ] = None,
    coordination: Coordination = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Queue PROMPT for a `clew serve` process; print the queued run's id."""
    where = where_from(home, project)
    for what, value in (("the prompt", prompt), ("--model", model), ("--tools", tools)):
        if value is not None:
            utf8_text(what, value)
    if tools is None and model == "demo":
        tools = "demo"  # the demo scenario calls its two tools
    if model.startswith(SCRIPTED):
        # Read where it was typed, as clew run reads it: any serving process finds it.
        model = SCRIPTED + str(Path(model.removeprefix(SCRIPTED)).absolute())
    recipes = load_app(app_ref) if app_ref is not None else None
    with _open(where, coordination, DEFAULT_LEASE_TTL_S) as rt:
        sid = None
        if session is not None:
            if not home_exists(where):
                raise UsageError(f"unknown session {session}: {where.home} holds no sessions")
            sid = resolve_session(rt.store, validate_session_id(session))
        row = rt.submit(prompt, model=model, tools=tools, team=team, session=sid, recipes=recipes)
    print_result(_row_json(row), str(row.id), as_json=as_json)


@app.command()
def queue(
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_COUNT, help="show the newest N queued runs")
    ] = 50,
    coordination: Coordination = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """List the queued runs: id, status, outcome, attempts, session, owner.

    With --json also the depth by status and the oldest run waiting.
    """
    where = where_from(home, project)
    with _open(where, coordination, DEFAULT_LEASE_TTL_S) as rt:
        rows = rt.queue(limit)
        depth = rt.coordinator().depth() if as_json else None
    if depth is not None:
        oldest = depth.oldest_queued
        print_json(
            {
                "runs": [_row_json(r) for r in rows],
                "depth": {"queued": depth.queued, "running": depth.running, "done": depth.done},
                "oldest_queued": None if oldest is None else _row_json(oldest),
            }
        )
        return
    for r in rows:
        outcome = r.outcome or "-"
        print(
            f"{r.id}\t{r.status}\t{outcome}\tattempts={r.attempts}\t{r.session_id or '-'}"
            f"\t{r.owner or '-'}\t{clipped(r.prompt, 40)}"
        )


_SAY_LOCK = threading.Lock()


def _say(line: str) -> None:
    """Print one line of the serving loop (its threads print whole lines, one at a time)."""
    with _SAY_LOCK:
        print(line, flush=True)


@app.command()
def serve(
    app_ref: Annotated[
        str | None,
        typer.Option("--app", metavar="MODULE:CALLABLE", help="returns the app's Recipes"),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="runs at once")] = 1,
    lease_ttl: LeaseTtl = DEFAULT_LEASE_TTL_S,
    drain: Annotated[
        float,
        typer.Option(metavar="SECONDS", min=0, help="on SIGTERM, wait this long for runs"),
    ] = 30.0,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = "127.0.0.1",
    coordination: Coordination = None,
    home: Home = None,
    project: Project = None,
) -> None:
    """Take queued runs and resume the runs of dead peers until SIGTERM or Ctrl-C."""
    where = where_from(home, project)
    recipes = load_app(app_ref) if app_ref is not None else Recipes()
    rt = _open(where, coordination, lease_ttl)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        report = rt.serve(
            recipes=recipes,
            concurrency=concurrency,
            stop=stop,
            drain_s=drain,
            on_event=_say,
            metrics_address=None if metrics_port is None else (metrics_host, metrics_port),
        )
    except BaseException:
        rt.close()
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if report.running:
        # Left interrupted, not cancelled: their leases expire and a peer resumes them.
        print(
            f"stopped with queued run(s) {', '.join(map(str, report.running))} in progress;"
            " another clew serve resumes them once their leases expire",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        os._exit(0)
    rt.close()
    print(f"stopped: {len(report.done)} done, {len(report.recovered)} recovered", flush=True)
