"""Diff two histories: two sessions (a fork and its parent, a rerun and the original) or
two nodes of one session.

A *side* is the path root → its end node (a session's active node, or a node given),
plus the *steps* of every main run whose work that path holds: the system prompt each
model call was sent (its first attempt's), the model replies, tool results and worker
results of the run and its workers, and the run's outcome — so a rerun that changed only a
role's instructions differs where that role was asked. A run's
steps are read from the session that recorded it — a fork's copied nodes keep the
parent's ids, so its prefix's steps come from the parent's log (``session_of``). A run
counts when its end node is on the path (a fork taken mid-run has that run's nodes but
none of its work), or when it is a run of the side's own session still open.

The two sides are aligned by content: the common prefix of their nodes (role, type and
content text), then of their steps (kind, role or tool, text); what follows on either
side is where they part, aligned by their longest common subsequence (``difflib``), so a
step one side lacks does not shift every later pair. Ids, timestamps and the order in
which concurrent workers happened to finish are not compared (worker results are taken
in task order).
Tokens and, given prices, cost are totalled per side.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from itertools import zip_longest
from typing import Any

import msgspec

from eventlog.blocks import ContentBlock, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.events import (
    ContentStored,
    ModelRequested,
    ModelResponded,
    RunEnded,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    WorkerResultReceived,
)
from eventlog.ids import is_main_run, session_of, task_of
from eventlog.records import NodeRow, StoredEvent
from eventlog.store import EventStore
from projections.costs import Group, Price, by_nothing, grouped, usage_cells

#: The longest text of one step kept in a diff (the rest is cut, marked with "…").
MAX_TEXT = 2000


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One compared thing of a history: a node, a model reply, a tool result, a worker
    result or a run's outcome. ``ref`` (the id it comes from) is not compared."""

    kind: str
    what: str
    text: str
    ref: str = ""

    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.what, self.text)


class Side(msgspec.Struct, frozen=True, kw_only=True):
    """One history: where it ends, what it holds, its tokens and cost."""

    session_id: str
    end_node_id: str | None
    nodes: list[Step]
    steps: list[Step]
    runs: list[str]
    usage: Group


class HistoryDiff(msgspec.Struct, frozen=True, kw_only=True):
    """Two histories aligned: the common prefix, then each side's rest."""

    a: Side
    b: Side
    #: Nodes both paths begin with, and the last of them on each side (None: none).
    common_nodes: int
    parted_after: tuple[str | None, str | None]
    #: Steps both sides begin with; then the rest of each, paired in order: the pairs
    #: that differ (a missing step is None), and how many pairs after them are alike.
    common_steps: int
    differing: list[tuple[Step | None, Step | None]]
    alike_after: int

    @property
    def identical(self) -> bool:
        """True when both sides hold the same nodes and the same steps."""
        return (
            len(self.a.nodes) == len(self.b.nodes) == self.common_nodes
            and len(self.a.steps) == len(self.b.steps) == self.common_steps
        )

    def to_json(self) -> dict[str, Any]:
        """Return the diff as JSON builtins (``clew diff --json``)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        out["identical"] = self.identical
        for key in ("a", "b"):
            side = out[key]
            side["nodes_after"] = side["nodes"][self.common_nodes :]
            del side["nodes"], side["steps"]
        return out


def side_of(
    store: EventStore,
    session_id: str,
    end_node_id: str | None,
    prices: Mapping[str, Price] | None = None,
) -> Side:
    """Return the history of ``session_id`` that ends at ``end_node_id``."""
    path = store.read_active_path(session_id, end_node_id) if end_node_id else []
    on_path = {n.node_id for n in path}
    runs: list[str] = []
    events: list[StoredEvent] = []
    texts: dict[str, dict[str, str]] = {}  # by session: its stored contents by hash
    for run_id in _main_runs(session_id, path):
        home = session_of(run_id)
        if not store.session_exists(home):
            continue
        recorded = store.read_runs_under(home, run_id)
        if home not in texts:
            texts[home] = {
                e.event.content_hash: e.event.text
                for e in store.read_session_events(home, "content_stored")
                if isinstance(e.event, ContentStored)
            }
        ended = [e.event for e in recorded if isinstance(e.event, RunEnded)]
        ended_here = any(e.run_id == run_id and e.end_node_id in on_path for e in ended)
        if ended_here or (home == session_id and not ended):
            runs.append(run_id)
            events.extend(recorded)
    cells = usage_cells(events)
    usage = grouped(cells, prices or {}, by_nothing) or [Group(name="total")]
    norm = _renamer(runs)
    return Side(
        session_id=session_id,
        end_node_id=end_node_id,
        nodes=[norm(_node_step(n)) for n in path],
        steps=[
            norm(s)
            for run_id in runs
            for s in _run_steps(run_id, events, texts.get(session_of(run_id)))
        ],
        runs=runs,
        usage=usage[0],
    )


def _renamer(runs: list[str]) -> Callable[[Step], Step]:
    """Return how a step's text names the side's runs: by their place on the path
    (``⟨run 2⟩``), so a rerun's ids (another session, run 1) compare equal."""
    if not runs:
        return lambda s: s
    names = {run: f"⟨run {i}⟩" for i, run in enumerate(runs, 1)}
    pattern = re.compile("|".join(re.escape(r) for r in sorted(runs, key=len, reverse=True)))

    def rename(text: str) -> str:
        return pattern.sub(lambda m: names[m.group(0)], text)

    def norm(step: Step) -> Step:
        return msgspec.structs.replace(step, what=rename(step.what), text=rename(step.text))

    return norm


