"""The edges of orchestration: the router's plan and the normalisation of worker replies.

Everything an LLM returns is parsed here with pydantic, once. ``taskId`` and
``parentId`` always come from the handoff, never from a model's reply.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pydantic

from actors.errors import PlanError
from eventlog.blocks import ContentBlock, JsonBlock, TextBlock
from eventlog.events import Todo
from eventlog.packets import ContextRef, HandoffPacket, TaskProgress, WorkerResult

TASK_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
RESERVED_TASK_IDS = {"primary", "review"}


class PlannedWorker(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True)
    id: str
    role: str = pydantic.Field(min_length=1)
    goal: str = pydantic.Field(min_length=1)
    deps: list[str] = []
    #: ``continue: true``: continue the context tree of the last finished worker of the
    #: same role in this run instead of starting a new root (flow 2; seed 004).
    continues: bool = pydantic.Field(default=False, alias="continue")

    @pydantic.field_validator("id")
    @classmethod
    def _safe_id(cls, v: str) -> str:
        if not TASK_ID_RE.match(v) or v in RESERVED_TASK_IDS:
            raise ValueError(
                f"worker id {v!r} must match [a-zA-Z0-9_-]{{1,40}} and not be reserved"
            )
        return v


class Clarification(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore")
    required: bool = False
    question: str = ""
    reason: str = ""
    missing_fields: list[str] = []
    options: list[str] = []


class Plan(pydantic.BaseModel):
    """A routed plan: the primary role, the workers and their dependencies."""

    model_config = pydantic.ConfigDict(extra="ignore")
    primary_role: str = "assistant"
    workers: list[PlannedWorker] = []
    review: bool = False
    clarification: Clarification = Clarification()
    #: The plan's task name (flow 2): names its Task WAL and plan file, once sanitised.
    task_name: str = ""

    @pydantic.model_validator(mode="after")
    def _graph_is_sound(self) -> Plan:
        ids = [w.id for w in self.workers]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate worker ids {dupes}")
        known = set(ids)
        for w in self.workers:
            for d in w.deps:
                if d not in known:
                    raise ValueError(f"worker {w.id!r} depends on unknown worker {d!r}")
        cycle = find_cycle({w.id: list(w.deps) for w in self.workers})
        if cycle:
            raise ValueError("dependency cycle " + " → ".join(cycle))
        return self

    def todos(self, reviewer: str = "reviewer", flow: int = 1) -> list[Todo]:
        """Return the checkable items: one per worker, the primary, and the review.

        The primary runs after the pool even when a worker failed (it reports the
        failure): from flow 2 it waits *after* every worker (an ordering a failure does
        not turn into a block); flow 1 gave it no edges at all.
        """
        out = [
            Todo(id=w.id, title=w.goal, owner_role=w.role, deps=list(w.deps)) for w in self.workers
        ]
        after = [w.id for w in self.workers] if flow >= 2 else []
        out.append(
            Todo(
                id="primary", title="Answer the request", owner_role=self.primary_role, after=after
            )
        )
        if self.review:
            out.append(
                Todo(id="review", title="Review the answer", owner_role=reviewer, deps=["primary"])
            )
        return out


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """Return a dependency cycle as ``[a, b, …, a]`` (a depends on b …), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for n in graph:
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


FALLBACK_PLAN = Plan()


def json_payload(content: list[ContentBlock]) -> Any:
    """Return the JSON value of a reply: its json block, else its text parsed as JSON.

    Raises:
        PlanError: no JSON in the reply.
    """
    for b in content:
        if isinstance(b, JsonBlock):
            return b.data
    text = "".join(b.text for b in content if isinstance(b, TextBlock)).strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise PlanError(f"reply is not JSON ({e.msg} at char {e.pos})") from e


def parse_plan(content: list[ContentBlock]) -> Plan:
    """Parse and validate the router's reply.

    Raises:
        PlanError: not JSON, wrong shape, bad ids, unknown deps or a cycle.
    """
    data = json_payload(content)
    try:
        return Plan.model_validate(data)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        msg = first["msg"].removeprefix("Value error, ")
        raise PlanError(f"invalid plan{' at ' + loc if loc else ''}: {msg}") from e


class WorkerReply(pydantic.BaseModel):
    """The JSON shape a worker is asked to reply with (ids are ignored on purpose)."""

    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True)
    summary: str = ""
    status: str = "completed"
    risks: list[str] = []
    next_questions: list[str] = pydantic.Field(default=[], alias="nextQuestions")
    artifacts: list[dict[str, Any]] = []
    verdict: str | None = None


def normalise_worker_reply(handoff: HandoffPacket, content: list[ContentBlock]) -> WorkerResult:
    """Turn a worker's final reply into a ``WorkerResult`` carrying the handoff's ids.

    A JSON reply is read as :class:`WorkerReply`; anything else (plain text, or JSON of
    another shape) becomes a completed result whose summary is the text.
    """
    text = "".join(b.text for b in content if isinstance(b, TextBlock)).strip()
    reply: WorkerReply | None = None
    try:
        data = json_payload(content)
        if isinstance(data, dict):
            reply = WorkerReply.model_validate(data)
    except (PlanError, pydantic.ValidationError):
        reply = None
    hid, tid, pid = handoff.id, handoff.task.id, handoff.task.parent_id
    if reply is None:
        return WorkerResult(
            handoff_id=hid,
            task_id=tid,
            parent_id=pid,
            summary=text,
            progress=TaskProgress(status="completed"),
        )
    failed = reply.status == "failed"
    refs = []
    for a in reply.artifacts:
        kind = a.get("kind", "artifact")
        if kind in ("file", "thread", "summary", "artifact") and isinstance(a.get("uri"), str):
            refs.append(ContextRef(kind=kind, uri=a["uri"], label=a.get("label")))
    return WorkerResult(
        handoff_id=hid,
        task_id=tid,
        parent_id=pid,
        status="failed" if failed else "completed",
        progress=TaskProgress(status="failed" if failed else "completed"),
        summary=reply.summary or text,
        artifacts=refs,
        risks=reply.risks,
        next_questions=reply.next_questions,
        verdict=reply.verdict,
    )


def typed_worker_result(handoff: HandoffPacket, content: list[ContentBlock]) -> WorkerResult:
    """Return the result of a worker whose (validated) reply is its role's typed output.

    The reply is the result: its JSON, compact, is the summary the Brain passes on.
    """
    return WorkerResult(
        handoff_id=handoff.id,
        task_id=handoff.task.id,
        parent_id=handoff.task.parent_id,
        summary=msgspec.json.encode(json_payload(content)).decode(),
        progress=TaskProgress(status="completed"),
    )
