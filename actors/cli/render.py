"""rich output of the ``clew`` CLI: tables, the node tree, the task DAG, progress bars.

Only the human (non ``--json``) output goes through here. Ids are shown relative to
the session (``brain:r1:n2`` for ``sess_…:brain:r1:n2``) to keep lines short; ``--json``
always carries the full ids.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from actors.replay.report import ReplayReport
from actors.runtime.runtime import SessionInfo
from actors.tasks.changes import TaskWalReport
from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    JsonBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import EVENT_TYPES
from eventlog.ids import relative, task_of
from eventlog.records import StoredEvent
from projections.taskdag import Task
from projections.tree import NodeTree

EXCERPT = 72
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


def short(sid: str, ident: str | None) -> str:
    """Return ``ident`` without the session prefix."""
    if ident is None:
        return "-"
    return relative(sid, ident)


def clip(text: str, n: int = EXCERPT) -> str:
    """Return ``text`` on one line, at most ``n`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def excerpt(content: Sequence[ContentBlock]) -> str:
    """Return a one-line summary of a node's content blocks."""
    parts: list[str] = []
    for b in content:
        match b:
            case TextBlock(text=text):
                parts.append(text)
            case JsonBlock(data=data, summary=summary):
                parts.append(summary or json.dumps(data, ensure_ascii=False, default=str))
            case ToolCallBlock(name=name, arguments=arguments):
                parts.append(f"→ {name}({json.dumps(arguments, ensure_ascii=False)})")
            case ToolResultBlock(name=name, content=inner, is_error=is_error):
                mark = "✗" if is_error else "←"
                parts.append(f"{mark} {name}: {excerpt(list(inner))}")
            case ArtifactRefBlock(artifact_id=aid, summary=summary):
                parts.append(f"[artifact {aid}] {summary}")
    return clip(" ".join(parts))


# --- sessions ---------------------------------------------------------------------------


def sessions_table(infos: Sequence[SessionInfo], scenarios: dict[str, str]) -> Table:
    """Return the ``clew sessions`` table."""
    table = Table(title=f"{len(infos)} sessions", title_justify="left")
    for col in ("session", "status", "scenario", "created", "updated", "runs", "events", "state"):
        table.add_column(col, justify="right" if col in ("runs", "events") else "left")
    for i in infos:
        state = "[red]interrupted[/red]" if i.interrupted else ""
        table.add_row(
            i.session_id,
            i.status,
            scenarios.get(i.session_id, ""),
            i.created_at[:19].replace("T", " "),
            i.updated_at[:19].replace("T", " "),
            str(i.runs),
            str(i.events),
            state,
        )
    return table


# --- node tree --------------------------------------------------------------------------


def node_trees(tree: NodeTree, sid: str) -> list[Tree]:
    """Return one rich tree per root; the active path is bold green and marked ``▶``.

    The Brain's conversation is the first root; every worker's isolated context is a root
    of its own. Branches show as siblings.
    """
    active = set(tree.active_path_ids())
    out: list[Tree] = []
    for root in tree.roots():
        top = Tree(_label(tree, sid, root, root in active, tree.active_node_id))
        stack: list[tuple[Tree, str]] = [(top, root)]
        while stack:  # iterative: a deep session must not hit the recursion limit
            parent, nid = stack.pop()
            children = tree.children(nid)
            branch = len(children) > 1
            for child in children:
                label = _label(tree, sid, child, child in active, tree.active_node_id)
                if branch:
                    label = "[yellow]⑂[/yellow] " + label
                stack.append((parent.add(label), child))
        out.append(top)
    return out


def _label(tree: NodeTree, sid: str, nid: str, on_path: bool, active_id: str | None) -> str:
    row = tree.row(nid)
    text = escape(excerpt(row.content))
    head = f"{escape(short(sid, nid))} [dim]{row.role}/{row.node_type}[/dim]"
    if nid == active_id:
        return f"[bold green]▶ {head}[/bold green] {text} [bold green](active)[/bold green]"
    if on_path:
        return f"[bold green]▶ {head}[/bold green] {text}"
    return f"  {head} {text}"


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


# --- timeline ---------------------------------------------------------------------------


#: Rows printed per write: the first page shows after this many events are read, and the
#: memory held never grows with the session (a 100k-event table took 73 s and 544 MB when
#: it was one rich ``Table``, which measures every cell before printing any).
TIMELINE_CHUNK = 200
_LEVEL_STYLE = {"warning": "yellow", "error": "red"}


class TimelineLayout(NamedTuple):
    """Column widths of the streamed timeline, known before the first row is read."""

    seq: int
    run: int
    event: int


def timeline_layout(sid: str, run_ids: Iterable[str], last_seq: int) -> TimelineLayout:
    """Return the widths: seq and ``#`` from the last seq, run from the session's runs."""
    return TimelineLayout(
        seq=max(3, len(str(last_seq))),
        run=max([3, *(len(short(sid, r)) for r in run_ids)]),
        event=max(len(t) for t in EVENT_TYPES),
    )


def _timeline_cells(sid: str, e: StoredEvent, w: TimelineLayout) -> tuple[str, str, str]:
    """Return one row as (before the event type, the padded event type, after it)."""
    run_seq = "" if e.run_seq is None else str(e.run_seq)
    head = (
        f"{e.seq:>{w.seq}}  {e.created_at[11:23]:<12}  {short(sid, e.run_id):<{w.run}}"
        f"  {run_seq:>{w.seq}}  "
    )
    return head, f"{e.event_type:<{w.event}}", f"  {short(sid, e.node_id or e.tool_call_id)}"


def print_timeline(sid: str, events: Iterable[StoredEvent], layout: TimelineLayout) -> int:
    """Print events by seq as aligned rows, :data:`TIMELINE_CHUNK` at a time; return how many.

    Off a terminal the rows are plain text; on one, warnings and errors are coloured.
    """
    w = layout
    header = (
        f"{'seq':>{w.seq}}  {'time':<12}  {'run':<{w.run}}  {'#':>{w.seq}}"
        f"  {'event':<{w.event}}  node / tool call"
    )
    console = make_console() if sys.stdout.isatty() else None
    if console is None:
        sys.stdout.write(header + "\n")
    else:
        console.print(Text(header, style="bold"), soft_wrap=True)
    count = 0
    chunk: list[StoredEvent] = []
    for e in events:
        chunk.append(e)
        if len(chunk) == TIMELINE_CHUNK:
            _write_rows(sid, chunk, w, console)
            count += len(chunk)
            chunk.clear()
    _write_rows(sid, chunk, w, console)
    count += len(chunk)
    sys.stdout.write(f"{count} events\n")
    sys.stdout.flush()
    return count


def _write_rows(
    sid: str, rows: Sequence[StoredEvent], w: TimelineLayout, console: Console | None
) -> None:
    if console is None:
        sys.stdout.write("".join("".join(_timeline_cells(sid, e, w)) + "\n" for e in rows))
        sys.stdout.flush()
        return
    text = Text()
    for e in rows:
        head, event, tail = _timeline_cells(sid, e, w)
        text.append(head)
        text.append(event, style=_LEVEL_STYLE.get(e.level, ""))
        text.append(tail + "\n")
    console.print(text, end="", soft_wrap=True)


# --- replay ------------------------------------------------------------------


def replay_lines(report: ReplayReport) -> list[str]:
    """Return the divergence report of a replay, one line per fact."""
    lines = [report.summary()]
    for d in report.divergences:
        lines.append(
            f"run {d.run_id} at run_seq {d.run_seq}: expected {d.expected_type},"
            f" got {d.actual_type}"
        )
        for f in d.diff:
            if f.lines:
                lines.append(f"  {f.path} changed:")
                lines.extend(f"    {line}" for line in f.lines)
            else:
                lines.append(f"  {f.path}: expected {f.expected!r}, actual {f.actual!r}")
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