def diff_sides(a: Side, b: Side) -> HistoryDiff:
    """Align two histories (see the module docstring)."""
    nodes = _common(a.nodes, b.nodes)
    steps = _common(a.steps, b.steps)
    last_a = a.nodes[nodes - 1].ref if nodes else None
    last_b = b.nodes[nodes - 1].ref if nodes else None
    pairs = aligned(a.steps[steps:], b.steps[steps:])
    differing = [(x, y) for x, y in pairs if x is None or y is None or x.key() != y.key()]
    return HistoryDiff(
        a=a,
        b=b,
        common_nodes=nodes,
        parted_after=(last_a, last_b),
        common_steps=steps,
        differing=differing,
        alike_after=len(pairs) - len(differing),
    )


def aligned(a: list[Step], b: list[Step]) -> list[tuple[Step | None, Step | None]]:
    """Pair two step lists by their longest common subsequence: equal steps side by side,
    a replaced run pairwise (the longer one's rest against nothing), a step only one side
    has against nothing. Every step of each list is in exactly one pair, in order."""
    matcher = difflib.SequenceMatcher(
        a=[s.key() for s in a], b=[s.key() for s in b], autojunk=False
    )
    pairs: list[tuple[Step | None, Step | None]] = []
    for _, i1, i2, j1, j2 in matcher.get_opcodes():
        pairs.extend(zip_longest(a[i1:i2], b[j1:j2]))
    return pairs


