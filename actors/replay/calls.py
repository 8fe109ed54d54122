"""A session's model calls as they were made: the request as sent, rebuilt from the log.

A model call is recorded as a ``model_requested`` (what was asked) and a
``model_responded`` or ``model_failed`` (what came back) of one run, paired by
``(run, call_index, attempt)``. :func:`model_calls` pairs them and rebuilds every request
exactly as it was sent, in either recorded form (docs/events.md#model_requested): *by
reference* (flow 3+) through :class:`~actors.replay.requests.StoreRequests` — the
messages are the context of the path ending at the recorded tip, the system prompt and
the tool specs the texts stored under their hashes — and *by value* (older runs) from the
event itself and the tool specs its main run recorded in ``run_started``. Each
:class:`ModelCall` says whether its rebuilt request hashes to the recorded
``request_hash`` (``hash_matches``): True means the request shown is byte for byte the
one the model got.

Pairing is cheap and rebuilding is not (a by-reference request reads its path), so
:class:`CallLog` keeps the two apart: :meth:`CallLog.recorded` pairs every call of a
session without rebuilding any, :meth:`CallLog.call` rebuilds one.

A call of a rerun fork (``clew rerun``) that the rerun answered from its parent's
recording instead of asking the model is ``served``: its request, read with the fork's
ids as the parent's (what :class:`~actors.runtime.branching.Served` matched on), is one
the parent's run recorded, and its reply is the one recorded there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, Final, TypeVar

import msgspec

from actors.models.protocol import ModelRequest, ToolSpec, request_hash
from actors.recording.inputs import RunInputs
from actors.replay.requests import StoreRequests
from eventlog.blocks import ContentBlock
from eventlog.codec import encode
from eventlog.errors import DecodeError
from eventlog.events import (
    ModelFailed,
    ModelRequested,
    ModelResponded,
    RunStarted,
    SessionCreated,
    Usage,
)
from eventlog.ids import main_run_id, stable_hash
from eventlog.records import StoredEvent
from eventlog.store import EventStore
from projections.costs import Price, price_of
from projections.usage import Totals

_T = TypeVar("_T")

#: The event types of a model call.
CALL_TYPES: Final = ("model_requested", "model_responded", "model_failed")

#: The key of a rerun fork's ``session_created`` metadata naming the re-executed run
#: (``actors.runtime.branching.RERUN_KEY``; a test keeps the two equal).
RERUN_KEY: Final = "rerun"


class CallError(msgspec.Struct, frozen=True, kw_only=True):
    """Why a call failed (its ``model_failed``)."""

    error_type: str
    message: str
    status: int | None = None
    will_fallback: bool = False


class RecordedCall(msgspec.Struct, frozen=True, kw_only=True):
    """One model call as the log pairs it, its request not rebuilt yet."""

    #: The call's place among the session's calls, from 1, in the order they were asked.
    index: int
    requested: StoredEvent
    #: Its ``model_responded`` or ``model_failed``; None: no answer was recorded (a crash,
    #: or a call still in flight).
    answered: StoredEvent | None = None

    @property
    def event(self) -> ModelRequested:
        """The call's ``model_requested``."""
        ev = self.requested.event
        assert isinstance(ev, ModelRequested)
        return ev


class ModelCall(msgspec.Struct, frozen=True, kw_only=True):
    """One model call: who asked, the request as sent, what came back, how long it took."""

    index: int
    #: The ``model_requested``'s id, seq and time.
    event_id: str
    seq: int
    agent_id: str | None
    run_id: str | None
    role: str
    phase: str
    call_index: int
    attempt: int
    model: str
    #: The request as sent, rebuilt from the recording.
    request: ModelRequest
    #: How the request was recorded: ``reference`` (flow 3+) or ``value``.
    recorded_as: str
    request_hash: str
    #: True when :attr:`request` hashes to :attr:`request_hash`: the rebuild is exact.
    hash_matches: bool
    #: The reply; None when the call failed or was never answered.
    content: list[ContentBlock] | None = None
    stop_reason: str = ""
    usage: Usage = Usage()
    error: CallError | None = None
    requested_at: str = ""
    answered_at: str | None = None
    #: Milliseconds from request to answer (recorded clock); None: no answer.
    latency_ms: float | None = None
    #: True: a rerun answered it from its parent's recording; False: the model did.
    served: bool = False

    def cost(self, prices: Mapping[str, Price]) -> float | None:
        """Return what the call cost at ``prices`` (``clew usage --prices``'s price list,
        per million tokens); None when its model has no price there."""
        price = price_of(prices, self.model)
        if price is None:
            return None
        u = self.usage
        totals = Totals(
            calls=1,
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_write_tokens=u.cache_write_tokens,
        )
        return round(price.cost(totals), 6)


