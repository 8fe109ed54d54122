"""Replay benchmark: projection rebuild vs a naive fold, and context building vs session size.

Run: ``python benchmarks/bench_replay.py [--events 100000] [--keep DIR]``

Builds, through the real store (``Writer``, durability ``normal``):

1. a synthetic session of ``--events`` events (~300-byte payloads): runs of an
   orchestrator and workers, user/assistant/tool nodes with tool call pairs, branches
   from user messages, switches, model calls, token usage;
2. two sessions of 10k and 100k nodes whose active paths have the same depth.

Then prints, measured in this one run:

- the naive reference fold: read rows + ``json.loads`` + a dict fold + the active path;
- the projection rebuild: ``rebuild(store.iter_events(...))`` (read + decode + fold),
  read + decode alone, and the fold alone over already-decoded events;
- context building at the tip (``store.read_active_path`` + ``build_context``) in the
  10k- and 100k-node sessions, and their ratio.

Targets: rebuild ≥ 400k events/s and ≥ 2.5× naive (issue 17; were 300k and 2×);
context ratio 100k/10k ≤ 1.5. The hash chain alone (``store.check_chain``: read every
row and hash it, no decoding) is printed too: every full read pays it.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
from _timing import best_of

from eventlog.blocks import ContentBlock, TextBlock, ToolCallBlock, ToolResultBlock
from eventlog.codec import decode_event
from eventlog.events import (
    ActiveNodeSwitched,
    AgentCreated,
    AgentStatusChanged,
    Event,
    ModelRequested,
    ModelResponded,
    Node,
    NodeAppended,
    RunEnded,
    RunStarted,
    SessionCreated,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    Usage,
)
from eventlog.records import AppendRequest, StoredEvent
from eventlog.sqlite import SQLiteStore
from eventlog.writer import Writer
from projections import build_context, rebuild

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "clew",
    "replays",
    "every",
    "event",
]


def prose(rng: random.Random, n_bytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_bytes:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


class SessionWriter:
    """Appends events for one session through the writer, with a monotonic clock."""

    def __init__(self, writer: Writer, sid: str) -> None:
        self.writer, self.sid, self.t = writer, sid, 0
        self.futures: list[Any] = []
        self.events = 0

    def add(self, event: Event, agent: str | None = None, run: str | None = None) -> None:
        self.t += 1
        at = f"2026-06-12T15:{self.t // 60_000_000:02d}:{self.t % 60_000_000:08d}Z"
        self.futures.append(
            self.writer.submit(
                AppendRequest(
                    session_id=self.sid, event=event, created_at=at, agent_id=agent, run_id=run
                )
            )
        )
        self.events += 1
        if len(self.futures) > 5000:
            self.drain()

    def node(
        self,
        node_id: str,
        parent: str | None,
        role: str,
        content: list[ContentBlock],
        agent: str = "main",
        run: str | None = None,
        *,
        activate: bool = False,
    ) -> None:
        """Append a ``node_appended`` of a node written by ``agent`` (in ``run``)."""
        node = Node(
            node_id=node_id,
            parent_id=parent,
            agent_id=agent,
            run_id=run,
            role=role,  # type: ignore[arg-type]
            content=content,
        )
        self.add(NodeAppended(node=node, activate=activate), agent, run)

    def drain(self) -> None:
        for f in self.futures:
            f.get(timeout=120)
        self.futures.clear()


def build_replay_session(writer: Writer, sid: str, n_events: int, rng: random.Random) -> None:
    """A realistic mix: ~35% nodes, model calls, tools, usage, runs, agents, branches."""
    w = SessionWriter(writer, sid)
    w.add(SessionCreated(session_id=sid, cwd="/project", root_agent_id="main"))
    w.add(AgentCreated(agent_id="main", agent_type="orchestrator", role="brain"), "main")
    tip: str | None = None
    user_parent: dict[str, str | None] = {}
    nodes = 0
    runs = 0
    while w.events < n_events:
        runs += 1
        agent = "main" if runs % 3 else f"worker_{runs}"
        if agent != "main":
            w.add(
                AgentCreated(
                    agent_id=agent,
                    agent_type="sub",
                    parent_agent_id="main",
                    role="worker",
                    purpose="worker",
                ),
                "main",
            )
            w.add(AgentStatusChanged(agent_id=agent, status="running"), agent)
        run = f"run_{runs}"
        w.add(
            RunStarted(
                run_id=run, agent_id=agent, phase="primary", start_node_id=tip, rng_seed=runs
            ),
            agent,
            run,
        )
        # one in eight user turns re-asks an earlier user message: a sibling of it, so a
        # new branch that starts with a user message (the branch rule)
        parent = tip
        if user_parent and rng.random() < 0.125:
            parent = user_parent[rng.choice(list(user_parent))]
        nodes += 1
        uid = f"n{nodes}"
        w.node(uid, parent, "user", [TextBlock(text=prose(rng, 200))], agent, run, activate=True)
        user_parent[uid] = parent
        tip = uid
        for turn in range(rng.randint(1, 4)):
            call = f"call_{nodes}_{turn}"
            w.add(
                ModelRequested(
                    call_index=turn,
                    model="model-a",
                    role="brain",
                    phase="primary",
                    request_hash=f"{rng.getrandbits(128):032x}" * 2,
                    tools=["read", "write", "grep"],
                ),
                agent,
                run,
            )
            w.add(
                ModelResponded(
                    call_index=turn,
                    model="model-a",
                    content=[TextBlock(text=prose(rng, 150))],
                    usage=Usage(input_tokens=900, output_tokens=80),
                ),
                agent,
                run,
            )
            w.add(
                TokenUsage(
                    model="model-a",
                    role="brain",
                    phase="primary",
                    call_index=turn,
                    usage=Usage(input_tokens=900, output_tokens=80),
                ),
                agent,
                run,
            )
            nodes += 1
            aid = f"n{nodes}"
            blocks: list[ContentBlock] = [
                TextBlock(text=prose(rng, 120)),
                ToolCallBlock(id=call, name="read", arguments={"path": "src/a.py"}),
            ]
            w.node(aid, tip, "assistant", blocks, agent, run, activate=True)
            w.add(
                ToolCallStarted(
                    tool_call_id=call, tool_name="read", arguments={"path": "src/a.py"}
                ),
                agent,
                run,
            )
            result = [TextBlock(text=prose(rng, 180))]
            w.add(ToolCallFinished(tool_call_id=call, tool_name="read", content=result), agent, run)
            nodes += 1
            tid = f"n{nodes}"
            call_result = [ToolResultBlock(tool_call_id=call, name="read", content=result)]
            w.node(tid, aid, "tool", call_result, agent, run, activate=True)
            tip = tid
        if rng.random() < 0.05 and user_parent:
            target = rng.choice(list(user_parent))
            w.add(ActiveNodeSwitched(from_node_id=tip, to_node_id=target), agent)
            tip = target
        w.add(
            RunEnded(
                run_id=run,
                status="completed",
                end_reason="completed",
                end_node_id=tip,
                turn_count=2,
                usage=Usage(input_tokens=1800, output_tokens=160),
            ),
            agent,
            run,
        )
        if agent != "main":
            w.add(
                AgentStatusChanged(
                    agent_id=agent, status="completed", result={"summary": prose(rng, 60)}
                ),
                agent,
            )
    w.drain()


def build_tree_session(
    writer: Writer, sid: str, n_nodes: int, depth: int, rng: random.Random
) -> None:
    """``n_nodes`` nodes; the active path (the spine) is ``depth`` deep, the rest side branches."""
    w = SessionWriter(writer, sid)
    w.add(SessionCreated(session_id=sid, cwd="/project", root_agent_id="main"))
    spine: list[str] = []
    for i in range(depth):
        nid = f"s{i}"
        role = "user" if i % 2 == 0 else "assistant"
        w.node(nid, spine[-1] if spine else None, role, [TextBlock(text=prose(rng, 200))])
        spine.append(nid)
    made = depth
    side = 0
    while made < n_nodes:
        # a side branch of up to 50 nodes, re-asked from a user message of the spine
        parent: str | None = spine[rng.randrange(0, depth - 1, 2) - 1] if depth > 2 else None
        for j in range(min(50, n_nodes - made)):
            side += 1
            nid = f"b{side}"
            role = "user" if j % 2 == 0 else "assistant"
            w.node(nid, parent, role, [TextBlock(text=prose(rng, 200))])
            parent = nid
            made += 1
    w.add(ActiveNodeSwitched(from_node_id=None, to_node_id=spine[-1]), "main")
    w.drain()


# --- the naive reference fold ---------------------------------------------------------------


# The baseline is naive on purpose: one function, as a first attempt would write it.
def naive_fold(db: Path, sid: str) -> tuple[int, list[str]]:  # noqa: C901
    """Read every row, json.loads it, fold into dicts, walk the active path."""
    conn = apsw.Connection(str(db))
    parents: dict[str, str | None] = {}
    nodes: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}
    agents: dict[str, dict[str, Any]] = {}
    usage: dict[str, int] = {}
    active: str | None = None
    n = 0
    for etype, payload, at in conn.execute(
        f"SELECT event_type, payload_json, created_at FROM events_{sid} ORDER BY seq"
    ):
        n += 1
        p = json.loads(payload)
        if etype == "node_appended":
            node = p["node"]
            nodes[node["node_id"]] = node
            parents[node["node_id"]] = node["parent_id"]
            if p.get("activate"):
                active = node["node_id"]
        elif etype == "active_node_switched":
            active = p["to_node_id"]
        elif etype == "run_started":
            runs[p["run_id"]] = {"status": "running", "created_at": at, **p}
        elif etype == "run_ended":
            runs[p["run_id"]].update(status=p["status"], end_reason=p["end_reason"], updated_at=at)
        elif etype == "agent_created":
            agents[p["agent_id"]] = {"status": "idle", **p}
        elif etype == "agent_status_changed":
            agents[p["agent_id"]]["status"] = p["status"]
        elif etype == "token_usage":
            usage[p["model"]] = usage.get(p["model"], 0) + p["usage"]["input_tokens"]
    path: list[str] = []
    while active is not None:
        path.append(active)
        active = parents[active]
    conn.close()
    return n, path[::-1]


def streamed_events(db: Path, sid: str) -> Any:
    """What ``iter_events`` could be: one cursor, rows decoded as they stream (no batches)."""
    conn = apsw.Connection(str(db))
    for r in conn.execute(f"SELECT * FROM events_{sid} ORDER BY seq"):
        yield StoredEvent(
            event_id=r[0],
            seq=r[1],
            run_seq=r[2],
            agent_id=r[3],
            run_id=r[4],
            level=r[5],
            event_type=r[6],
            node_id=r[7],
            tool_call_id=r[8],
            created_at=r[10],
            event=decode_event(r[9]),
        )
    conn.close()


def gc_paused(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Run ``fn`` with the cyclic GC paused (the decoded events hold no cycles)."""

    def run() -> Any:
        gc.disable()
        try:
            return fn()
        finally:
            gc.enable()

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="directory for the database")
    args = ap.parse_args()
    rng = random.Random(20260612)
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="clew_bench_"))
    db = tmp / "sessions.sqlite"
    sid, small, large = "sess_replay", "sess_tree_10k", "sess_tree_100k"
    t0 = time.perf_counter()
    store = SQLiteStore(db, durability="normal")
    writer = Writer(store)
    build_replay_session(writer, sid, args.events, rng)
    build_tree_session(writer, small, 10_000, args.depth, rng)
    build_tree_session(writer, large, 100_000, args.depth, rng)
    writer.stop()
    print(f"setup: wrote the sessions in {time.perf_counter() - t0:.1f}s ({db})")

    reader = SQLiteStore(db)
    n = reader.count_events(sid)
    size = reader._query(f"SELECT AVG(LENGTH(payload_json)) FROM events_{sid}")[0][0]
    print(f"replay session: {n} events, mean payload {size:.0f} bytes")

    t_naive, (_, naive_path) = best_of(args.repeats, lambda: naive_fold(db, sid))
    t_rebuild, state = best_of(args.repeats, lambda: rebuild(reader.iter_events(sid)))
    assert naive_path == state.tree.active_path_ids(), "naive and projection disagree"
    t_read, decoded = best_of(args.repeats, lambda: list(reader.iter_events(sid)))
    t_fold, _ = best_of(args.repeats, lambda: rebuild(decoded))
    t_chain, _ = best_of(args.repeats, lambda: reader.check_chain(sid))
    decoded.clear()
    t_stream, _ = best_of(args.repeats, lambda: rebuild(streamed_events(db, sid)))
    t_stream_gc, _ = best_of(args.repeats, gc_paused(lambda: rebuild(streamed_events(db, sid))))

    def ctx(session: str) -> float:
        def once() -> int:
            return len(build_context(reader.read_active_path(session)))

        once()
        samples = [best_of(1, once)[0] for _ in range(30)]
        return statistics.median(samples)

    t_small, t_large = ctx(small), ctx(large)
    depth = len(reader.read_active_path(large))

    rows = [
        ("naive fold (read + json.loads + dicts + path)", t_naive, n / t_naive, 1.0),
        (
            "projection rebuild (read + decode + fold)",
            t_rebuild,
            n / t_rebuild,
            t_naive / t_rebuild,
        ),
        ("  read + decode only (store.iter_events)", t_read, n / t_read, t_naive / t_read),
        ("  fold only (rebuild over decoded events)", t_fold, n / t_fold, t_naive / t_fold),
        ("  hash chain only (store.check_chain)", t_chain, n / t_chain, t_naive / t_chain),
        (
            "rebuild over a one-cursor stream (proposed read)",
            t_stream,
            n / t_stream,
            t_naive / t_stream,
        ),
        (
            "  same, cyclic GC paused during the rebuild",
            t_stream_gc,
            n / t_stream_gc,
            t_naive / t_stream_gc,
        ),
    ]
    print(f"\n| {'step':48} | {'seconds':>8} | {'events/s':>10} | {'× naive':>7} |")
    print(f"|{'-' * 50}|{'-' * 10}|{'-' * 12}|{'-' * 9}|")
    for name, t, rate, ratio in rows:
        print(f"| {name:48} | {t:8.3f} | {rate:10,.0f} | {ratio:7.2f} |")
    print(f"\n| context build at the tip (depth {depth}) | median ms |")
    print("|---|---|")
    print(f"| 10k-node session | {t_small * 1000:.2f} |")
    print(f"| 100k-node session | {t_large * 1000:.2f} |")
    print(f"| ratio 100k / 10k | {t_large / t_small:.2f} |")
    ok_rate = n / t_rebuild >= 400_000
    ok_ratio = t_naive / t_rebuild >= 2.5
    ok_ctx = t_large / t_small <= 1.5
    print(
        f"\ntargets: rebuild ≥ 400k ev/s: {'met' if ok_rate else 'NOT met'}; "
        f"≥ 2.5× naive: {'met' if ok_ratio else 'NOT met'}; "
        f"context ratio ≤ 1.5: {'met' if ok_ctx else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
