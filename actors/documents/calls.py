"""A session's model calls and where its time went: ``clew calls`` / ``clew call`` and the
inspector's call view and waterfall.

Three documents. :func:`calls_doc` lists the calls, one row each (who asked, the model,
tokens, latency, cost, why it stopped). :func:`call_doc` is one call whole — the request
as sent (system prompt, messages, tool specs, settings; rebuilt from the recording by
:mod:`actors.replay.calls`, with ``hash_matches`` saying the rebuild is exact), the reply,
usage, cost, latency — and what changed since the same agent's previous call (the
messages added, a changed system prompt). :func:`waterfall_doc` puts every run of the
session on one time axis: a row per run and a bar per model call, tool call, approval
wait, park, compaction and cancellation, from the recorded timestamps; it reads each
event once and rebuilds no request, so it stays fast on a long session (docs/ui.md).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

import msgspec

from actors.models.protocol import ModelRequest
from actors.replay.calls import CallLog, ModelCall, RecordedCall
from actors.replay.diff import text_diff
from actors.runtime.runtime import Runtime
from eventlog.blocks import ArtifactRefBlock, ContentBlock, Message, TextBlock, ToolResultBlock
from eventlog.ids import relative
from eventlog.records import StoredEvent
from projections.costs import Price

#: The wire formats ``clew call --as`` prints.
WIRE_FORMATS: Final = ("openai", "anthropic")
#: The first characters of an artifact a call's view shows.
ARTIFACT_PREVIEW: Final = 200
#: The phase of a summariser's call: a compaction.
COMPACT_PHASE: Final = "compact"


def call_id(sid: str, call: ModelCall | RecordedCall) -> str:
    """Return a call's id as a person types it: its ``model_requested``'s, relative."""
    event_id = call.event_id if isinstance(call, ModelCall) else call.requested.event_id
    return relative(sid, event_id)


def cost_of(call: ModelCall, prices: Mapping[str, Price]) -> float | None:
    """Return what ``call`` cost at ``prices`` (None: its model has no price)."""
    return call.cost(prices)


def call_row(sid: str, call: ModelCall, prices: Mapping[str, Price]) -> dict[str, Any]:
    """Return one line of ``clew calls``."""
    return {
        "index": call.index,
        "id": call_id(sid, call),
        "agent": relative(sid, call.agent_id) if call.agent_id else "",
        "run": relative(sid, call.run_id) if call.run_id else "",
        "role": call.role,
        "phase": call.phase,
        "call_index": call.call_index,
        "attempt": call.attempt,
        "model": call.model,
        "input_tokens": call.usage.input_tokens,
        "output_tokens": call.usage.output_tokens,
        "latency_ms": None if call.latency_ms is None else round(call.latency_ms, 3),
        "cost": cost_of(call, prices) if prices else None,
        "stop_reason": call.stop_reason or ("error" if call.error else "pending"),
        "hash_matches": call.hash_matches,
        "served": call.served,
        "requested_at": call.requested_at,
    }


def calls_doc(
    sid: str, calls: Iterable[ModelCall], currency: str = "", prices: Mapping[str, Price] = {}
) -> dict[str, Any]:
    """Return ``clew calls --json``: every call as :func:`call_row`."""
    rows = [call_row(sid, c, prices) for c in calls]
    return {"session_id": sid, "currency": currency if prices else None, "calls": rows}


def request_doc(request: ModelRequest) -> dict[str, Any]:
    """Return a request as the call view shows it (every block, every spec)."""
    return {
        "model": request.model,
        "system": request.system,
        "messages": msgspec.to_builtins(request.messages),
        "tools": msgspec.to_builtins(request.tools),
        "settings": {"max_tokens": request.max_tokens, "temperature": request.temperature},
    }


def messages_diff(previous: ModelCall | None, call: ModelCall) -> dict[str, Any] | None:
    """Return what changed from ``previous`` (the same agent's previous call) to ``call``:
    the messages added after the part both share, how many of the previous one's are
    gone (a compaction replaces them), and the system prompt's diff when it changed."""
    if previous is None:
        return None
    old, new = previous.request.messages, call.request.messages
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    system = previous.request.system != call.request.system
    return {
        "previous": previous.index,
        "previous_id": previous.event_id,
        "kept": common,
        "dropped": len(old) - common,
        "added": msgspec.to_builtins(new[common:]),
        "system_changed": system,
        "system_diff": text_diff(previous.request.system, call.request.system) if system else [],
        "tools_changed": previous.request.tools != call.request.tools,
    }


def wire_body(call: ModelCall, provider: str) -> dict[str, Any]:
    """Return the request of ``call`` as ``provider``'s request body (``openai``: Chat
    Completions, ``anthropic``: Messages), as clew's adapter would send it."""
    # The adapters (and httpx under them) only when a body is asked for: `clew call` stays light.
    from actors.models.providers.anthropic import messages_payload  # noqa: PLC0415 - see above
    from actors.models.providers.openai import chat_payload  # noqa: PLC0415 - see above

    model = call.model.split(":", 1)[1] if ":" in call.model else call.model
    if provider == "openai":
        return chat_payload(model, call.request, "max_tokens")
    return messages_payload(model, call.request)


def _artifacts(rt: Runtime, sid: str, messages: Iterable[Message]) -> dict[str, Any]:
    """The artifacts the messages refer to: mime type, size, the first characters."""
    wanted = {
        b.artifact_id
        for m in messages
        for part in m.content
        for b in (part.content if isinstance(part, ToolResultBlock) else [part])
        if isinstance(b, ArtifactRefBlock)
    }
    out: dict[str, Any] = {}
    if not wanted:
        return out
    for a in rt.store.read_artifacts(sid):
        if a.artifact_id in wanted:
            data = rt.store.artifacts.read_range(a.path, 0, ARTIFACT_PREVIEW)
            out[a.artifact_id] = {
                "mime_type": a.mime_type,
                "size": a.size_bytes,
                "preview": data.decode("utf-8", errors="replace"),
            }
    return out


def call_doc(
    rt: Runtime,
    sid: str,
    call: ModelCall,
    previous: ModelCall | None = None,
    *,
    currency: str = "",
    prices: Mapping[str, Price] = {},
) -> dict[str, Any]:
    """Return one call whole (``clew call --json``, the inspector's call view)."""
    doc = call_row(sid, call, prices)
    doc.update(
        session_id=sid,
        currency=currency if prices else None,
        recorded_as=call.recorded_as,
        request_hash=call.request_hash,
        answered_at=call.answered_at,
        request=request_doc(call.request),
        response=None
        if call.content is None
        else {"content": msgspec.to_builtins(call.content), "stop_reason": call.stop_reason},
        error=None if call.error is None else msgspec.to_builtins(call.error),
        usage=msgspec.to_builtins(call.usage),
        diff=messages_diff(previous, call),
        artifacts=_artifacts(rt, sid, call.request.messages),
    )
    return doc


def previous_call(
    log: CallLog, recorded: list[RecordedCall], rec: RecordedCall
) -> ModelCall | None:
    """Return the call the same agent made before ``rec`` (rebuilt), or None."""
    agent = rec.requested.agent_id
    earlier = [c for c in recorded[: rec.index - 1] if c.requested.agent_id == agent]
    return log.call(earlier[-1]) if earlier else None


# --- the waterfall ------------------------------------------------------------------------

#: The most of a tool result the waterfall carries (the call view has the rest).
RESULT_CHARS: Final = 2000


def _clipped(content: list[ContentBlock]) -> str:
    """A tool result's blocks as text, at most :data:`RESULT_CHARS` characters."""
    if len(content) == 1 and isinstance(content[0], TextBlock):
        text = content[0].text  # the common case, without a join
    else:
        # (the providers' package imports httpx: only when a result is not one text)
        from actors.models.providers.mapping import block_text  # noqa: PLC0415 - see above

        text = "\n".join(block_text(b) for b in content)
    return text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 1] + "…"


