"""One encoder and one decoder for the log, plus the upcasting registry.

Decoding takes the fast path (straight into the typed union) when the stored
``schema_version`` is current. An older payload is decoded to a dict, walked
through the chain of upcasters ``(tag, from_version) -> payload`` up to the
current version, then converted. Upcasters are plain functions; golden payloads
of every old version live in ``tests/golden/`` and are decoded in tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from eventlog.errors import DecodeError
from eventlog.events import EVENT_TYPES, Event

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Event)
#: The decoder of the union of every event at its current version: a hot reader may call
#: it inline, and must then apply :func:`decode_event`'s version test (or call it).
EVENT_DECODER = _decoder
_raw_decoder = msgspec.json.Decoder(dict[str, Any])


def _current_version(cls: type) -> int:
    for f in msgspec.structs.fields(cls):
        if f.name == "schema_version":
            return int(f.default)
    raise AssertionError(f"{cls.__name__} has no schema_version")  # pragma: no cover


CURRENT_VERSIONS: dict[str, int] = {tag: _current_version(c) for tag, c in EVENT_TYPES.items()}
#: The same, keyed by class: the hot decode path avoids two attribute lookups per event.
CURRENT_BY_CLASS: dict[type, int] = {c: CURRENT_VERSIONS[t] for t, c in EVENT_TYPES.items()}
UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def upcaster(tag: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register ``fn`` as the upcaster of ``tag`` payloads from ``from_version`` to +1."""

    def register(fn: Upcaster) -> Upcaster:
        key = (tag, from_version)
        if key in UPCASTERS:
            raise ValueError(f"duplicate upcaster for {key}")
        UPCASTERS[key] = fn
        return fn

    return register


def encode_event(event: Event) -> bytes:
    """Encode ``event`` as JSON bytes (with its ``event_type`` tag)."""
    return _encoder.encode(event)


def encode(value: Any) -> bytes:
    """Encode any msgspec-encodable value with the shared encoder."""
    return _encoder.encode(value)


def upcast(payload: Payload) -> Payload:
    """Walk ``payload`` through the registered upcasters up to its tag's current version.

    Raises:
        DecodeError: unknown tag, a version from the future, or a missing upcaster.
    """
    tag = payload.get("event_type")
    if not isinstance(tag, str) or tag not in CURRENT_VERSIONS:
        raise DecodeError(f"unknown event_type {tag!r}")
    current = CURRENT_VERSIONS[tag]
    version = payload.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise DecodeError(f"{tag}: bad schema_version {version!r}")
    if version > current:
        raise DecodeError(f"{tag}: schema_version {version} is newer than this code ({current})")
    while version < current:
        fn = UPCASTERS.get((tag, version))
        if fn is None:
            raise DecodeError(f"{tag}: no upcaster from schema_version {version}")
        payload = fn(dict(payload))
        version += 1
        payload["schema_version"] = version
    return payload


def _has_version(data: bytes | str) -> bool:
    if isinstance(data, bytes):
        return b'"schema_version"' in data
    return '"schema_version"' in data


def decode_event(data: bytes | str) -> Event:
    """Decode one stored payload, upcasting older schema versions.

    Raises:
        DecodeError: the payload is not a valid event of any known version.
    """
    try:
        event = _decoder.decode(data)
        current = CURRENT_BY_CLASS[type(event)]
        # A payload without the field is version 1: only the fast path's default would
        # claim otherwise, and only for types that have moved past version 1.
        if event.schema_version == current and (current == 1 or _has_version(data)):
            return event
    except msgspec.ValidationError:
        pass  # maybe an older shape: take the slow path below
    except msgspec.DecodeError as e:
        raise DecodeError(f"undecodable event payload: {e}") from e
    try:
        payload = upcast(_raw_decoder.decode(data))
        upcasted: Event = msgspec.convert(payload, Event)
        return upcasted
    except msgspec.ValidationError as e:
        raise DecodeError(f"invalid event payload: {e}") from e


# --- the upcasters ------------------------------------------------------------------------


@upcaster("token_usage", 1)
def _token_usage_v1(p: Payload) -> Payload:
    """v1 kept token counts flat on the event; v2 nests them in ``usage``."""
    p["usage"] = {
        "input_tokens": p.pop("input_tokens", 0),
        "output_tokens": p.pop("output_tokens", 0),
        "cache_read_tokens": p.pop("cache_read_tokens", 0),
        "cache_write_tokens": p.pop("cache_write_tokens", 0),
    }
    return p


#: ``run_ended`` v1 statuses no clew ever wrote, and what v2 reads them as.
_V1_RUN_END_STATUS = {
    "aborted": "cancelled",
    "queued": "failed",
    "pending": "failed",
    "running": "failed",
}


@upcaster("run_ended", 1)
def _run_ended_v1(p: Payload) -> Payload:
    """v1's ``status`` allowed every run status; v2 only the end statuses.

    No clew wrote ``queued``, ``pending``, ``running`` or ``aborted`` there: a payload
    that holds one (written by hand or another tool) reads as ``cancelled`` (aborted) or
    ``failed``, the original kept in ``outcome["v1_status"]``.
    """
    status = p.get("status")
    if isinstance(status, str) and status in _V1_RUN_END_STATUS:
        p["status"] = _V1_RUN_END_STATUS[status]
        p["outcome"] = {**(p.get("outcome") or {}), "v1_status": status}
    return p


@upcaster("agent_created", 1)
def _agent_created_v1(p: Payload) -> Payload:
    """v1 allowed the agent type ``main``, which no clew wrote (the Brain is always the
    ``orchestrator``); v2 reads it as ``orchestrator``."""
    if p.get("agent_type") == "main":
        p["agent_type"] = "orchestrator"
    return p


@upcaster("model_requested", 1)
def _model_requested_v1(p: Payload) -> Payload:
    """v1 always held the request by value (``messages``, ``system``): v2 reads it as its
    by-value form unchanged (the by-reference fields stay unset)."""
    return p
