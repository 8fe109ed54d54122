"""``clew sessions``, ``show``, ``timeline``, ``tasks``, ``switch-node``, ``export``: reading
a home and moving a session's active node."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec
import typer

from actors.cli import ids, plain_table
from actors.cli.app import app
from actors.cli.options import (
    MAX_COUNT,
    Home,
    Json,
    Project,
    SessionArg,
    home_exists,
    open_reader,
    open_session,
    read_session,
    session_from,
    where_from,
)
from actors.cli.output import print_json, print_json_stream, print_result, quoted
from actors.cli.pager import paged
from actors.cli.session_filter import Error, Role, Since, Status, UsedModel, session_filter
from actors.documents.excerpts import excerpt, short
from actors.documents.sessions import session_infos_doc
from actors.documents.tasks import read_dags, tasks_doc
from actors.documents.tree import fork_points, tree_doc
from actors.errors import UsageError
from actors.runtime.status import SessionFilter, SessionInfo, StatusReader, select_sessions
from eventlog.events import EVENT_TYPES
from eventlog.global_reads import MAX_PAGE
from eventlog.records import SessionRow, StoredEvent
from projections.tree import NodeTree, check_branch_target

if TYPE_CHECKING:
    from actors.cli.show import ShowOptions
    from actors.runtime.runtime import Runtime


@app.command()
def sessions(
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
    status: Status = None,
    error: Error = None,
    model: UsedModel = None,
    role: Role = None,
    since: Since = None,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            metavar="SESSION",
            help="the page after SESSION (the last id of the previous page)",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", min=1, max=MAX_PAGE, metavar="N", help="a page of at most N sessions"
        ),
    ] = None,
) -> None:
    """List the sessions of the home (those the filters select).

    Oldest first. With --limit (and --after) one keyset page: its cost follows the page,
    not the number of sessions in the home; a session created meanwhile comes on a later
    page.
    """
    where = where_from(home, project)
    chosen = session_filter(status, error, model, role, since)
    paged_list = after is not None or limit is not None
    if not home_exists(where):  # a read never creates a home
        infos, scenarios = [], {}
    else:
        # Read without a runtime: no writer, no actors, no run imports (a fast start).
        with open_reader(where) as rt:
            if paged_list:
                rows = _selected_page(rt, chosen, after, limit or 50)
                infos = [i for i, _ in rows]
                metadata = {r.session_id: r.metadata for _, r in rows}
            else:
                every = rt.store.list_sessions()  # read once: the lines and the scenarios
                infos = rt.infos(every)
                infos = infos if chosen.selects_all() else select_sessions(rt, chosen, infos)
                metadata = {r.session_id: r.metadata for r in every}
            scenarios = {sid: str(m.get("scenario", "")) for sid, m in metadata.items()}
    if as_json:
        print_json(session_infos_doc(infos, scenarios))
        return
    next_page = None
    if paged_list and len(infos) == (limit or 50):
        next_page = f"next page: clew sessions --after {infos[-1].session_id} --limit {limit or 50}"
    _print_sessions(infos, scenarios, next_page)


def _print_sessions(
    infos: list[SessionInfo], scenarios: dict[str, str], next_page: str | None
) -> None:
    """Print the sessions table (and the next page's command line, if any)."""
    # Off a terminal the usual table is written as rich writes it, without importing rich.
    text = plain_table.sessions_text(infos, scenarios) if plain_table.plain_output() else None
    if text is not None:
        sys.stdout.write(text if next_page is None else f"{text}{next_page}\n")
        return
    from actors.cli import render  # noqa: PLC0415 - rich: a terminal's table only

    out = render.make_console()
    out.print(render.sessions_table(infos, scenarios))
    if next_page is not None:
        out.print(next_page)


def _selected_page(
    rt: StatusReader, chosen: SessionFilter, after: str | None, limit: int
) -> list[tuple[SessionInfo, SessionRow]]:
    """The first ``limit`` sessions after ``after`` that ``chosen`` selects, with their rows,
    read a keyset page at a time."""
    out: list[tuple[SessionInfo, SessionRow]] = []
    while len(out) < limit:
        rows = rt.store.list_sessions_page(after=after, limit=limit)
        if not rows:
            break
        infos = rt.infos(rows)
        picked = infos if chosen.selects_all() else select_sessions(rt, chosen, infos)
        keep = {i.session_id for i in picked}
        out += [(i, r) for i, r in zip(infos, rows, strict=True) if i.session_id in keep]
        after = rows[-1].session_id
    return out[:limit]


def print_tree(rt: Runtime | StatusReader, sid: str, options: ShowOptions | None = None) -> None:
    """Print the node tree of ``sid`` as :mod:`actors.cli.show` lays it out."""
    from actors.cli import render  # noqa: PLC0415 - rich: not for ``clew sessions``
    from actors.cli.show import ShowOptions, TreeView  # noqa: PLC0415 - as render

    row = rt.store.read_session(sid)
    tree = NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id)
    out = render.make_console()
    runs = rt.store.read_runs(sid)
    redriven = [
        f"{short(sid, r.run_id)} by {r.metadata['redrive']}"
        for r in runs
        if r.metadata.get("redrive")
    ]
    header = render.tree_header(sid, row, tree, main_runs=len(rt.main_runs(sid)), redriven=redriven)
    options = options or ShowOptions()
    if options.height is None and out.is_terminal and not options.expand_all:
        rows = max(3, out.size.height - len(header) - 2)  # 2: the prompt after the command
        options = msgspec.structs.replace(options, height=rows)
    forks = {node: f"{by} forked here" for node, by in fork_points(rt, sid).items()}
    view = TreeView(sid, tree, lambda r: excerpt(r.content), options, forks)
    for line in [*header, *(line.text for line in view.layout())]:
        out.print(line, no_wrap=True, overflow="ellipsis", crop=True)


