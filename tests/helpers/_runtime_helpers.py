"""Shared helpers of the runtime tests: scripted sessions on a real SQLite file, read back.

Every session a test produces goes through :func:`run_session`, which also proves that
the session replays identically and that its materialised tables rebuild from the log —
so no runtime test can forget those two checks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from actors.models.chains import ModelArg
from actors.models.protocol import ModelRequest
from actors.models.scripted import ScriptedModel
from actors.models.tools import Tool
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Team
from actors.recording.inputs import RunSettings
from actors.replay.requests import StoreRequests
from actors.runtime.runtime import Runtime
from eventlog.events import (
    Event,
    HandoffSent,
    ModelRequested,
    RunEnded,
    RunStarted,
    WorkerResultReceived,
)
from eventlog.records import StoredEvent
from eventlog.store import EventStore
from projections.verify import verify

E = TypeVar("E")


# --- script builders ------------------------------------------------------------------------


def worker(wid: str, role: str, goal: str, deps: Sequence[str] = ()) -> dict[str, Any]:
    """One planned worker of a router reply."""
    return {"id": wid, "role": role, "goal": goal, "deps": list(deps)}


def route(
    workers: Sequence[dict[str, Any]] = (),
    *,
    primary_role: str = "lead",
    review: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """The router rule: one JSON plan."""
    plan = {"primary_role": primary_role, "workers": list(workers), "review": review, **extra}
    return {"role": "router", "phase": "route", "replies": [{"json": plan}]}


def rule(role: str, *replies: dict[str, Any], contains: str | None = None) -> dict[str, Any]:
    """A rule answering ``role`` (optionally only when the last user message holds ``contains``)."""
    out: dict[str, Any] = {"role": role, "replies": list(replies)}
    if contains is not None:
        out["contains"] = contains
    return out


LEAD = rule("lead", {"text": "The final answer."})


def scripted(*rules: dict[str, Any], name: str = "scripted") -> ScriptedModel:
    """A ScriptedModel over ``rules`` (the lead's rule is added when missing)."""
    chosen = list(rules)
    if not any(r.get("role") == "lead" for r in chosen):
        chosen.append(LEAD)
    return ScriptedModel({"rules": chosen}, name=name)


# --- running and reading back ---------------------------------------------------------------


def sent_requests(store: EventStore, sid: str) -> list[ModelRequest]:
    """What each recorded ``model_requested`` of a session sent, rebuilt from its log."""
    log = StoreRequests(store, sid)
    return [
        log.request(e.event) for e in store.iter_events(sid) if isinstance(e.event, ModelRequested)
    ]


@dataclass
class Recorded:
    """A finished session: its outcome and every event it wrote, in ``seq`` order."""

    rt: Runtime
    sid: str
    outcome: RunOutcome
    events: list[StoredEvent]

    @property
    def brain_run(self) -> str:
        return self.outcome.run_id

    def ctx(self, task_id: str) -> str:
        """The context (= agent) id the Brain gives planned worker ``task_id``."""
        return f"{self.brain_run}/{task_id}"

    def worker_run(self, task_id: str) -> str:
        return f"{self.ctx(task_id)}:r1"

    def stored(self, cls: type[Any], run_id: str | None = None) -> list[StoredEvent]:
        """The stored events whose payload is a ``cls`` (of ``run_id`` if given)."""
        return [
            e
            for e in self.events
            if isinstance(e.event, cls) and (run_id is None or e.run_id == run_id)
        ]

    def of(self, cls: type[E], run_id: str | None = None) -> list[E]:
        """The payloads of type ``cls`` (of ``run_id`` if given), in ``seq`` order."""
        return [e.event for e in self.stored(cls, run_id)]  # type: ignore[misc]

    def types(self, run_id: str) -> list[str]:
        """The event types of one run, in ``run_seq`` order."""
        return [e.event_type for e in self.events if e.run_id == run_id]

    def handoffs(self) -> list[HandoffSent]:
        return self.of(HandoffSent)

    def results(self) -> list[WorkerResultReceived]:
        return self.of(WorkerResultReceived)

    def seq_of(self, cls: type[Event], run_id: str) -> int:
        """The ``seq`` of the (single) event of type ``cls`` in ``run_id``."""
        (found,) = self.stored(cls, run_id)
        return found.seq

    def started(self, task_id: str) -> int:
        return self.seq_of(RunStarted, self.worker_run(task_id))

    def ended(self, task_id: str) -> int:
        return self.seq_of(RunEnded, self.worker_run(task_id))

    def requests(self, run_id: str | None = None) -> list[ModelRequest]:
        """What each recorded ``model_requested`` (of ``run_id`` if given) sent, rebuilt
        from the log (docs/storage.md): a request recorded by reference holds no text."""
        log = StoreRequests(self.rt.store, self.sid)
        return [log.request(r) for r in self.of(ModelRequested, run_id)]

    def model_inputs(self, run_id: str) -> list[str]:
        """Every recorded model input of ``run_id``, each as the JSON of its messages."""
        return [msgspec.json.encode(r.messages).decode() for r in self.requests(run_id)]

    def worker_runs(self) -> list[str]:
        """The run ids of every worker run of the session, in start order."""
        return [r.run_id for r in self.of(RunStarted) if r.run_id != self.brain_run]


def run_session(
    rt: Runtime,
    prompt: str,
    model: ModelArg,
    *,
    tools: Sequence[Tool] = (),
    settings: RunSettings | None = None,
    team: Team | None = None,
) -> Recorded:
    """Run one main run in a new session, then prove it replays and verifies.

    Replay identical and ``verify().ok`` are asserted here for every session the
    runtime tests create — with the recorded stand-ins, and with a ``team`` given
    again as today's team.
    """
    session = rt.new_session()
    outcome = session.run(prompt, model=model, tools=tools, settings=settings, team=team)
    events = rt.store.read_events(session.id)
    report = rt.replay(session.id)
    assert report.identical, report.summary()
    if team is not None:
        again = rt.replay(session.id, team=team, tools=tools)
        assert again.identical, again.summary()
    checked = verify(rt.store, session.id)
    assert checked.ok, checked
    # The runtime's verify too: usage_json against token_usage, the Task WAL against the log.
    verified = rt.verify(session.id)
    assert verified.ok, verified.sessions[0].problems
    return Recorded(rt=rt, sid=session.id, outcome=outcome, events=events)


def peak_overlap(intervals: Sequence[tuple[int, int]]) -> int:
    """The largest number of ``(start, end)`` intervals open at the same point."""
    points = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    open_, peak = 0, 0
    for _, step in points:
        open_ += step
        peak = max(peak, open_)
    return peak


class ConcurrencyProbe:
    """A tool body that counts how many calls run at once (``peak``)."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self.current = 0
        self.peak = 0
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, args: Any) -> str:
        with self._lock:
            self.current += 1
            self.calls += 1
            self.peak = max(self.peak, self.current)
        try:
            time.sleep(self.hold_s)
        finally:
            with self._lock:
                self.current -= 1
        return "probed"
