"""Re-drive: after an incident, continue every session it stopped, with a plan first.

**Select** the sessions (:class:`~actors.runtime.status.SessionFilter`,
:func:`~actors.runtime.status.select_sessions`): by derived
status, by what failed them (``error``: a regular expression searched in the failed last
main run's ``<type>: <message>``), by a model or role of its last main run's model calls,
and by time (``since``: the session's last event at or after an ISO-8601 time).

**Plan** each one (:func:`plan_session`) before anything runs, from its recording alone:

- a failed last run is *retried*: a new attempt under the same user message, whose model
  calls the failed attempt had answered are **served from the recording** (not paid
  again) and whose non-idempotent tool calls that finished are **served** too (they do
  not run again); its idempotent tool calls run again, live;
- an interrupted run is *resumed* (``from_divergence`` where the code changed): its log
  is re-executed, a recorded reply is never asked again;
- what will be **paid again**: the model calls the provider never answered — failed, or
  in flight at a crash — each with its role and model, and estimated tokens (the mean of
  the session's answered calls of that role) and cost (with a price list);
- **in doubt**: a non-idempotent tool call that started and never finished (it may have
  had its effect): the session *needs a person* and is not re-driven, as is one waiting
  for an approval or an answer. A session with nothing to continue is *skipped*.

**Re-drive** them (:func:`redrive`): each planned session is continued, several at once
(a bound), and the re-drive ends with a :class:`RedriveReport` — per session its outcome
(``completed``, ``failed again``, ``needs a person``, ``skipped``), the calls served and
asked live — written under its id to the home's ``redrives/`` folder (``clew redrive``
prints it; docs/ci.md, "Re-drive after an incident"). A retried session's new run
records the re-drive's id in its inputs (``RunInputs.redrive``): ``clew show``, ``clew
timeline`` and ``clew ui`` name it.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

import msgspec

from actors.models.chains import ModelArg, model_chains
from actors.models.tools import Tool
from actors.orchestration.team import Team
from actors.runtime.branching import Served, ServedModel, ServedTool, served_from
from actors.runtime.runtime import Runtime

# Selecting sessions is a read (status.py); re-exported: the re-drive's API in one place.
from actors.runtime.status import SessionFilter as SessionFilter  # noqa: PLC0414 (re-export)
from actors.runtime.status import failure_text, last_main_run
from actors.runtime.status import select_sessions as select_sessions  # noqa: PLC0414 (re-export)
from eventlog.errors import ClewError
from eventlog.events import (
    ModelFailed,
    ModelRequested,
    ModelResponded,
    TodoPlanned,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)
from eventlog.ids import main_run_id, redrive_id_at
from eventlog.records import StoredEvent
from projections.costs import Price, price_of
from projections.usage import Totals

#: The derived statuses a re-drive continues (:func:`plan_session`).
RETRY, RESUME, PERSON, SKIP = "retry", "resume", "needs a person", "skipped"


# --- the plan -----------------------------------------------------------------------------


class CallPlan(msgspec.Struct, frozen=True, kw_only=True):
    """A model call a re-drive asks the provider again (it was never answered)."""

    run_id: str
    call_index: int
    role: str
    model: str
    #: ``failed`` (the provider refused it) or ``in flight`` (no answer was recorded).
    why: str
    #: The re-drive sends it again as it was: it was sent before any call of the run had
    #: failed (a later one was built after a failure, which may have shaped it), and it
    #: is not a main run's call after the run planned its tasks (those name the task
    #: board, which a new attempt names anew).
    as_recorded: bool = True
    est_tokens: int | None = None
    est_cost: float | None = None


class ToolPlan(msgspec.Struct, frozen=True, kw_only=True):
    tool_call_id: str
    tool_name: str
    run_id: str


class RedrivePlan(msgspec.Struct, frozen=True, kw_only=True):
    """What re-driving one session would do, read from its recording (nothing runs)."""

    session_id: str
    #: ``retry``, ``resume``, ``needs a person`` or ``skipped``.
    action: str
    #: The run it continues and from where, in words.
    continue_from: str
    reason: str = ""
    failure: str = ""
    paid_again: list[CallPlan] = msgspec.field(default_factory=list)
    #: Answered calls served from the recording, and their tokens (not paid again).
    served_calls: int = 0
    served_tokens: int = 0
    #: Idempotent tool calls that run again, and non-idempotent ones that do not.
    tools_again: list[ToolPlan] = msgspec.field(default_factory=list)
    tools_not_again: list[ToolPlan] = msgspec.field(default_factory=list)
    in_doubt: list[ToolPlan] = msgspec.field(default_factory=list)

    def est_cost(self) -> float | None:
        costs = [c.est_cost for c in self.paid_again if c.est_cost is not None]
        return sum(costs) if costs else None


class _Scan:
    """The model and tool calls of a run and its workers, as the recording has them."""

    def __init__(self, events: Sequence[StoredEvent]) -> None:
        self.requests: dict[tuple[str, int], tuple[ModelRequested, int]] = {}
        #: The seq of the first failed model call (None: none failed).
        self.first_failure: int | None = None
        #: The seq where a main run planned its tasks, by run.
        self.planned: dict[str, int] = {}
        self.answered: dict[tuple[str, int], ModelResponded] = {}
        self.failed: set[tuple[str, int]] = set()
        self.started: dict[str, tuple[ToolCallStarted, str]] = {}
        self.finished: set[str] = set()
        for stored in events:
            ev, run = stored.event, stored.run_id or ""
            match ev:
                case ModelRequested():
                    self.requests[(run, ev.call_index)] = (ev, stored.seq)
                case ModelResponded():
                    self.answered[(run, ev.call_index)] = ev
                case ModelFailed():
                    self.failed.add((run, ev.call_index))
                    if self.first_failure is None:
                        self.first_failure = stored.seq
                case TodoPlanned():
                    self.planned.setdefault(run, stored.seq)
                case ToolCallStarted():
                    self.started[ev.tool_call_id] = (ev, run)
                case ToolCallFinished() | ToolFailed():
                    self.finished.add(ev.tool_call_id)
                case _:
                    pass

    def sent_as_recorded(self, run: str, seq: int) -> bool:
        """True when the request at ``seq`` of ``run`` will be sent again unchanged."""
        before_failure = self.first_failure is None or seq < self.first_failure
        return before_failure and seq < self.planned.get(run, seq + 1)


def _mean_tokens(events: Sequence[StoredEvent]) -> dict[str, int]:
    """The mean tokens of the session's answered calls per role (``""``: over all)."""
    sums: dict[str, list[int]] = {}
    requests: dict[tuple[str, int], str] = {}
    for stored in events:
        ev = stored.event
        if isinstance(ev, ModelRequested):
            requests[(stored.run_id or "", ev.call_index)] = ev.role
        elif isinstance(ev, ModelResponded):
            role = requests.get((stored.run_id or "", ev.call_index), "")
            total = ev.usage.input_tokens + ev.usage.output_tokens
            for key in {role, ""}:
                sums.setdefault(key, []).append(total)
    return {k: sum(v) // len(v) for k, v in sums.items() if v}


def _cost(prices: Mapping[str, Price], model: str, tokens: int | None) -> float | None:
    price = price_of(prices, model)
    if price is None or tokens is None:
        return None
    return price.cost(Totals(calls=1, input_tokens=tokens))


def plan_session(rt: Runtime, sid: str, prices: Mapping[str, Price] | None = None) -> RedrivePlan:
    """Plan the re-drive of the session ``sid`` (reads only)."""
    session = rt.session(sid)
    info = session.info()
    last = last_main_run(rt, sid)
    if info.lifecycle == "archived" or last is None:
        why = "archived" if info.lifecycle == "archived" else "no run"
        return RedrivePlan(session_id=sid, action=SKIP, continue_from="", reason=why)
    if info.waiting:
        return RedrivePlan(session_id=sid, action=PERSON, continue_from=last.run_id,
                           reason="waits for an approval or an answer (clew pending)")  # fmt: skip
    interrupted = session.interrupted_runs()
    if last.status != "failed" and not interrupted:
        return RedrivePlan(session_id=sid, action=SKIP, continue_from=last.run_id,
                           reason=f"its last run is {last.status}")  # fmt: skip
    run_id = interrupted[0] if interrupted else last.run_id
    events = rt.store.read_runs_under(sid, run_id)
    if interrupted:
        action, start = RESUME, f"the end of {run_id}'s log (seq {events[-1].seq})"
    else:
        n = len(session.main_runs()) + 1
        action, start = RETRY, f"{run_id}'s user message, as attempt run {main_run_id(sid, n)}"
    head = RedrivePlan(session_id=sid, action=action, continue_from=start,
                       failure=failure_text(last))  # fmt: skip
    mean = _mean_tokens(list(rt.store.iter_events(sid)))
    plan = _with_calls(head, _Scan(events), mean, prices or {})
    if plan.in_doubt:
        return msgspec.structs.replace(
            plan, action=PERSON, reason="a side effect is in doubt: decide it first"
        )
    return plan


def _with_calls(
    plan: RedrivePlan, s: _Scan, mean: Mapping[str, int], prices: Mapping[str, Price]
) -> RedrivePlan:
    """``plan`` with the model and tool calls of its run, as the recording has them."""
    paid: list[CallPlan] = []
    for key, (req, seq) in s.requests.items():
        if key in s.answered:
            continue
        tokens = mean.get(req.role, mean.get(""))
        paid.append(CallPlan(
            run_id=key[0], call_index=key[1], role=req.role, model=req.model,
            why="failed" if key in s.failed else "in flight",
            as_recorded=s.sent_as_recorded(key[0], seq),
            est_tokens=tokens, est_cost=_cost(prices, req.model, tokens),
        ))  # fmt: skip
    again: list[ToolPlan] = []
    not_again: list[ToolPlan] = []
    doubt: list[ToolPlan] = []
    for call_id, (started, run) in s.started.items():
        tool = ToolPlan(tool_call_id=call_id, tool_name=started.tool_name, run_id=run)
        if started.idempotent:
            again.append(tool)
        elif call_id in s.finished:
            not_again.append(tool)
        else:
            doubt.append(tool)
    answered = list(s.answered.values())
    return msgspec.structs.replace(
        plan,
        paid_again=paid,
        served_calls=len(answered),
        served_tokens=sum(a.usage.input_tokens + a.usage.output_tokens for a in answered),
        tools_again=again,
        tools_not_again=not_again,
        in_doubt=doubt,
    )


# --- the re-drive -------------------------------------------------------------------------


class RedriveResult(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    action: str
    #: ``completed``, ``failed again``, ``needs a person`` or ``skipped``.
    outcome: str
    detail: str = ""
    served_calls: int = 0
    live_calls: int = 0
    run_id: str | None = None


class RedriveReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a re-drive did, session by session (also written to ``redrives/<id>.json``)."""

    redrive_id: str
    started_at: str
    ended_at: str
    sessions: list[RedriveResult]

    def counts(self) -> dict[str, int]:
        out = {"completed": 0, "failed again": 0, PERSON: 0, SKIP: 0}
        for r in self.sessions:
            out[r.outcome] = out.get(r.outcome, 0) + 1
        return out

    def summary(self) -> str:
        counts = self.counts()
        return f"re-drive {self.redrive_id}: {len(self.sessions)} sessions, " + ", ".join(
            f"{n} {name}" for name, n in counts.items()
        )


@dataclass(frozen=True)
class RedriveApp:
    """The code a re-drive continues with: today's models, tools and team."""

    model: ModelArg
    _: KW_ONLY
    tools: Sequence[Tool] = ()
    team: Team | None = None


def _served_retry(rt: Runtime, sid: str, app: RedriveApp, rid: str | None) -> tuple[str, Served]:
    """Retry the session's failed run with the failed attempt's answers served, the new
    run's inputs naming the re-drive ``rid``."""
    session = rt.session(sid)
    last = last_main_run(rt, sid)
    assert last is not None  # planned: a failed last run
    new_run = main_run_id(sid, len(session.main_runs()) + 1)
    served = served_from(
        rt.store.read_runs_under(sid, last.run_id), parent=(sid, last.run_id), fork=(sid, new_run)
    )
    for key, answers in list(served.answers.items()):  # a failure is asked again
        kept = [a for a in answers if isinstance(a, ModelResponded)]
        answers.clear()
        answers.extend(kept)
        if not kept:
            del served.answers[key]
    idempotent = {t.name for t in app.tools if t.idempotent}
    for call_id, result in list(served.tool_results.items()):  # idempotent: run again
        if result.tool_name in idempotent:
            del served.tool_results[call_id]
    chains = {r: [ServedModel(m, served) for m in c] for r, c in model_chains(app.model).items()}
    tools = [ServedTool(t, served, {}, live=True) for t in app.tools]
    outcome = session.retry(model=chains, tools=tools, team=app.team, redrive=rid)
    return outcome.status, served


def redrive_one(
    rt: Runtime,
    plan: RedrivePlan,
    app: RedriveApp,
    *,
    from_divergence: bool = False,
    redrive_id: str | None = None,
) -> RedriveResult:
    """Carry out ``plan`` (its action ``retry`` or ``resume``; others are reported).

    A retry records ``redrive_id`` in its new run's inputs (``RunInputs.redrive``); a
    resume goes on with the interrupted run, whose recorded inputs it must not change
    (the re-drive's report names the run).
    """
    sid = plan.session_id
    if plan.action not in (RETRY, RESUME):
        return RedriveResult(session_id=sid, action=plan.action, outcome=plan.action,
                             detail=plan.reason)  # fmt: skip
    served: Served | None = None
    try:
        if plan.action == RETRY:
            status, served = _served_retry(rt, sid, app, redrive_id)
        else:
            status = rt.session(sid).resume(model=app.model, tools=app.tools, team=app.team,
                                            from_divergence=from_divergence).status  # fmt: skip
    except ClewError as e:
        return RedriveResult(session_id=sid, action=plan.action, outcome=PERSON, detail=str(e))
    last = last_main_run(rt, sid)
    outcome = "completed" if status == "completed" else "failed again"
    if status in ("waiting", "needs_clarification", "cancelled"):
        outcome = PERSON
    return RedriveResult(
        session_id=sid,
        action=plan.action,
        outcome=outcome,
        detail=failure_text(last) if outcome == "failed again" else status,
        served_calls=served.served if served else 0,
        live_calls=served.live if served else 0,
        run_id=last.run_id if last else None,
    )


def redrive(
    rt: Runtime,
    plans: Sequence[RedrivePlan],
    app: RedriveApp | Callable[[str], RedriveApp],
    *,
    concurrency: int = 4,
    from_divergence: bool = False,
) -> RedriveReport:
    """Re-drive every planned session, ``concurrency`` at a time, with ``app`` (or the app
    ``app(session_id)`` returns); write and return the report
    (``<home>/redrives/<redrive id>.json``)."""
    started = rt.clock.now()
    rid = redrive_id_at(started, secrets.token_hex(2))
    lock = threading.Lock()
    results: dict[str, RedriveResult] = {}

    def one(plan: RedrivePlan) -> None:
        code = app(plan.session_id) if callable(app) else app
        result = redrive_one(rt, plan, code, from_divergence=from_divergence, redrive_id=rid)
        with lock:
            results[plan.session_id] = result

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        list(pool.map(one, plans))
    report = RedriveReport(
        redrive_id=rid,
        started_at=started,
        ended_at=rt.clock.now(),
        sessions=[results[p.session_id] for p in plans],
    )
    folder = Path(rt.home) / "redrives"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{rid}.json").write_bytes(msgspec.json.format(msgspec.json.encode(report)))
    return report


def read_redrives(home: Path) -> list[RedriveReport]:
    """The re-drives recorded in the home, oldest first."""
    folder = Path(home) / "redrives"
    files = sorted(folder.glob("redrive_*.json")) if folder.is_dir() else []
    return [msgspec.json.decode(f.read_bytes(), type=RedriveReport) for f in files]
