"""rich output of the ``clew`` CLI: tables, the node tree, the task DAG, progress bars.

Only the human (non ``--json``) output goes through here. Ids are shown relative to
the session (``brain:r1:n2`` for ``sess_…:brain:r1:n2``, :mod:`actors.documents.excerpts`)
to keep lines short; ``--json`` always carries the full ids.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from actors.documents.excerpts import clip, short
from eventlog.ids import task_of

if TYPE_CHECKING:
    from actors.replay.report import ReplayReport
    from actors.runtime.status import SessionInfo
    from actors.tasks.changes import TaskWalReport
    from eventlog.records import SessionRow
    from projections.taskdag import Task
    from projections.tree import NodeTree

_STATUS_STYLE = {
    "completed": "green",
    "running": "yellow",
    "ready": "cyan",
    "pending": "white",
    "blocked": "magenta",
    "failed": "red",
    "cancelled": "dim",
}


def make_console(*, stderr: bool = False) -> Console:
    """Return a console; off a terminal it is wide, so ids and tables are not cut."""
    stream = sys.stderr if stderr else sys.stdout
    tty = stream.isatty()
    return Console(
        stderr=stderr, highlight=False, emoji=False, width=None if tty else 200, soft_wrap=not tty
    )


# --- sessions ---------------------------------------------------------------------------


_SESSION_STYLE = {
    "completed": "green",
    "running": "yellow",
    "interrupted": "bold red",
    "waiting": "cyan",
    "failed": "red",
    "cancelled": "dim",
}


def sessions_table(infos: Sequence[SessionInfo], scenarios: dict[str, str]) -> Table:
    """Return the ``clew sessions`` table: full ids (never cut: a shown id must be
    typeable), the derived status, main runs, events and the last activity."""
    title = f"{len(infos)} session{'' if len(infos) == 1 else 's'} (times in UTC)"
    table = Table(title=title, title_justify="left")
    table.add_column(
        "session", no_wrap=True, min_width=max([7, *(len(i.session_id) for i in infos)])
    )
    table.add_column("status", no_wrap=True)
    table.add_column("scenario", overflow="ellipsis", max_width=16)
    for col in ("runs", "events"):
        table.add_column(col, justify="right", no_wrap=True)
    for col in ("last activity", "created"):
        table.add_column(col, no_wrap=True)
    for i in infos:
        style = _SESSION_STYLE.get(i.status, "white")
        archived = " [dim](archived)[/dim]" if i.lifecycle == "archived" else ""
        table.add_row(
            i.session_id,
            f"[{style}]{escape(i.status)}[/{style}]{archived}",
            escape(scenarios.get(i.session_id, "")),
            str(i.main_runs),
            str(i.events),
            i.updated_at[:19].replace("T", " "),
            i.created_at[:19].replace("T", " "),
        )
    return table


# --- node tree --------------------------------------------------------------------------


def tree_header(
    sid: str, row: SessionRow, tree: NodeTree, *, main_runs: int, redriven: Sequence[str] = ()
) -> list[str]:
    """Return the lines above ``clew show``'s tree: counts, the active node, the legend;
    ``redriven``: ``run by redrive_…`` for each run a re-drive started."""
    active = tree.active_node_id
    where = "no active node"
    if active is not None and active in tree:
        node = tree.row(active)
        kind = f"{node.role}/{node.node_type}"
        where = f"active [bold green]{escape(short(sid, active))}[/bold green] {kind}"
    forked = ""
    if row.parent_session_id:
        forked = f" · forked from {escape(row.parent_session_id)}"
    redrives = [f"re-driven: {escape(', '.join(redriven))}"] if redriven else []
    return [
        f"[bold]{sid}[/bold] · {len(tree):,} nodes · {main_runs} runs · {where}{forked}",
        *redrives,
        "[dim][green]▶[/green] active path  ▸ folded run  [yellow]⑂[/yellow] branch point"
        "  ✂ compaction  ⑃ fork · --all expands, --run RUN shows one run, --depth N[/dim]",
    ]


# --- tasks ------------------------------------------------------------------------------


def wal_line(w: TaskWalReport) -> str:
    """Return one line describing a Task WAL."""
    if not w.exists:
        return f"task WAL {w.name}: not written yet ({w.path})"
    if not w.available:
        return f"[red]task WAL {w.name}: unavailable[/red] — {escape(w.error or '')}"
    tail = f", torn tail of {w.truncated_bytes} bytes (cut on resume)" if w.truncated_tail else ""
    return f"task WAL {w.name}: {w.lines} lines{tail} ({w.path})"


def tasks_table(sid: str, w: TaskWalReport, tasks: Sequence[Task]) -> Table:
    """Return one WAL's task DAG as a table (creation order; deps name what a task waits for)."""
    table = Table(title=escape(f"task DAG {w.name}"), title_justify="left")
    for col in ("task", "status", "waits for", "owner", "title / result"):
        table.add_column(col)
    for t in tasks:
        style = _STATUS_STYLE.get(t.status, "white")
        deps = ", ".join(task_of(short(sid, d)) for d in t.deps)
        after = ", ".join(task_of(short(sid, d)) for d in t.after)
        # "after" edges: waits for them to settle (a failure does not block it).
        deps = ", ".join(x for x in (deps, f"after {after}" if after else "") if x) or "-"
        table.add_row(
            escape(short(sid, t.task_id)),
            f"[{style}]{t.status}[/{style}]",
            escape(deps),
            escape(short(sid, t.owner)),
            escape(clip(t.result_summary or t.title, 60)),
        )
    return table


# --- timeline: its rows are in actors/cli/timeline_rows.py ------------------------------


# --- replay ------------------------------------------------------------------


def replay_lines(report: ReplayReport) -> list[str]:
    """Return the divergence report of a replay: the first divergence with its changed
    fields (a text as a unified diff), its consequences folded, the other divergences."""
    from actors.replay.divergence import ordered  # noqa: PLC0415 - a replay's report only

    lines = [report.summary()]
    first, then = report.first_divergence, report.consequences
    if first is not None:
        lines.append(
            f"first divergence: seq {first.seq}, run {first.run_id} at run_seq {first.run_seq}:"
            f" recorded {first.event_type}, today {first.current_type}"
        )
        for f in ordered(first.fields):
            if f.lines:
                lines.append(f"  {f.path} changed:")
                lines.extend(f"    {line}" for line in f.lines)
            else:
                lines.append(f"  {f.path}: {f.expected!r} → {f.actual!r}")
    if then is not None and then.count:
        lines.append(f"and {then.count} later events not reached")
        if then.runs_not_reached:
            lines.append(f"  runs never reached: {', '.join(then.runs_not_reached)}")
    if then is not None and then.runs_not_recorded:
        lines.append(f"runs that ran but were never recorded: {', '.join(then.runs_not_recorded)}")
    others = [
        d for d in report.divergences if d.kind == "diverged" and first and d.run_id != first.run_id
    ]
    for d in others:
        lines.append(f"also diverged: {d.message}")
    if report.live_tools is not None:
        lines.append(
            f"live tools: {report.live_tools.ran} calls run again and compared,"
            f" {report.live_tools.not_run} not run (not idempotent)"
        )
    return lines


# --- progress ---------------------------------------------------------------------------


@contextmanager
def progress_bar(enabled: bool, description: str) -> Iterator[Callable[[int, int], None]]:
    """Yield a ``progress(done, total)`` callback drawing a bar on stderr when ``enabled``."""
    if not enabled:
        yield lambda done, total: None
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=make_console(stderr=True),
        transient=True,
    )
    task = progress.add_task(description, total=None)
    with progress:

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update
