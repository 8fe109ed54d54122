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

from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec

from actors.models.protocol import ModelRequest
from actors.models.providers.anthropic import messages_payload
from actors.models.providers.mapping import block_text
from actors.models.providers.openai import chat_payload
from actors.replay.calls import CallLog, ModelCall, RecordedCall, elapsed_ms
from actors.replay.diff import text_diff
from actors.runtime.runtime import Runtime
from eventlog.blocks import ArtifactRefBlock, ContentBlock, Message, ToolResultBlock
from eventlog.events import (
    ApprovalDecided,
    ApprovalRequested,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    RunCancelling,
    RunEnded,
    RunResumed,
    RunStarted,
    RunWaiting,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)
from eventlog.ids import relative
from eventlog.records import StoredEvent
from projections.costs import Price, price_of
from projections.usage import Totals

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
    price = price_of(prices, call.model)
    if price is None:
        return None
    u = call.usage
    totals = Totals(
        calls=1,
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_read_tokens=u.cache_read_tokens,
        cache_write_tokens=u.cache_write_tokens,
    )
    return round(price.cost(totals), 6)


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
    text = "\n".join(block_text(b) for b in content)
    return text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 1] + "…"


class _Waterfall:
    """One pass over a session's events, gathering each run's row and bars."""

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.start: str | None = None
        self.rows: dict[str, dict[str, Any]] = {}
        self.calls = 0
        self._open: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self._short: dict[str, str] = {}

    def short(self, ident: str) -> str:
        found = self._short.get(ident)
        if found is None:
            found = self._short[ident] = relative(self.sid, ident)
        return found

    def at(self, iso: str) -> float:
        """Milliseconds from the session's first event to ``iso``."""
        if self.start is None:
            self.start = iso
        return elapsed_ms(self.start, iso) or 0.0

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

    def begin(self, e: StoredEvent, key: str, bar: dict[str, Any]) -> None:
        bar["start_ms"] = self.at(e.created_at)
        bar["end_ms"] = None
        self.row(e)["bars"].append(bar)
        self._open[(e.run_id or "", key)] = (e.created_at, bar)

    def end(self, e: StoredEvent, key: str, **more: Any) -> dict[str, Any] | None:
        found = self._open.pop((e.run_id or "", key), None)
        if found is None:
            return None
        _, bar = found
        bar["end_ms"] = self.at(e.created_at)
        bar.update(more)
        return bar

    def add(self, e: StoredEvent) -> None:
        """Start or end what ``e`` starts or ends: a call's bar, or a run's row or wait."""
        if not self._calls(e):
            self._runs(e)

    def _calls(self, e: StoredEvent) -> bool:
        match e.event:
            case ModelRequested(call_index=i, attempt=n, role=role, phase=phase, model=model):
                self.calls += 1
                kind = "compaction" if phase == COMPACT_PHASE else "model"
                r = self.row(e)
                if role and role not in r["roles"]:
                    r["roles"].append(role)
                bar = {"kind": kind, "label": f"{role or '-'} → {model}", "call": self.calls}
                bar["id"] = self.short(e.event_id)
                self.begin(e, f"call {i} {n}", bar)
            case ModelResponded(call_index=i, attempt=n, usage=u, stop_reason=stop):
                tokens = f"{u.input_tokens}→{u.output_tokens} tokens"
                self.end(e, f"call {i} {n}", detail=f"{tokens} {stop}")
            case ModelFailed(call_index=i, attempt=n, error_type=kind):
                self.end(e, f"call {i} {n}", detail=f"failed: {kind}", error=True)
            case ToolCallStarted(tool_call_id=call, tool_name=name, arguments=args):
                bar = {"kind": "tool", "label": name, "id": call, "arguments": args}
                self.begin(e, f"tool {call}", bar)
            case ToolCallFinished(tool_call_id=call, is_error=bad, content=content):
                result = _clipped(content)
                self.end(
                    e, f"tool {call}", detail="error" if bad else "ok", error=bad, result=result
                )
            case ToolFailed(tool_call_id=call, error_type=kind):
                self.end(e, f"tool {call}", detail=f"failed: {kind}", error=True)
            case _:
                return False
        return True

    def _runs(self, e: StoredEvent) -> None:
        match e.event:
            case RunStarted(phase=phase):
                self.row(e)["phase"] = phase
            case RunEnded(status=status):
                r = self.row(e)
                r["end_ms"], r["status"] = self.at(e.created_at), status
                self.end(e, "cancel")
            case ApprovalRequested(tool_call_id=call, tool_name=name):
                bar = {"kind": "approval", "label": f"approval of {name}", "id": call}
                self.begin(e, f"approval {call}", bar)
            case ApprovalDecided(tool_call_id=call, decision=decision):
                self.end(e, f"approval {call}", detail=decision)
            case RunWaiting(reason=reason):
                self.begin(e, "wait", {"kind": "wait", "label": f"waiting: {reason}"})
            case RunResumed():
                self.end(e, "wait")
            case RunCancelling(reason=reason):
                self.begin(e, "cancel", {"kind": "cancel", "label": f"cancelling: {reason}"})

    def doc(self, last: str | None) -> dict[str, Any]:
        end = self.at(last) if last is not None else 0.0
        rows = [r for key, r in self.rows.items() if key]
        rows.sort(key=lambda r: r["start_ms"])
        return {
            "session_id": self.sid,
            "started_at": self.start,
            "duration_ms": end,
            "calls": self.calls,
            "runs": rows,
        }


def waterfall_doc(rt: Runtime, sid: str) -> dict[str, Any]:
    """Return the waterfall: each run's row (``start_ms``/``end_ms`` from the session's
    first event, None while it runs) with its bars (``kind``: ``model``, ``compaction``,
    ``tool``, ``approval``, ``wait``, ``cancel``; ``end_ms`` None while open). A model
    bar's ``call`` is the call's index in :func:`calls_doc`."""
    fall = _Waterfall(sid)
    last: str | None = None
    for e in rt.store.iter_events(sid):
        if last is None:
            fall.at(e.created_at)
        if last is None or e.created_at > last:
            last = e.created_at  # ISO-8601 of one clock: the text orders as the time
        if e.run_id is not None:
            fall.add(e)
    return fall.doc(last)


def call_view(rt: Runtime, sid: str, n: int) -> dict[str, Any] | None:
    """Return the inspector's view of call ``n`` (its index, from 1): :func:`call_doc`
    with the diff to the agent's previous call; None when there is no such call."""
    log = CallLog(rt.store, sid)
    recorded = log.recorded()
    if not 1 <= n <= len(recorded):
        return None
    rec = recorded[n - 1]
    return call_doc(rt, sid, log.call(rec), previous_call(log, recorded, rec))