@app.command()
def show(
    session: SessionArg,
    expand_all: Annotated[
        bool, typer.Option("--all", help="expand every run and worker (nothing folded)")
    ] = False,
    run_id: Annotated[
        str | None,
        typer.Option("--run", metavar="RUN", help="only this run, expanded (id, brain:r1, prefix)"),
    ] = None,
    depth: Annotated[
        int | None,
        typer.Option(
            "--depth", metavar="N", min=0, help="side branches shown N levels deep (default: all)"
        ),
    ] = None,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Show the node tree: chains flat, runs folded, the active path and node visible."""
    with read_session(home, project, session) as (rt, row):
        sid = row.session_id
        run = ids.resolve_run(rt.store, sid, run_id) if run_id is not None else None
        if not as_json:
            from actors.cli.show import ShowOptions  # noqa: PLC0415 - as in print_tree

            print_tree(rt, sid, ShowOptions(expand_all=expand_all, run=run, depth=depth))
            return
        tree = NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id)
        print_json(tree_doc(sid, tree))


SinceSeq = Annotated[
    int,
    typer.Option("--since", metavar="SEQ", min=0, max=MAX_COUNT, help="only events after seq SEQ"),
]
AtMost = Annotated[
    int | None, typer.Option("--limit", metavar="N", min=1, max=MAX_COUNT, help="at most N events")
]


@app.command()
def timeline(
    session: SessionArg,
    run_id: Annotated[
        str | None,
        typer.Option("--run", metavar="RUN", help="only this run (id, brain:r1, prefix)"),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", metavar="AGENT", help="only this agent's events")
    ] = None,
    types: Annotated[
        list[str] | None,
        typer.Option("--type", metavar="TYPE", help="only this event type (repeatable)"),
    ] = None,
    since: SinceSeq = 0,
    limit: AtMost = None,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="never page the table")] = False,
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
    as_jsonl: Annotated[
        bool, typer.Option("--jsonl", help="stream JSON lines, one event each (large sessions)")
    ] = False,
) -> None:
    """List the session's events in seq order (paged on a terminal)."""
    where = where_from(home, project)
    unknown = sorted(set(types or []) - set(EVENT_TYPES))
    if unknown:
        known = ", ".join(sorted(EVENT_TYPES))
        raise UsageError(f"unknown event type {quoted(unknown[0])}; known: {known}")
    if as_json and as_jsonl:
        raise UsageError("give --json (one document) or --jsonl (JSON lines), not both")
    with open_session(where, session) as (rt, row):
        sid = row.session_id
        run = ids.resolve_run(rt.store, sid, run_id) if run_id is not None else None
        who = ids.resolve_agent(rt.store, sid, agent) if agent is not None else None
        wanted = set(types) if types else None
        # Streamed from one cursor: the first rows print at once, memory stays flat.
        stream = rt.store.iter_events(sid)
        picked = (
            e
            for e in stream
            if e.seq > since
            and (run is None or e.run_id == run)
            and (who is None or e.agent_id == who)
            and (wanted is None or e.event_type in wanted)
        )
        events = picked if limit is None else islice(picked, limit)
        try:
            _print_events(rt, sid, events, as_json=as_json, as_jsonl=as_jsonl, page=not no_pager)
        finally:
            close = getattr(stream, "close", None)
            if close is not None:  # --limit stops early: give the store's cursor back now
                close()


def _print_events(
    rt: Runtime,
    sid: str,
    events: Iterator[StoredEvent],
    *,
    as_json: bool,
    as_jsonl: bool,
    page: bool,
) -> None:
    """Print the timeline's events as the table (paged on a terminal), JSON or JSON lines."""
    # Imported here: the events' summaries (of every event type, the LangGraph
    # checkpointer's too) are for the timeline and export, not ``clew sessions`` or ``show``.
    from actors.documents.timeline import event_row  # noqa: PLC0415 - see above

    if as_jsonl:
        encode = msgspec.json.Encoder().encode
        write = sys.stdout.write
        for e in events:
            write(encode(event_row(e)).decode() + "\n")
        sys.stdout.flush()
        return
    if as_json:
        print_json_stream({"session_id": sid}, "events", map(event_row, events))
        return
    from actors.cli.timeline_rows import print_timeline, timeline_layout  # noqa: PLC0415 - as above

    layout = timeline_layout(
        sid, (r.run_id for r in rt.store.read_runs(sid)), rt.store.count_events(sid)
    )
    with paged(page) as out:
        terminal = out is not sys.stdout or sys.stdout.isatty()
        print_timeline(
            sid,
            events,
            layout,
            out=out,
            color=terminal and "NO_COLOR" not in os.environ,
            width=shutil.get_terminal_size().columns if terminal else None,
        )


def print_tasks(rt: Runtime, row: SessionRow) -> None:
    """Print the task DAG of each of the session's Task WALs and how each WAL reads."""
    from actors.cli import render  # noqa: PLC0415 - as in print_tree

    sid = row.session_id
    out = render.make_console()
    # The session's own project directory, whatever --project says (refused if gone).
    project = rt.session_dir(sid)
    wals = read_dags(rt, sid, project)
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
    with session_from(home, project, session) as (rt, row):
        if as_json:
            print_json(tasks_doc(rt, row.session_id))
        else:
            print_tasks(rt, row)


@app.command("switch-node")
def switch_node(
    session: SessionArg,
    node: Annotated[str, typer.Argument(metavar="NODE", help="node id (full or brain:r1:n2)")],
    home: Home = None,
    project: Project = None,
    as_json: Json = False,
) -> None:
    """Make NODE the active node; the next run branches from there. Nothing is deleted."""
    with session_from(home, project, session) as (rt, row):
        sid = row.session_id
        target = ids.resolve_node(rt.store, sid, node)
        # Refused here, before the runtime takes (and writes) the session's owner lock.
        check_branch_target(
            NodeTree.from_rows(rt.store.read_nodes(sid), row.active_node_id),
            target,
            row.root_agent_id,
        )
        previous = rt.switch_node(sid, target)
    doc = {"session_id": sid, "from_node_id": previous, "to_node_id": target}
    print_result(doc, f"{sid}: active node {previous} → {target}", as_json=as_json)


@app.command()
def export(
    session: SessionArg,
    home: Home = None,
    project: Project = None,
    bundle: Annotated[
        str | None,
        typer.Option("--bundle", metavar="FILE", help="write a session bundle (clew import)"),
    ] = None,
) -> None:
    """Print the session's events as JSON lines, by seq (always JSON: no --json needed);
    ``--bundle FILE``: write the session as one verified, importable file instead."""
    where = where_from(home, project)
    if bundle is not None:
        from actors.cli import bundle_commands  # noqa: PLC0415 - only for --bundle

        bundle_commands.write_bundle(where, session, bundle)
        return
    from actors.documents.timeline import event_row  # noqa: PLC0415 - as in _print_events

    encode = msgspec.json.Encoder().encode
    with open_session(where, session) as (rt, row):
        write = sys.stdout.write
        for e in rt.store.iter_events(row.session_id):
            write(encode(event_row(e)).decode() + "\n")
    sys.stdout.flush()
