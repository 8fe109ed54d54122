"""``clew sessions``, ``show``, ``timeline``, ``tasks``, ``switch-node``, ``export``: reading
a home and moving a session's active node."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import msgspec
import typer

from actors.cli import render
from actors.cli.app import app
from actors.cli.docs import event_row, tasks_doc, tree_doc
from actors.cli.options import (
    Home,
    Json,
    Project,
    SessionArg,
    Where,
    home_exists,
    open_runtime,
    open_session,
    resolve_node,
    resolve_run,
    where_from,
)
from actors.cli.output import print_json, print_json_stream, quoted
from actors.errors import UsageError
from actors.runtime.runtime import Runtime
from actors.tasks.inspect import inspect_wals
from eventlog.events import EVENT_TYPES
from eventlog.records import SessionRow
from projections.tree import NodeTree, check_branch_target


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
        print_json(
            [
                {**msgspec.to_builtins(i), "scenario": scenarios.get(i.session_id) or None}
                for i in infos
            ]
        )
        return
    render.make_console().print(render.sessions_table(infos, scenarios))


def print_tree(rt: Runtime, sid: str) -> None:
    row = rt.store.read_session(sid)
    tree = NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id)
    out = render.make_console()
    out.print(
        f"node tree of {sid} ({len(tree)} nodes; [bold green]▶[/bold green] active path,"
        " [yellow]⑂[/yellow] branch)"
    )
    for t in render.node_trees(tree, sid):
        out.print(t)


@app.command()
def show(
    session: SessionArg, home: Home = None, project: Project = None, as_json: Json = False
) -> None:
    """Show the node tree: every root, branches visible, the active path highlighted."""
    where = where_from(home, project)
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        if not as_json:
            print_tree(rt, sid)
            return
        tree = NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id)
        print_json(tree_doc(sid, tree, render.excerpt))


@app.command()
def timeline(
    session: SessionArg,
    run_id: Annotated[
        str | None, typer.Option("--run", metavar="RUN", help="only this run (full id or brain:r1)")
    ] = None,
    types: Annotated[
        list[str] | None,
        typer.Option("--type", metavar="TYPE", help="only this event type (repeatable)"),
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
        raise UsageError(f"unknown event type {quoted(unknown[0])}; known: {known}")
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        run = resolve_run(rt, sid, run_id) if run_id is not None else None
        wanted = set(types) if types else None
        # Streamed from one cursor: the first rows print at once, memory stays flat.
        events = (
            e
            for e in rt.store.iter_events(sid)
            if (run is None or e.run_id == run) and (wanted is None or e.event_type in wanted)
        )
        if as_json:
            print_json_stream({"session_id": sid}, "events", map(event_row, events))
            return
        runs = [r.run_id for r in rt.store.read_runs(sid)]
        render.print_timeline(
            sid, events, render.timeline_layout(sid, runs, rt.store.count_events(sid))
        )


def print_tasks(rt: Runtime, where: Where, sid: str, row: SessionRow) -> None:
    out = render.make_console()
    # The session's own project directory, whatever --project says (refused if gone).
    project = rt.session_dir(sid)
    wals = inspect_wals(project, sid, rt.wal_names(sid))
    for w, tasks in wals:
        if tasks:
            out.print(render.tasks_table(sid, w, tasks))
        out.print(render.wal_line(w))
    if not any(w.exists for w, _ in wals) and Path(row.cwd) != project:
        out.print(f"no Task WAL under {project}; this session was created with --project {row.cwd}")


@app.command()
def tasks(
    session: SessionArg, home: Home = None, project: Project = None, as_json: Json = False
) -> None:
    """Show the session's task DAG and the status of its Task WAL (read-only)."""
    where = where_from(home, project)
    with open_session(where, session) as (rt, row):
        if as_json:
            print_json(tasks_doc(rt, row.session_id))
        else:
            print_tasks(rt, where, row.session_id, row)


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
        target = resolve_node(rt, sid, node)
        # Refused here, before the runtime takes (and writes) the session's owner lock.
        check_branch_target(
            NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id),
            target,
            row.root_agent_id,
        )
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