def _common(a: list[Step], b: list[Step]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x.key() != y.key():
            break
        n += 1
    return n


def _main_runs(session_id: str, path: list[NodeRow]) -> list[str]:
    """Return the main runs that made the path's nodes, in path order."""
    out: list[str] = []
    for n in path:
        run = n.run_id
        if run is not None and run not in out and is_main_run(session_of(run), n.agent_id):
            out.append(run)
    return out


def _run_steps(
    run_id: str, events: list[StoredEvent], texts: Mapping[str, str] | None = None
) -> list[Step]:
    """Return the steps of main run ``run_id``: its own in order (worker results in task
    order, its outcome last), then each of its workers' runs in id order.

    ``texts``: the session's stored contents by hash (a request by reference names its
    system prompt by hash).
    """
    own = [e for e in events if e.run_id == run_id]
    subs = sorted({e.run_id for e in events if e.run_id and e.run_id.startswith(run_id + "/")})
    roles = {
        (e.run_id, e.event.call_index): e.event.role
        for e in events
        if isinstance(e.event, ModelRequested)
    }
    args = {
        e.event.tool_call_id: e.event.arguments
        for e in events
        if isinstance(e.event, ToolCallStarted)
    }
    asked = _requests(events, texts or {})
    main = [s for e in own if (s := asked.get(e.event_id) or _step(e, roles, args))]
    workers = sorted((s for s in main if s.kind == "worker"), key=lambda s: s.what)
    outcome = [s for s in main if s.kind == "outcome"]
    steps = [s for s in main if s.kind not in ("worker", "outcome")] + workers
    for sub in subs:
        steps += [
            s
            for e in events
            if e.run_id == sub
            if (s := asked.get(e.event_id) or _step(e, roles, args))
        ]
    return steps + outcome


def _requests(events: list[StoredEvent], texts: Mapping[str, str]) -> dict[str, Step]:
    """Return a ``request`` step (the system prompt sent) for the first attempt of each
    model call, by the event's id: a retried attempt or a fallback candidate asks again
    with the same prompt."""
    out: dict[str, Step] = {}
    for e in events:
        ev = e.event
        if isinstance(ev, ModelRequested) and ev.attempt == 1:
            system = ev.system or texts.get(ev.system_ref, ev.system_ref)
            out[e.event_id] = Step(kind="request", what=f"{ev.role} · system prompt",
                                   text=_cut(system), ref=e.event_id)  # fmt: skip
    return out


def _step(
    e: StoredEvent,
    roles: Mapping[tuple[str | None, int], str],
    args: Mapping[str, dict[str, Any]],
) -> Step | None:
    ev = e.event
    match ev:
        case ModelResponded():
            role = roles.get((e.run_id, ev.call_index), "")
            return Step(kind="reply", what=f"{role} · {ev.model}", text=text_of(ev.content),
                        ref=e.event_id)  # fmt: skip
        case ToolCallFinished() | ToolFailed():
            called = _json(args.get(ev.tool_call_id, {}))
            result = (
                f"{ev.error_type}: {ev.message}"
                if isinstance(ev, ToolFailed)
                else text_of(ev.content)
            )
            return Step(kind="tool", what=ev.tool_name, text=_cut(f"{called} → {result}"),
                        ref=ev.tool_call_id)  # fmt: skip
        case WorkerResultReceived(result=r):
            text = f"{r.status}: {r.summary}" + (f" ({r.error})" if r.error else "")
            return Step(kind="worker", what=task_of(r.task_id), text=_cut(text), ref=e.event_id)
        case RunEnded() if ev.run_id == e.run_id and "/" not in ev.run_id:
            error = (ev.error or {}).get("message") or ""
            text = f"{ev.status} ({ev.end_reason}) {error}".strip()
            return Step(kind="outcome", what="run", text=_cut(text), ref=e.event_id)
    return None


def _node_step(n: NodeRow) -> Step:
    return Step(kind="node", what=f"{n.role}/{n.node_type}", text=text_of(n.content),
                ref=n.node_id)  # fmt: skip


def text_of(blocks: Iterable[ContentBlock]) -> str:
    """Return content blocks as one text: text as it is, anything else as its JSON."""
    parts: list[str] = []
    for b in blocks:
        if isinstance(b, TextBlock):
            parts.append(b.text)
        elif isinstance(b, ToolCallBlock):
            parts.append(f"[call {b.name} {_json(b.arguments)}]")
        elif isinstance(b, ToolResultBlock):
            parts.append(f"[result {text_of(b.content)}]")
        else:
            parts.append(_json(msgspec.to_builtins(b)))
    return _cut("\n".join(parts))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"
