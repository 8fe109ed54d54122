"""The layout of ``clew show``: a session's node tree as lines that fit a terminal.

The rules (docs/cli.md, "Reading a long session"):

- **Flat chains.** A chain of nodes (each the only child of the one before) is a flat
  list; the indentation grows only at a real branch point (``⑂``): the other branches
  hang below it, one level in, and the active branch (else the newest) continues at the
  same level. Nesting one level per node made 60 questions unreadable.
- **Folded runs.** A run's consecutive nodes fold into one line (``▸ brain:r3 · 4 nodes ·
  first → last``), except the run holding the active node and its main run. A main run's
  workers (each an isolated context: a root of its own) are listed under it, one line
  each. ``--all`` expands everything; ``--run RUN`` shows that one run expanded.
- **The active node is always on screen.** It is named in the header, and when the lines
  are taller than the screen, the oldest folded runs at the top level collapse into one
  ``⋯`` line until they fit; the active node's line never does.
- **Marks.** ``▶`` the active path, ``⑂`` a branch point, ``✂`` a compaction node (the
  nodes it replaces stay in the tree, above it),
  ``⑃`` a fork point (another session or agent forked from that node).

Each :class:`Line` is one row of a terminal: the caller prints it without wrapping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import msgspec
from rich.markup import escape

from eventlog.ids import relative
from eventlog.records import NodeRow
from projections.tree import NodeTree

#: Lines kept free below the tree on a terminal (the prompt after the command).
_MARGIN = 2


class ShowOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What ``clew show`` was asked for."""

    #: Expand every run and worker (``--all``).
    expand_all: bool = False
    #: Show only this run, expanded (``--run``; a full run id).
    run: str | None = None
    #: Side branches shown this many levels deep; deeper ones fold into one line.
    depth: int | None = None
    #: The screen's rows: collapse the oldest folded runs until the lines fit.
    height: int | None = None


class Line(NamedTuple):
    """One row of the output: rich markup, and the run it folds when it may be collapsed."""

    text: str
    collapsible: str | None = None
    active: bool = False


def main_run_of(run_id: str | None) -> str | None:
    """Return the main run a run belongs to (``…:brain:r1/w1:r1`` → ``…:brain:r1``)."""
    return None if run_id is None else run_id.split("/", 1)[0]