def elapsed_ms(start: str, end: str) -> float | None:
    """Return the milliseconds from ``start`` to ``end`` (ISO-8601), or None if unreadable."""
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() * 1e3
    except ValueError:
        return None


def pair_calls(events: Iterable[StoredEvent], run: str | None = None) -> list[RecordedCall]:
    """Return the model calls of ``events`` (a session's, in seq order), paired.

    ``run``: only that run's calls and its workers' (a run id, full); a call's
    :attr:`~RecordedCall.index` is its place among every call of ``events``.
    """
    open_calls: dict[tuple[str | None, int, int], int] = {}
    out: list[RecordedCall] = []
    index = 0
    for e in events:
        ev = e.event
        if isinstance(ev, ModelRequested):
            index += 1  # every call counts: a call keeps its number whatever is shown
            if run is not None and not _under(e.run_id, run):
                continue
            open_calls[(e.run_id, ev.call_index, ev.attempt)] = len(out)
            out.append(RecordedCall(index=index, requested=e))
        elif isinstance(ev, ModelResponded | ModelFailed):
            at = open_calls.pop((e.run_id, ev.call_index, ev.attempt), None)
            if at is not None:
                out[at] = msgspec.structs.replace(out[at], answered=e)
    return out


def _under(run_id: str | None, run: str) -> bool:
    """True when ``run_id`` is ``run`` or one of its workers' runs (``run/w1:r1``)."""
    return run_id is not None and (run_id == run or run_id.startswith(run + "/"))


class CallLog:
    """A session's model calls: paired from its events, each rebuilt on demand."""

    def __init__(self, store: EventStore, session_id: str) -> None:
        self._store = store
        self._sid = session_id
        self._requests = StoreRequests(store, session_id)
        self._specs: dict[str, dict[str, ToolSpec]] = {}
        self._served: _Served | None = None
        self._served_read = False

    def recorded(self, run: str | None = None) -> list[RecordedCall]:
        """Return every call of the session (of ``run`` and its workers), paired (reading
        only the three event types of a call: a long session's nodes are not decoded)."""
        return pair_calls(self._store.read_events_of_types(self._sid, CALL_TYPES), run)

    def call(self, rec: RecordedCall) -> ModelCall:
        """Return ``rec`` with its request rebuilt and its answer read."""
        ev, e = rec.event, rec.requested
        request = self.request(rec)
        out = ModelCall(
            index=rec.index,
            event_id=e.event_id,
            seq=e.seq,
            agent_id=e.agent_id,
            run_id=e.run_id,
            role=ev.role,
            phase=ev.phase,
            call_index=ev.call_index,
            attempt=ev.attempt,
            model=ev.model,
            request=request,
            recorded_as="reference" if _by_reference(ev) else "value",
            request_hash=ev.request_hash,
            hash_matches=request_hash(request) == ev.request_hash,
            requested_at=e.created_at,
        )
        answer = rec.answered
        if answer is None:
            return out
        timing: dict[str, Any] = {
            "answered_at": answer.created_at,
            "latency_ms": elapsed_ms(e.created_at, answer.created_at),
        }
        match answer.event:
            case ModelResponded(content=content, stop_reason=stop, usage=usage):
                served = self._is_served(request, answer.event)
                return msgspec.structs.replace(
                    out, content=content, stop_reason=stop, usage=usage, served=served, **timing
                )
            case ModelFailed() as failed:
                error = CallError(
                    error_type=failed.error_type,
                    message=failed.message,
                    status=failed.status,
                    will_fallback=failed.will_fallback,
                )
                served = self._is_served(request, failed)
                return msgspec.structs.replace(
                    out, error=error, stop_reason="error", served=served, **timing
                )
        return out  # pragma: no cover - pair_calls pairs only the two answers

    def request(self, rec: RecordedCall) -> ModelRequest:
        """Return the request ``rec`` sent, as far as the log holds it."""
        ev = rec.event
        if _by_reference(ev):
            return self._requests.request(ev)
        specs = self._run_specs(rec.requested.run_id)
        return ModelRequest(
            model=ev.model,
            messages=list(ev.messages),
            system=ev.system,
            tools=[specs.get(n) or ToolSpec(name=n) for n in ev.tools],
            role=ev.role,
            phase=ev.phase,
            max_tokens=ev.max_tokens or ModelRequest(model="", messages=[]).max_tokens,
            temperature=ev.temperature,
        )

    def _run_specs(self, run_id: str | None) -> dict[str, ToolSpec]:
        """The tool specs the main run of ``run_id`` recorded (a worker's: its main run's)."""
        if run_id is None:
            return {}
        main = run_id.split("/", 1)[0]
        if main not in self._specs:
            started = next(_of_type(self._store.read_run(self._sid, main), RunStarted), None)
            self._specs[main] = {} if started is None else _specs_of(started)
        return self._specs[main]

    def _is_served(self, request: ModelRequest, answer: ModelResponded | ModelFailed) -> bool:
        if not self._served_read:
            self._served, self._served_read = _served_index(self._store, self._sid), True
        return self._served is not None and self._served.holds(request, answer)


