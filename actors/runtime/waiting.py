"""Sessions waiting for a person: what is pending, recording decisions and answers.

A main run that parked (``run_waiting``: a tool call needs approval, or the router asked
a clarifying question) stays open with status ``waiting``; the session is neither
running nor interrupted. Any process may then read what is pending, record a decision
(``approval_decided``) or an answer (``clarification_answered``) into the waiting run,
and resume it (:func:`waiting_run` is what ``resume_ready`` falls back on). See
docs/runtime.md, "Pause for a person".

Recording is atomic: the check ("is it still pending?") and the append happen while
this thread holds the session — its claim in this process (other threads wait their
turn) and its owner lock and lease across processes (other processes wait theirs, up to
:data:`DECIDE_WAIT_S`) — so of two decisions for one call exactly one is recorded and
the other is refused with ``AlreadyDecided``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import msgspec

from actors.errors import (
    AlreadyDecided,
    InvalidEdit,
    NothingToResume,
    NotWaiting,
    SessionBusy,
    StillWaiting,
    UnknownApproval,
    UsageError,
)
from actors.models.storable import check_storable
from actors.orchestration.approvals import (
    Approve,
    Decision,
    Deny,
    Edit,
    PendingApproval,
    decided_event,
    pending_of,
)
from actors.recording.inputs import RunInputs
from actors.recording.recorded import run_started_of
from actors.runtime.engine import Engine
from eventlog.events import (
    ApprovalDecided,
    ApprovalRequested,
    ClarificationAnswered,
    Event,
    RunWaiting,
)
from eventlog.ids import brain_agent_id, is_main_run, validate_session_id
from eventlog.records import AppendRequest

WAITING = "waiting"

#: How long recording a decision or an answer waits for another thread or process that
#: holds the session (most often: recording a decision of its own, a few milliseconds).
DECIDE_WAIT_S = 5.0


class WaitState(msgspec.Struct, frozen=True, kw_only=True):
    """What a session's waiting main run waits for."""

    session_id: str
    run_id: str
    #: Approval requests without a decision, in the order they were asked.
    pending: list[PendingApproval] = msgspec.field(default_factory=list)
    #: Requests decided but not yet acted on (the run has not resumed past them).
    decided: list[str] = msgspec.field(default_factory=list)
    #: The clarifying question waiting for an answer ("" when none).
    question: str = ""
    #: True when the question has an answer recorded.
    answered: bool = False

    @property
    def ready(self) -> bool:
        """True when everything the run waits for is decided: it can resume."""
        return not self.pending and (not self.question or self.answered)

    def describe(self) -> str:
        """Return one line saying what is still pending."""
        parts = [
            f"approval of {p.tool_call_id} ({p.tool_name} {_args(p.arguments)})"
            for p in self.pending
        ]
        if self.question and not self.answered:
            parts.append(f"an answer to: {self.question}")
        return "; ".join(parts) or "nothing"


def _args(arguments: object) -> str:
    return msgspec.json.encode(arguments).decode()


def wait_state(engine: Engine, session_id: str) -> WaitState | None:
    """Return what the session's waiting main run waits for; None if none waits.

    Raises:
        InvalidSessionId, UnknownSession: bad or unknown session.
    """
    sid = validate_session_id(session_id)
    engine.store.read_session(sid)
    mains = [r for r in engine.store.read_runs(sid) if is_main_run(sid, r.agent_id)]
    if not mains or mains[-1].status != WAITING:
        return None
    run_id = mains[-1].run_id
    asked: dict[str, PendingApproval] = {}
    decided: set[str] = set()
    question, answered = "", False
    for stored in engine.store.read_runs_under(sid, run_id):
        match stored.event:
            case ApprovalRequested() as e:
                asked[e.tool_call_id] = pending_of(sid, stored.run_id or run_id, e)
            case ApprovalDecided(tool_call_id=call_id):
                decided.add(call_id)
            case RunWaiting(reason="clarification", question=q) if stored.run_id == run_id:
                question, answered = q, False
            case ClarificationAnswered():
                answered = True
            case _:
                pass
    return WaitState(
        session_id=sid,
        run_id=run_id,
        pending=[p for c, p in asked.items() if c not in decided],
        decided=sorted(decided & set(asked)),
        question=question,
        answered=answered,
    )


def waiting_sessions(engine: Engine) -> list[WaitState]:
    """Return the wait of every session whose last main run waits, oldest first."""
    out = []
    for row in engine.store.list_sessions():
        state = wait_state(engine, row.session_id)
        if state is not None:
            out.append(state)
    return out