#: The event types a waterfall is drawn from, and the method of :class:`_Waterfall`
#: each goes to (the rest of the log is not decoded).
_HANDLERS: Final = {
    "run_started": "_run_started",
    "run_ended": "_run_ended",
    "model_requested": "_model_requested",
    "model_responded": "_model_responded",
    "model_failed": "_model_failed",
    "tool_call_started": "_tool_started",
    "tool_call_finished": "_tool_finished",
    "tool_failed": "_tool_failed",
    "approval_requested": "_approval_requested",
    "approval_decided": "_approval_decided",
    "run_waiting": "_run_waiting",
    "run_resumed": "_run_resumed",
    "run_cancelling": "_run_cancelling",
}
WATERFALL_TYPES: Final = tuple(_HANDLERS)


def _parsed(iso: str) -> datetime | None:
    try:
        return datetime.fromisoformat(iso)
    except ValueError:
        return None


class _Waterfall:
    """One pass over a session's events, gathering each run's row and bars.

    ``delta``: the events are those after a cursor (:func:`waterfall_since`); a bar they
    end that began before it is an entry of :attr:`ends`, by its ``key`` (a run's
    cancellation ends with its row: the row's ``end_ms`` ends it).
    """

    def __init__(self, sid: str, start: str, *, calls: int = 0, delta: bool = False) -> None:
        self.sid = sid
        self.start = start
        self._t0 = _parsed(start)
        self.rows: dict[str, dict[str, Any]] = {}
        self.calls = calls
        self.delta = delta
        self.ends: list[dict[str, Any]] = []
        self._open: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._short: dict[str, str] = {}
        self._handlers: dict[str, Callable[[StoredEvent, Any], None]] = {
            kind: getattr(self, name) for kind, name in _HANDLERS.items()
        }

    def short(self, ident: str) -> str:
        found = self._short.get(ident)
        if found is None:
            found = self._short[ident] = relative(self.sid, ident)
        return found

    def at(self, iso: str) -> float:
        """Milliseconds from the session's first event to ``iso`` (0 if unreadable)."""
        t = _parsed(iso)
        return 0.0 if t is None or self._t0 is None else (t - self._t0).total_seconds() * 1000

    def row(self, e: StoredEvent) -> dict[str, Any]:
        run = e.run_id or ""
        found = self.rows.get(run)
        if found is None:
            found = self.rows[run] = {
                "run": self.short(run) if run else "",
                "agent": self.short(e.agent_id) if e.agent_id else "",
                "roles": [],
                "phase": "",
                "start_ms": self.at(e.created_at),
                "end_ms": None,
                "status": "",
                "bars": [],
            }
        return found

    def begin(self, e: StoredEvent, key: tuple[Any, ...], bar: dict[str, Any]) -> None:
        bar["start_ms"] = self.at(e.created_at)
        bar["end_ms"] = None
        self.row(e)["bars"].append(bar)
        self._open[(e.run_id, *key)] = bar

    def end(self, e: StoredEvent, key: tuple[Any, ...], **more: Any) -> None:
        bar = self._open.pop((e.run_id, *key), None)
        if bar is not None:
            bar["end_ms"] = self.at(e.created_at)
            bar.update(more)
        elif self.delta:  # begun before the cursor: the client ends it by its key
            self.ends.append({"key": self.key(e.run_id, key), "end_ms": self.at(e.created_at),
                              **more})  # fmt: skip

    def key(self, run_id: str | None, key: tuple[Any, ...]) -> str:
        """An open bar's key as a client finds it: ``brain:r1|call|3|1``."""
        return "|".join([self.short(run_id) if run_id else "", *map(str, key)])

    def add(self, e: StoredEvent) -> None:
        """Start or end what ``e`` starts or ends: a call's bar, or a run's row or wait.

        Dispatched on the event type, attributes read directly: a ``match`` of class
        patterns per event was 30% of a 100k-event waterfall.
        """
        handler = self._handlers.get(e.event_type)
        if handler is not None:
            handler(e, e.event)

    def _model_requested(self, e: StoredEvent, ev: Any) -> None:
        self.calls += 1
        role = ev.role
        r = self.row(e)
        if role and role not in r["roles"]:
            r["roles"].append(role)
        bar = {
            "kind": "compaction" if ev.phase == COMPACT_PHASE else "model",
            "label": f"{role or '-'} → {ev.model}",
            "call": self.calls,
            "id": self.short(e.event_id),
        }
        self.begin(e, ("call", ev.call_index, ev.attempt), bar)

    def _model_responded(self, e: StoredEvent, ev: Any) -> None:
        u = ev.usage
        detail = f"{u.input_tokens}→{u.output_tokens} tokens {ev.stop_reason}"
        self.end(e, ("call", ev.call_index, ev.attempt), detail=detail)

    def _model_failed(self, e: StoredEvent, ev: Any) -> None:
        detail = f"failed: {ev.error_type}"
        self.end(e, ("call", ev.call_index, ev.attempt), detail=detail, error=True)

    def _tool_started(self, e: StoredEvent, ev: Any) -> None:
        bar = {"kind": "tool", "label": ev.tool_name, "id": ev.tool_call_id}
        bar["arguments"] = ev.arguments
        self.begin(e, ("tool", ev.tool_call_id), bar)

    def _tool_finished(self, e: StoredEvent, ev: Any) -> None:
        bad = ev.is_error
        result = _clipped(ev.content)
        self.end(
            e, ("tool", ev.tool_call_id), detail="error" if bad else "ok", error=bad, result=result
        )

    def _tool_failed(self, e: StoredEvent, ev: Any) -> None:
        self.end(e, ("tool", ev.tool_call_id), detail=f"failed: {ev.error_type}", error=True)

    def _run_started(self, e: StoredEvent, ev: Any) -> None:
        self.row(e)["phase"] = ev.phase

    def _run_ended(self, e: StoredEvent, ev: Any) -> None:
        r = self.row(e)
        r["end_ms"], r["status"] = self.at(e.created_at), ev.status
        cancelling = self._open.pop((e.run_id, "cancel"), None)
        if cancelling is not None:  # (begun before a delta's cursor: the row's end ends it)
            cancelling["end_ms"] = r["end_ms"]

    def _approval_requested(self, e: StoredEvent, ev: Any) -> None:
        bar = {"kind": "approval", "label": f"approval of {ev.tool_name}", "id": ev.tool_call_id}
        self.begin(e, ("approval", ev.tool_call_id), bar)

    def _approval_decided(self, e: StoredEvent, ev: Any) -> None:
        self.end(e, ("approval", ev.tool_call_id), detail=ev.decision)

    def _run_waiting(self, e: StoredEvent, ev: Any) -> None:
        self.begin(e, ("wait",), {"kind": "wait", "label": f"waiting: {ev.reason}"})

    def _run_resumed(self, e: StoredEvent, ev: Any) -> None:
        self.end(e, ("wait",))

    def _run_cancelling(self, e: StoredEvent, ev: Any) -> None:
        self.begin(e, ("cancel",), {"kind": "cancel", "label": f"cancelling: {ev.reason}"})

    def doc(self, last: str, last_seq: int) -> dict[str, Any]:
        for (run_id, *key), bar in self._open.items():
            bar["key"] = self.key(run_id, tuple(key))  # a later delta may end it
        end = self.at(last)
        rows = [r for key, r in self.rows.items() if key]
        rows.sort(key=lambda r: r["start_ms"])
        doc = {
            "session_id": self.sid,
            "started_at": self.start,
            "duration_ms": end,
            "calls": self.calls,
            "last_seq": last_seq,
            "runs": rows,
        }
        if self.delta:
            doc["ends"] = self.ends
        return doc