class TreeView:
    """Lay out one session's tree (built once per ``clew show``)."""

    def __init__(
        self,
        sid: str,
        tree: NodeTree,
        excerpt: Callable[[NodeRow], str],
        options: ShowOptions,
        forks: dict[str, str] | None = None,
    ) -> None:
        self.sid = sid
        self.tree = tree
        self.excerpt = excerpt
        self.options = options
        self.forks = forks or {}
        self.on_path = set(tree.active_path_ids())
        self.active = tree.active_node_id
        self.rows = {r.node_id: r for r in tree.rows()}
        active_run = self.rows[self.active].run_id if self.active in self.rows else None
        self.open_runs = {active_run, main_run_of(active_run)} - {None}
        self.workers: dict[str | None, list[str]] = {}
        self.brain_roots: list[str] = []
        for root in tree.roots():
            run = self.rows[root].run_id
            if run is not None and "/" in run:
                self.workers.setdefault(main_run_of(run), []).append(root)
            else:
                self.brain_roots.append(root)
        self.listed_workers: set[str | None] = set()
        self.lines: list[Line] = []

    # --- which runs show, and how ---------------------------------------------------------

    def visible(self, run: str | None) -> bool:
        only = self.options.run
        return only is None or run == only or ("/" not in only and main_run_of(run) == only)

    def expanded(self, run: str | None) -> bool:
        return self.options.expand_all or self.options.run is not None or run in self.open_runs

    # --- drawing --------------------------------------------------------------------------

    def layout(self) -> list[Line]:
        """Return the lines of every root: the Brain's conversation, then leftover workers."""
        for root in self.brain_roots:
            self.draw(root, 0, 0, branch=False)
        for main in list(self.workers):
            if main not in self.listed_workers:
                self.draw_workers(main, 0)
        return fit(self.lines, self.options.height)

    def draw(self, start: str, indent: int, level: int, *, branch: bool) -> None:
        """Draw the chain from ``start``; side branches first, then the continuation."""
        todo: list[tuple[str, int, int, bool]] = [(start, indent, level, branch)]
        while todo:  # iterative: a deep or much-branched session must not recurse
            node, ind, lvl, side = todo.pop()
            while True:
                segment = self.segment(node)
                self.emit(segment, ind, first_of_branch=side)
                side = False
                kids = self.tree.children(segment[-1])
                if len(kids) == 1:
                    node = kids[0]
                    continue
                if len(kids) > 1:
                    main = next((k for k in kids if k in self.on_path), kids[-1])
                    sides = [k for k in kids if k != main]
                    todo.append((main, ind, lvl, False))
                    if self.options.depth is not None and lvl + 1 > self.options.depth:
                        for other in sides:
                            self.folded_branch(other, ind + 1)
                    else:
                        todo.extend((k, ind + 1, lvl + 1, True) for k in reversed(sides))
                break

    def segment(self, node: str) -> list[str]:
        """Return the chain from ``node`` while it stays in one run and does not branch."""
        run = self.rows[node].run_id
        out = [node]
        while True:
            kids = self.tree.children(out[-1])
            if len(kids) != 1 or self.rows[kids[0]].run_id != run:
                return out
            out.append(kids[0])

    def emit(self, segment: Sequence[str], indent: int, *, first_of_branch: bool) -> None:
        run = self.rows[segment[0]].run_id
        if not self.visible(run):
            return
        main = main_run_of(run)
        lead = "  " * indent + ("[yellow]⑂[/yellow] " if first_of_branch else "")
        if not self.expanded(run):
            self.lines.append(self.folded(segment, lead, indent, main))
            if main not in self.listed_workers and main in self.workers and run == main:
                self.listed_workers.add(main)  # counted on the folded line
            return
        placed = False
        for nid in segment:
            self.lines.append(self.node_line(nid, lead))
            lead = "  " * indent
            if self.rows[nid].node_type == "plan_instruction" and run == main:
                self.draw_workers(main, indent + 1)
                placed = True
        if not placed and run == main and main in self.workers:
            self.draw_workers(main, indent + 1)

    def draw_workers(self, main: str | None, indent: int) -> None:
        """List (or, when expanded, draw) the worker contexts of main run ``main``."""
        if main in self.listed_workers:
            return
        self.listed_workers.add(main)
        for root in self.workers.get(main, []):
            run = self.rows[root].run_id
            if not self.visible(run):
                continue
            if self.expanded(run):
                self.draw(root, indent, 0, branch=False)
            else:
                self.lines.append(self.folded(self.chain_of(root), "  " * indent, indent, None))

    def chain_of(self, root: str) -> list[str]:
        """Return every node under ``root`` (itself included), in node_seq order."""
        out, todo = [], [root]
        while todo:
            nid = todo.pop()
            out.append(nid)
            todo.extend(reversed(self.tree.children(nid)))
        return sorted(out, key=lambda n: self.rows[n].node_seq)

    # --- lines ----------------------------------------------------------------------------

    def marks(self, nodes: Sequence[str]) -> str:
        out = ""
        if any(len(self.tree.children(n)) > 1 for n in nodes):
            out += " [yellow]⑂[/yellow]"
        compactions = [n for n in nodes if self.rows[n].node_type == "compaction"]
        if compactions:
            out += f" [magenta]{escape(self.compaction(compactions[0]))}[/magenta]"
        forks = [self.forks[n] for n in nodes if n in self.forks]
        if forks:
            out += f" [blue]⑃ {escape(forks[0])}[/blue]"
        return out

    def compaction(self, nid: str) -> str:
        """Return the mark of a compaction node: what it replaces (the nodes stay above)."""
        done = self.rows[nid].metadata.get("compacted")
        if not isinstance(done, dict):
            return "✂ compaction"
        span = f"{self.short(done.get('from'))}…{self.short(done.get('through'))}"
        return f"✂ compacted {done.get('nodes', '?')} nodes ({span})"

    def short(self, ident: object) -> str:
        return relative(self.sid, ident) if isinstance(ident, str) else "-"

    def node_line(self, nid: str, lead: str) -> Line:
        row = self.rows[nid]
        head = f"{escape(relative(self.sid, nid))} [dim]{row.role}/{row.node_type}[/dim]"
        text = escape(self.excerpt(row))
        marks = self.marks([nid])
        if nid == self.active:
            body = (
                f"[bold green]▶ {head}[/bold green]{marks} {text} [bold green](active)[/bold green]"
            )
            return Line(lead + body, active=True)
        if nid in self.on_path:
            return Line(f"{lead}[green]▶[/green] {head}{marks} {text}")
        return Line(f"{lead}  {head}{marks} {text}")

    def folded(self, nodes: Sequence[str], lead: str, indent: int, main: str | None) -> Line:
        """Return one line standing for ``nodes`` (a run's segment, or a worker context)."""
        first, last = self.rows[nodes[0]], self.rows[nodes[-1]]
        run = escape(relative(self.sid, first.run_id) if first.run_id else "-")
        count = f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}"
        workers = (
            len(self.workers.get(main, [])) if main is not None and main == first.run_id else 0
        )
        extra = f" · {workers} worker{'s' if workers != 1 else ''}" if workers else ""
        if len(nodes) > 1 and (first.role, first.node_type) == ("user", "message"):
            text = f"{_cut(self.excerpt(first), 40)} → {self.excerpt(last)}"
        else:
            text = self.excerpt(last)
        style = "green" if any(n in self.on_path for n in nodes) else "dim"
        body = f"[{style}]▸[/{style}] [bold]{run}[/bold] · {count}{extra}{self.marks(nodes)}"
        collapsible = run if indent == 0 and not lead.strip() else None
        return Line(f"{lead}{body} [dim]{escape(text)}[/dim]", collapsible=collapsible)

    def folded_branch(self, start: str, indent: int) -> None:
        nodes = self.chain_of(start)
        first = escape(relative(self.sid, start))
        self.lines.append(
            Line(
                f"{'  ' * indent}[yellow]⑂[/yellow] branch from {first}: {len(nodes)} nodes"
                " [dim](a larger --depth shows it)[/dim]"
            )
        )


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def fit(lines: list[Line], height: int | None) -> list[Line]:
    """Make ``lines`` fit in ``height`` rows, or at least show the active node in them.

    First the oldest collapsible lines (top-level folded runs) collapse into one ``⋯``
    line per group; then, if the active node's line is still below the screen (its own
    run is that long), the lines above it are cut to one ``⋯`` line.
    """
    if height is None:
        return lines
    out = list(lines)
    i = 0
    while len(out) > height and i < len(out):
        if not out[i].collapsible:
            i += 1
            continue
        j = i
        while j < len(out) and out[j].collapsible:
            j += 1
        take = min(j - i, len(out) - height + 1)  # the summary line takes a row too
        if take >= 2:
            runs = [line.collapsible for line in out[i : i + take]]
            out[i : i + take] = [
                Line(
                    f"[dim]⋯ {take} earlier runs folded ({runs[0]} … {runs[-1]}):"
                    " --all shows every node, --run RUN one run[/dim]"
                )
            ]
        i += 1
    active = next((k for k, line in enumerate(out) if line.active), None)
    if active is not None and height >= 2 and active >= height:
        cut = active - height + 2
        out[:cut] = [Line(f"[dim]⋯ {cut} lines above (--run RUN shows a run whole)[/dim]")]
    return out