def waiting_run(engine: Engine, session_id: str) -> str:
    """Return the session's waiting main run, if everything it waits for is decided.

    Raises:
        NothingToResume: the session has no waiting (nor interrupted) run.
        StillWaiting: something is still pending (the message says what).
    """
    state = wait_state(engine, session_id)
    if state is None:
        raise NothingToResume(f"session {session_id} has no interrupted or waiting run")
    if not state.ready:
        raise StillWaiting(
            f"session {session_id} is still waiting for {state.describe()};"
            f" decide first (clew pending {session_id})"
        )
    return state.run_id


def decide(engine: Engine, session_id: str, call_id: str, decision: Decision) -> ApprovalDecided:
    """Record a person's decision on a pending approval of the session's waiting run.

    Raises:
        NotWaiting: the session's run is not waiting.
        UnknownApproval: no request ``call_id`` waits in this session.
        AlreadyDecided: it was decided already.
        InvalidEdit: edited arguments that do not fit the tool's recorded parameters
            (the message names the field); nothing is recorded.
        UsageError: edited arguments the log cannot hold.
    """
    if not isinstance(decision, Approve | Deny | Edit):
        raise UsageError(f"not a decision: {decision!r} (Approve(), Deny(reason), Edit(arguments))")
    if isinstance(decision, Edit):
        try:
            check_storable(decision.arguments, "the edited arguments")
        except Exception as e:
            raise UsageError(str(e)) from None
    event = decided_event(decision, call_id)

    def target(state: WaitState) -> tuple[str, str]:
        for p in state.pending:
            if p.tool_call_id == call_id:
                if isinstance(decision, Edit):
                    check_edit(engine, state, p, decision.arguments)
                return p.agent_id, p.run_id
        if call_id in state.decided:
            raise AlreadyDecided(f"tool call {call_id} of session {session_id} was decided already")
        raise UnknownApproval(f"no approval request {call_id} waits in session {session_id}")

    _record(engine, session_id, "decision", target, event)
    return event


def check_edit(
    engine: Engine, state: WaitState, pending: PendingApproval, arguments: dict[str, object]
) -> None:
    """Refuse edited arguments that do not fit the tool's parameters, as recorded.

    The run recorded each tool's JSON schema (``RunInputs.tools``), so any process can
    check an edit when it is decided — not only when the run resumes, after the person
    has gone. The check covers what a pydantic model's schema says: types, required and
    unknown fields, bounds, lengths, enums, nested objects, arrays, ``anyOf`` and
    ``$ref``s; the tool's own model still validates the call when it runs.

    Raises:
        InvalidEdit: naming the field and what it must be.
    """
    started = run_started_of(engine.store.read_run(state.session_id, state.run_id))
    records = RunInputs.from_metadata(started.metadata).tools
    schema = next((t.parameters for t in records if t.name == pending.tool_name), None)
    if not isinstance(schema, dict):
        return  # a tool of no recorded schema: its model checks the call when it runs
    problem = _schema_problem(schema, arguments, "", schema.get("$defs", {}))
    if problem is not None:
        raise InvalidEdit(
            f"edited arguments of {pending.tool_call_id} ({pending.tool_name}) refused:"
            f" {problem}; nothing recorded"
        )


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}

#: The bounds a schema may set on a number: (keyword, the relation, how it reads).
_BOUNDS: tuple[tuple[str, Callable[[float, float], bool], str], ...] = (
    ("minimum", lambda v, b: v >= b, ">="),
    ("maximum", lambda v, b: v <= b, "<="),
    ("exclusiveMinimum", lambda v, b: v > b, ">"),
    ("exclusiveMaximum", lambda v, b: v < b, "<"),
)