def _by_reference(ev: ModelRequested) -> bool:
    return ev.message_count is not None or bool(ev.system_ref) or bool(ev.tools_ref)


def _specs_of(started: RunStarted) -> dict[str, ToolSpec]:
    try:
        inputs = RunInputs.from_metadata(started.metadata)
    except DecodeError:
        return {}
    return {
        t.name: ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
        for t in inputs.tools
    }


class _Served(msgspec.Struct, kw_only=True):
    """The answers a rerun fork's parent recorded, by request hash with the parent's ids."""

    answers: dict[str, list[ModelResponded | ModelFailed]]
    rename: list[tuple[re.Pattern[bytes], bytes]]

    def holds(self, request: ModelRequest, answer: ModelResponded | ModelFailed) -> bool:
        data = encode(request)
        for pattern, replacement in self.rename:
            data = pattern.sub(replacement, data)
        recorded = self.answers.get(stable_hash(data, 24), [])
        return any(_same_answer(r, answer) for r in recorded)


def _same_answer(a: ModelResponded | ModelFailed, b: ModelResponded | ModelFailed) -> bool:
    if isinstance(a, ModelResponded) and isinstance(b, ModelResponded):
        return (a.content, a.stop_reason, a.usage) == (b.content, b.stop_reason, b.usage)
    if isinstance(a, ModelFailed) and isinstance(b, ModelFailed):
        return (a.error_type, a.message) == (b.error_type, b.message)
    return False


def _served_index(store: EventStore, sid: str) -> _Served | None:
    """Index the parent's recording of a rerun fork ``sid``; None when it is no rerun."""
    created = next(_of_type(store.read_events(sid, 0, 1), SessionCreated), None)
    if created is None or created.parent_session_id is None:
        return None
    rerun = created.metadata.get(RERUN_KEY)
    parent = created.parent_session_id
    if not isinstance(rerun, dict) or not store.session_exists(parent):
        return None
    prun = str(rerun.get("run_id", ""))
    hashes: dict[tuple[str | None, int, int], str] = {}
    answers: dict[str, list[ModelResponded | ModelFailed]] = {}
    for e in store.read_runs_under(parent, prun):
        ev = e.event
        if isinstance(ev, ModelRequested):
            hashes[(e.run_id, ev.call_index, ev.attempt)] = ev.request_hash
        elif isinstance(ev, ModelResponded | ModelFailed):
            h = hashes.get((e.run_id, ev.call_index, ev.attempt))
            if h is not None:
                answers.setdefault(h, []).append(ev)
    frun = main_run_id(sid, 1)
    rename = [
        (re.compile(re.escape(frun.encode()) + rb"(?![0-9])"), prun.encode()),
        (re.compile(re.escape(sid.encode())), parent.encode()),
    ]
    return _Served(answers=answers, rename=rename)


def _of_type(events: Iterable[StoredEvent], kind: type[_T]) -> Iterator[_T]:
    for e in events:
        if isinstance(e.event, kind):
            yield e.event


def model_calls(store: EventStore, session_id: str, run: str | None = None) -> list[ModelCall]:
    """Return every model call of the session (of ``run`` and its workers), in order,
    each with its request rebuilt (see the module docstring)."""
    log = CallLog(store, session_id)
    return [log.call(rec) for rec in log.recorded(run)]
