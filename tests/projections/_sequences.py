"""Hypothesis strategy for whole, valid session histories (single events: tests/strategies.py).

A history is a list of :class:`Step` — an event with the envelope a producer would give
the writer. :func:`to_stored` assigns seq / run_seq / event_id the way the store does,
for tests that fold without a database; the store tests append the same steps through
the real ``Writer`` instead.

The histories respect what the runtime guarantees: parents exist before children, a
second child under a node is a user message (the branch rule), switches target
existing nodes, runs end at most once, agents and runs are created once.
"""

from __future__ import annotations

from typing import Any

import msgspec
from _events import stored_event
from hypothesis import strategies as st

from eventlog.blocks import (
    ArtifactRefBlock,
    ContentBlock,
    JsonBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from eventlog.events import (
    ActiveNodeSwitched,
    AgentCreated,
    AgentStatusChanged,
    ArtifactCreated,
    Event,
    ModelRequested,
    Node,
    NodeAppended,
    RunEnded,
    RunStarted,
    SessionArchived,
    SessionCreated,
    TokenUsage,
    ToolCallStarted,
    Usage,
)
from eventlog.records import StoredEvent

SESSION_ID = "sess_20260612_153022_a1b2"
ROOT_AGENT = "agent_main"


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One event as handed to the writer (without the envelope the writer assigns)."""

    event: Event
    created_at: str
    agent_id: str | None = None
    run_id: str | None = None


_texts = st.text(alphabet="abcdé€😀 \n", max_size=12)
_small_json = st.dictionaries(st.sampled_from("abc"), st.integers(-3, 3), max_size=2)
_metadata = st.dictionaries(st.sampled_from(["k", "purpose", "x"]), st.integers(0, 9), max_size=2)
_OPS = (
    ["append"] * 6
    + ["switch"] * 2
    + [
        "agent",
        "agent_status",
        "run_start",
        "run_end",
        "usage",
        "noise",
        "artifact",
        "archive",
    ]
)
_NODE_TYPES = ["message", "message", "message", "compaction", "skill_context", "system_note"]


class _History:
    """The generator's bookkeeping: what exists so far."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.nodes: list[str] = []
        self.children: dict[str, int] = {}
        self.agents: list[str] = [ROOT_AGENT]
        self.open_runs: list[str] = []
        self.runs: list[str] = []
        self.artifacts: list[str] = []
        self.tool_calls: list[str] = []
        self.clock = 0

    def now(self, draw: st.DrawFn) -> str:
        # Equal timestamps happen (coarse clocks): the order must still come from seq.
        self.clock += draw(st.integers(0, 2))
        return f"2026-06-12T15:30:{self.clock:06d}Z"

    def add(
        self, draw: st.DrawFn, event: Event, agent: str | None = None, run: str | None = None
    ) -> None:
        self.steps.append(Step(event=event, created_at=self.now(draw), agent_id=agent, run_id=run))


def _content(draw: st.DrawFn, h: _History, role: str, *, big_json: bool) -> list[ContentBlock]:
    blocks: list[ContentBlock] = [TextBlock(text=draw(_texts))]
    if role == "assistant" and draw(st.booleans()):
        call_id = f"call_{len(h.tool_calls)}"
        h.tool_calls.append(call_id)
        blocks.append(ToolCallBlock(id=call_id, name="read", arguments={"p": draw(_texts)}))
    if role == "tool" and h.tool_calls:
        call_id = draw(st.sampled_from(h.tool_calls))
        blocks = [
            ToolResultBlock(
                tool_call_id=call_id,
                name="read",
                content=[TextBlock(text=draw(_texts))],
                is_error=draw(st.booleans()),
            )
        ]
    kind = draw(st.sampled_from(["none", "none", "json", "ref"]))
    if kind == "json":
        data: Any = draw(_small_json)
        if big_json and draw(st.booleans()):
            data = {"blob": "x" * 200, "n": draw(st.integers(0, 3))}
        blocks.append(JsonBlock(data=data, summary=draw(st.sampled_from(["", "a json"]))))
    elif kind == "ref" and h.artifacts:
        blocks.append(
            ArtifactRefBlock(artifact_id=draw(st.sampled_from(h.artifacts)), summary="an artifact")
        )
    return blocks


# One composite draws a whole session history step by step; its branches are the steps.
@st.composite
def session_histories(  # noqa: C901, PLR0912, PLR0915
    draw: st.DrawFn, max_steps: int = 40, big_json: bool = False
) -> list[Step]:
    """Draw a valid session history: creation, then a random mix of operations.

    Args:
        big_json: sometimes add JSON blocks of ~220 bytes (a store opened with a small
            ``artifact_threshold`` turns them into artifacts).
    """
    h = _History()
    h.add(
        draw,
        SessionCreated(
            session_id=SESSION_ID,
            cwd="/project",
            root_agent_id=ROOT_AGENT,
            metadata=draw(_metadata),
        ),
    )
    h.add(
        draw, AgentCreated(agent_id=ROOT_AGENT, agent_type="orchestrator", role="brain"), ROOT_AGENT
    )
    for _ in range(draw(st.integers(0, max_steps))):
        op = draw(st.sampled_from(_OPS))
        agent = draw(st.sampled_from(h.agents))
        run = draw(st.sampled_from(h.open_runs)) if h.open_runs and draw(st.booleans()) else None
        if op == "append":
            parent = draw(st.sampled_from([None, *h.nodes])) if h.nodes else None
            if parent is not None and h.children.get(parent):
                role, node_type = "user", "message"  # a new branch: only from a user message
            else:
                role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
                node_type = draw(st.sampled_from(_NODE_TYPES))
            node_id = f"node_{len(h.nodes)}"
            node = Node(
                node_id=node_id,
                parent_id=parent,
                agent_id=agent,
                run_id=run,
                role=role,
                node_type=node_type,  # type: ignore[arg-type]
                content=_content(draw, h, role, big_json=big_json),
                metadata=draw(_metadata),
                token_count=draw(st.none() | st.integers(0, 500)),
            )
            if parent is not None:
                h.children[parent] = h.children.get(parent, 0) + 1
            h.nodes.append(node_id)
            h.add(draw, NodeAppended(node=node, activate=draw(st.booleans())), agent, run)
        elif op == "switch" and h.nodes:
            h.add(
                draw,
                ActiveNodeSwitched(from_node_id=None, to_node_id=draw(st.sampled_from(h.nodes))),
                agent,
            )
        elif op == "agent":
            new = f"agent_w{len(h.agents)}"
            h.agents.append(new)
            kind = draw(st.sampled_from(["sub", "fork"]))
            h.add(
                draw,
                AgentCreated(
                    agent_id=new,
                    agent_type=kind,  # type: ignore[arg-type]
                    parent_agent_id=ROOT_AGENT,
                    created_by_run_id=run,
                    role="worker",
                    purpose=draw(st.sampled_from(["", "review"])),
                    metadata=draw(_metadata),
                ),
                ROOT_AGENT,
                run,
            )
        elif op == "agent_status":
            status = draw(st.sampled_from(["idle", "running", "completed", "failed", "cancelled"]))
            result = draw(st.none() | _small_json)
            h.add(
                draw,
                AgentStatusChanged(
                    agent_id=agent,
                    status=status,  # type: ignore[arg-type]
                    result=result,
                ),
                agent,
            )
        elif op == "run_start":
            run_id = f"run_{len(h.runs)}"
            h.runs.append(run_id)
            h.open_runs.append(run_id)
            h.add(
                draw,
                RunStarted(
                    run_id=run_id,
                    agent_id=agent,
                    phase=draw(_texts),
                    rng_seed=draw(st.integers(0, 2**31)),
                    start_node_id=draw(st.sampled_from([None, *h.nodes])),
                    metadata=draw(_metadata),
                ),
                agent,
                run_id,
            )
        elif op == "run_end" and h.open_runs:
            run_id = draw(st.sampled_from(h.open_runs))
            h.open_runs.remove(run_id)
            status = draw(st.sampled_from(["completed", "failed", "cancelled"]))
            h.add(
                draw,
                RunEnded(
                    run_id=run_id,
                    status=status,  # type: ignore[arg-type]
                    end_reason=draw(st.sampled_from(["completed", "max_turns", "failed"])),
                    end_node_id=draw(st.sampled_from([None, *h.nodes])),
                    turn_count=draw(st.integers(0, 9)),
                    usage=Usage(input_tokens=draw(st.integers(0, 99))),
                    error=draw(st.none() | st.just({"message": "boom"})),
                ),
                agent,
                run_id,
            )
        elif op == "usage":
            h.add(
                draw,
                TokenUsage(
                    model=draw(st.sampled_from(["m1", "m2"])),
                    role=draw(st.sampled_from(["brain", "worker"])),
                    phase=draw(st.sampled_from(["route", "primary"])),
                    usage=Usage(
                        input_tokens=draw(st.integers(0, 50)),
                        output_tokens=draw(st.integers(0, 50)),
                    ),
                ),
                agent,
                run,
            )
        elif op == "noise":
            if draw(st.booleans()):
                h.add(draw, ModelRequested(call_index=0, model="m1", request_hash="h"), agent, run)
            else:
                h.add(draw, ToolCallStarted(tool_call_id="tc", tool_name="read"), agent, run)
        elif op == "artifact":
            art = draw(st.sampled_from([f"art_{len(h.artifacts)}", *h.artifacts]))
            if art not in h.artifacts:
                h.artifacts.append(art)
            h.add(
                draw,
                ArtifactCreated(
                    artifact_id=art,
                    path=f"{SESSION_ID}/{art}.json",
                    size_bytes=draw(st.integers(0, 99)),
                    sha256=draw(st.sampled_from(["aa", "bb"])),
                    summary=draw(_texts),
                    node_id=draw(st.sampled_from([None, *h.nodes])),
                ),
                agent,
                run,
            )
        elif op == "archive" and draw(st.integers(0, 3)) == 0:
            h.add(draw, SessionArchived(reason="done"), agent)
    return h.steps


def to_stored(steps: list[Step], session_id: str = SESSION_ID) -> list[StoredEvent]:
    """Give ``steps`` the envelope the store would (no JSON externalisation)."""
    out: list[StoredEvent] = []
    run_seq: dict[str, int] = {}
    for seq, step in enumerate(steps, start=1):
        rs = None
        if step.run_id is not None:
            rs = run_seq[step.run_id] = run_seq.get(step.run_id, 0) + 1
        event = step.event
        node_id = (
            event.node.node_id
            if isinstance(event, NodeAppended)
            else event.to_node_id
            if isinstance(event, ActiveNodeSwitched)
            else None
        )
        out.append(
            stored_event(
                seq,
                event,
                event_id=f"{step.run_id}#{rs}" if step.run_id else f"{session_id}#s{seq}",
                run_seq=rs,
                agent_id=step.agent_id,
                run_id=step.run_id,
                node_id=node_id,
                created_at=step.created_at,
            )
        )
    return out


def stored_histories(max_steps: int = 40) -> st.SearchStrategy[list[StoredEvent]]:
    """Histories as stored events (envelopes assigned like the store)."""
    return session_histories(max_steps=max_steps).map(to_stored)