def _schema_problem(  # noqa: C901, PLR0911, PLR0912 - one branch per schema keyword
    schema: dict[str, object], value: object, at: str, defs: object
) -> str | None:
    """Return why ``value`` (at field path ``at``) does not fit ``schema``; None if it does."""
    name = at or "the arguments"
    ref = schema.get("$ref")
    if isinstance(ref, str) and isinstance(defs, dict):
        target = defs.get(ref.rsplit("/", 1)[-1])
        return _schema_problem(target, value, at, defs) if isinstance(target, dict) else None
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list):
        fits = [o for o in options if isinstance(o, dict)]
        problems = [_schema_problem(o, value, at, defs) for o in fits]
        return None if not fits or None in problems else problems[0]
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _JSON_TYPES:
        bad_bool = isinstance(value, bool) and kind in ("integer", "number")
        if bad_bool or not isinstance(value, _JSON_TYPES[kind]):
            return f"{name} must be of type {kind}, not {_args(value)}"
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return f"{name} must be one of {_args(schema['enum'])}, not {_args(value)}"
    if "const" in schema and value != schema["const"]:
        return f"{name} must be {_args(schema['const'])}, not {_args(value)}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        for key, ok, sign in _BOUNDS:
            bound = schema.get(key)
            if isinstance(bound, int | float) and not ok(value, bound):
                return f"{name} must be {sign} {bound}, not {_args(value)}"
    if isinstance(value, str | list):
        text = isinstance(value, str)
        least = schema.get("minLength" if text else "minItems")
        most = schema.get("maxLength" if text else "maxItems")
        unit = "characters" if text else "items"
        if isinstance(least, int) and len(value) < least:
            return f"{name} must have at least {least} {unit}"
        if isinstance(most, int) and len(value) > most:
            return f"{name} must have at most {most} {unit}"
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problem = _schema_problem(schema["items"], item, f"{name}[{i}]", defs)  # type: ignore[arg-type]
            if problem is not None:
                return problem
    if isinstance(value, dict):
        return _object_problem(schema, value, at, defs)
    return None


def _object_problem(
    schema: dict[str, object], value: dict[str, object], at: str, defs: object
) -> str | None:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    for key in required if isinstance(required, list) else []:
        if key not in value:
            return f"{_field(at, key)} is required"
    if schema.get("additionalProperties") is False:
        for key in value:
            if key not in props:
                return f"{_field(at, key)} is not a parameter of the tool"
    for key, item in value.items():
        sub = props.get(key)
        if isinstance(sub, dict):
            problem = _schema_problem(sub, item, _field(at, key), defs)
            if problem is not None:
                return problem
    return None


def _field(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def answer(engine: Engine, session_id: str, text: str) -> ClarificationAnswered:
    """Record the answer to the clarifying question the session's run waits on.

    Raises:
        NotWaiting: the session's run does not wait for an answer.
        AlreadyDecided: it was answered already.
        UsageError: an empty answer, or one that is not valid text.
    """
    if not isinstance(text, str) or not text.strip():
        raise UsageError("the answer is empty")
    try:
        check_storable(text, "the answer")
    except Exception as e:
        raise UsageError(str(e)) from None
    event = ClarificationAnswered(answer=text)
    sid = validate_session_id(session_id)

    def target(state: WaitState) -> tuple[str, str]:
        if not state.question:
            raise NotWaiting(f"session {session_id} does not wait for an answer")
        if state.answered:
            raise AlreadyDecided(f"the question of session {session_id} was answered already")
        return brain_agent_id(sid), state.run_id

    _record(engine, session_id, "answer", target, event)
    return event


def _record(
    engine: Engine,
    session_id: str,
    what: str,
    target: Callable[[WaitState], tuple[str, str]],
    event: Event,
) -> None:
    """Holding the session: check the session waits, find the run, append ``event``."""
    sid = validate_session_id(session_id)
    engine.refuse_if_read_only(f"recording a {what} for {sid}")
    engine.store.read_session(sid)
    with _holding(engine, sid):
        state = wait_state(engine, sid)
        if state is None:
            raise NotWaiting(f"session {sid} is not waiting for a {what}")
        agent_id, run_id = target(state)
        engine.writer.submit(
            AppendRequest(
                session_id=sid,
                event=event,
                created_at=engine.clock.now(),
                agent_id=agent_id,
                run_id=run_id,
            )
        ).get(timeout=120)


@contextmanager
def _holding(engine: Engine, sid: str) -> Iterator[None]:
    """Hold the session for the block: this thread's claim, then the owner lock and lease.

    The owner lock is per process (a second thread would take it again at once), so the
    claim is what keeps two threads of one process from both checking before either
    appends; the lock and the lease do that across processes. Either one busy is waited
    for, up to :data:`DECIDE_WAIT_S`.

    Raises:
        SessionBusy: the session stayed busy that long (a run of it is in progress).
    """
    _waiting_for(lambda: engine.claim_run(sid))
    try:
        held = engine.holds(sid)
        _waiting_for(lambda: engine.own(sid))
        try:
            yield
        finally:
            if not held:
                engine.release(sid)
    finally:
        engine.release_run(sid)


def _waiting_for(take: Callable[[], object]) -> None:
    deadline = time.monotonic() + DECIDE_WAIT_S
    while True:
        try:
            take()
        except SessionBusy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
        else:
            return