def _empty(sid: str) -> dict[str, Any]:
    return {"session_id": sid, "started_at": None, "duration_ms": 0, "calls": 0,
            "last_seq": 0, "runs": []}  # fmt: skip


def waterfall_doc(rt: Runtime, sid: str) -> dict[str, Any]:
    """Return the waterfall: each run's row (``start_ms``/``end_ms`` from the session's
    first event, None while it runs) with its bars (``kind``: ``model``, ``compaction``,
    ``tool``, ``approval``, ``wait``, ``cancel``; ``end_ms`` None while open, and then a
    ``key`` a later :func:`waterfall_since` ends it by). A model bar's ``call`` is the
    call's index in :func:`calls_doc`. ``last_seq``: the last event drawn, the cursor of
    :func:`waterfall_since`.

    Reads only the events of :data:`WATERFALL_TYPES` (a 100k-event session's nodes, usage
    and board events are never decoded), and the session's first and last event.
    """
    store = rt.store
    first = store.read_events(sid, 0, 1)
    if not first:
        store.read_session(sid)  # an unknown session is refused here
        return _empty(sid)
    fall = _Waterfall(sid, first[0].created_at)
    last = store.read_events(sid, store.count_events(sid) - 1, 1)
    end, last_seq = (last[0].created_at, last[0].seq) if last else (first[0].created_at, 0)
    events = store.read_events_of_types(sid, WATERFALL_TYPES)
    # The bars are ~10⁵ small dicts that form no cycle: the collector's passes over them
    # (and over the events held) are pure cost.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for e in events:
            if e.seq > last_seq:
                break  # appended since the last event was read: the next delta's
            end = max(end, e.created_at)  # ISO-8601 of one clock: the text orders as the time
            fall.add(e)
    finally:
        if was_enabled:
            gc.enable()
    return fall.doc(end, last_seq)


