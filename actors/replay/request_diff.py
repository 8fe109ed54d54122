"""What changed between a recorded model request and the one today's code builds.

A ``model_requested`` holds the request's hash; two hashes that differ say nothing a
person can act on. :func:`describe_request_change` compares the two *requests* —
system prompt, messages, tool specs, model and settings — and returns field-level
differences with a unified diff for every changed text (a tool's description, the
system prompt, a message). It takes two :class:`ModelRequest` objects, whatever the
recording holds them as: :func:`recorded_request` rebuilds the recorded one from a
``model_requested`` event recorded by value and the run's recorded tool specs;
:class:`~actors.replay.requests.StoreRequests` one recorded by reference from the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from actors.divergences import FieldDiff
from actors.models.protocol import ModelRequest, ToolSpec, request_hash
from actors.replay.diff import diff_values, text_diff, with_text_diffs
from actors.replay.requests import StoreRequests
from eventlog.events import ModelRequested

#: The path of the entry saying the hash differs for a reason the recording cannot show.
UNEXPLAINED = "request (a field the recording does not hold)"


def describe_request_change(recorded: ModelRequest, current: ModelRequest) -> list[FieldDiff]:
    """Return what differs between two model requests, most telling first.

    Texts (``system``, a tool's ``description``, a message's text) get a unified diff in
    ``lines`` even when they hold one line; a tool added or removed is one entry
    ``tools[<name>]``; other fields are ``old → new`` values.
    """
    out: list[FieldDiff] = []
    for name in ("model", "role", "phase", "max_tokens", "temperature"):
        old, new = getattr(recorded, name), getattr(current, name)
        if old != new:
            out.append(FieldDiff(path=name, expected=old, actual=new))
    if recorded.system != current.system:
        out.append(_text("system", recorded.system, current.system))
    out += _tools(recorded.tools, current.tools)
    out += with_text_diffs(
        diff_values(
            msgspec.to_builtins(recorded.messages),
            msgspec.to_builtins(current.messages),
            "messages",
        )
    )
    return out


def recorded_request(
    requested: ModelRequested, specs: Mapping[str, ToolSpec], like: ModelRequest
) -> ModelRequest:
    """Rebuild the request a ``model_requested`` recorded.

    The event holds the tools by name: their specs come from ``specs`` (the run's
    recorded tool specs); a tool it does not know (a built-in tool) and the sampling
    settings the event does not hold are taken from ``like`` (today's request), so they
    show no difference. Compare the rebuilt request's hash with the recorded one
    (:func:`explained`) to know whether the rebuild is exact.
    """
    by_name = {t.name: t for t in like.tools}
    tools = [specs.get(n) or by_name.get(n) or ToolSpec(name=n) for n in requested.tools]
    return ModelRequest(
        model=requested.model,
        messages=list(requested.messages),
        system=requested.system,
        tools=tools,
        role=requested.role,
        phase=requested.phase,
        max_tokens=like.max_tokens,
        temperature=like.temperature,
    )


def explained(requested: ModelRequested, rebuilt: ModelRequest) -> bool:
    """True when ``rebuilt`` hashes to the recorded ``request_hash`` (the rebuild is exact)."""
    return request_hash(rebuilt) == requested.request_hash


def request_change(
    requested: ModelRequested,
    specs: Mapping[str, ToolSpec],
    current: ModelRequest,
    log: StoreRequests | None = None,
) -> list[FieldDiff]:
    """Return what changed from the recorded ``requested`` to today's ``current`` request.

    A request recorded by reference is rebuilt from the session's log (``log``: its
    nodes and stored texts); one recorded by value from the event and ``specs``. When
    the rebuilt recorded request does not hash to the recorded hash (a setting or a
    built-in tool's spec the recording does not hold changed), the differences found are
    followed by one entry saying the rest is not in the recording.
    """
    rebuilt = log.rebuild(requested, current) if log is not None else None
    if rebuilt is None:
        rebuilt = recorded_request(requested, specs, current)
    out = describe_request_change(rebuilt, current)
    if not explained(requested, rebuilt):
        out.append(
            FieldDiff(
                path=UNEXPLAINED, expected=requested.request_hash, actual=request_hash(current)
            )
        )
    return out


#: A by-reference request's fields that stand for texts (hashes, a node id, a count): when
#: the rebuilt request shows what changed, its text diff says it better.
REFERENCE_FIELDS: Final = frozenset({"system_ref", "tools_ref", "tip", "message_count"})


def with_request_change(raw: list[FieldDiff], change: list[FieldDiff]) -> list[FieldDiff]:
    """Merge the event's field differences ``raw`` with the request's ``change``: the
    request's view of a field wins (a text gets its diff even on one line), and a
    reference field is left out when the change names what it stands for."""
    more = {d.path: d for d in change}
    explained = any(path != UNEXPLAINED for path in more)
    kept = [d for d in raw if not (explained and d.path in REFERENCE_FIELDS)]
    return [more.pop(d.path, d) for d in kept] + list(more.values())


def _text(path: str, old: str, new: str) -> FieldDiff:
    return FieldDiff(path=path, expected=old, actual=new, lines=text_diff(old, new))


def _tools(old: list[ToolSpec], new: list[ToolSpec]) -> list[FieldDiff]:
    before = {t.name: t for t in old}
    after = {t.name: t for t in new}
    out: list[FieldDiff] = []
    for name in list(before) + [n for n in after if n not in before]:
        a, b = before.get(name), after.get(name)
        path = f"tools[{name}]"
        if a is None or b is None:
            out.append(FieldDiff(path=path, expected=_spec(a), actual=_spec(b)))
            continue
        if a.description != b.description:
            out.append(_text(f"{path}.description", a.description, b.description))
        out += with_text_diffs(diff_values(a.parameters, b.parameters, f"{path}.parameters"))
    if [t.name for t in old] != [t.name for t in new] and set(before) == set(after):
        out.append(FieldDiff(path="tools (order)", expected=list(before), actual=list(after)))
    return out


def _spec(spec: ToolSpec | None) -> Any:
    return None if spec is None else msgspec.to_builtins(spec)