def waterfall_since(rt: Runtime, sid: str, after: int, calls: int) -> dict[str, Any]:
    """Return what the waterfall gained after seq ``after`` (a live page's update): the
    rows of the runs with new events (new bars only; a known run's ``start_ms`` is not
    its start), ``ends`` — the bars begun before ``after`` that ended since (``key``,
    ``end_ms``, what the end adds) — and the new ``last_seq``, ``calls``,
    ``duration_ms``. ``calls``: how many model calls the client has (the new ones are
    numbered from there). Reads only the events after ``after``.
    """
    store = rt.store
    first = store.read_events(sid, 0, 1)
    if not first:
        store.read_session(sid)  # an unknown session is refused here
        return {**_empty(sid), "calls": calls, "last_seq": after, "ends": []}
    fall = _Waterfall(sid, first[0].created_at, calls=calls, delta=True)
    end, last_seq = first[0].created_at, after
    for e in store.read_events(sid, after):
        end, last_seq = max(end, e.created_at), e.seq
        fall.add(e)
    doc = fall.doc(end, last_seq)
    if last_seq == after:
        doc["duration_ms"] = None  # nothing new: the client keeps its own
    return doc


def call_view(rt: Runtime, sid: str, n: int) -> dict[str, Any] | None:
    """Return the inspector's view of call ``n`` (its index, from 1): :func:`call_doc`
    with the diff to the agent's previous call; None when there is no such call."""
    log = CallLog(rt.store, sid)
    recorded = log.recorded()
    if not 1 <= n <= len(recorded):
        return None
    rec = recorded[n - 1]
    return call_doc(rt, sid, log.call(rec), previous_call(log, recorded, rec))
