"""What a counterfactual rerun serves from the recording instead of asking again.

A rerun re-executes a recorded run in a fork, live: its events are the fork's own. Its
model seam is wrapped by :class:`ServedModel`: a request whose bytes are those of a
recorded request (the fork's run id and session id read as the parent's) gets the
recorded reply — or the recorded failure — without asking the model; any other request
is asked live. A changed request (another model, an edited tool result, new
instructions) changes every later request of the same conversation, so from the first
change on that conversation goes live, while an independent worker whose request did
not change is still served. Its tool seam is wrapped by :class:`ServedTool`: an edited
result wins, then the recorded result of the same call (same id and arguments), then
the live tool (or, without one, a failure saying the call has no recorded result).
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from actors.errors import NotRecorded
from actors.models.protocol import Model, ModelRequest, ModelResponse, ToolSpec
from actors.models.tools import Tool, ToolContext, ToolOutput, call_tool, spec_of
from eventlog.blocks import ContentBlock
from eventlog.codec import encode
from eventlog.errors import ModelError
from eventlog.events import (
    ModelFailed,
    ModelRequested,
    ModelResponded,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
    Usage,
)
from eventlog.ids import stable_hash
from eventlog.records import StoredEvent

Answer = ModelResponded | ModelFailed


@dataclass
class Served:
    """The recorded answers of a run, by request hash, and what the rerun took of them.

    ``rename`` maps the fork's ids back to the parent's: a request of the fork's run is
    hashed as the parent's run would have sent it.
    """

    answers: dict[str, deque[Answer]]
    tool_results: dict[str, ToolCallFinished | ToolFailed]
    tool_args: dict[str, dict[str, Any]]
    rename: list[tuple[re.Pattern[bytes], bytes]]
    served: int = 0
    live: int = 0
    saved: Usage = field(default_factory=Usage)
    served_tools: int = 0
    edited: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, request: ModelRequest) -> Answer | None:
        """Return the recorded answer of ``request`` (counted), or None (a live call)."""
        data = encode(request)
        for pattern, replacement in self.rename:
            data = pattern.sub(replacement, data)
        key = stable_hash(data, 24)
        with self.lock:
            queue = self.answers.get(key)
            if not queue:
                self.live += 1
                return None
            answer = queue.popleft()
            self.served += 1
            if isinstance(answer, ModelResponded):
                self.saved = _add(self.saved, answer.usage)
            return answer


def served_from(
    events: Iterable[StoredEvent],
    *,
    parent: tuple[str, str],
    fork: tuple[str, str],
) -> Served:
    """Index a recorded run's events (the run and its workers') for a rerun.

    ``parent`` and ``fork``: (session id, main run id) of the recording and of the rerun.
    """
    hashes: dict[tuple[str | None, int, int], str] = {}
    answers: dict[str, deque[Answer]] = {}
    results: dict[str, ToolCallFinished | ToolFailed] = {}
    args: dict[str, dict[str, Any]] = {}
    for stored in events:
        ev = stored.event
        if isinstance(ev, ModelRequested):
            hashes[(stored.run_id, ev.call_index, ev.attempt)] = ev.request_hash
        elif isinstance(ev, ModelResponded | ModelFailed):
            h = hashes.get((stored.run_id, ev.call_index, ev.attempt))
            if h is not None:
                answers.setdefault(h, deque()).append(ev)
        elif isinstance(ev, ToolCallStarted):
            args[ev.tool_call_id] = ev.arguments
        elif isinstance(ev, ToolCallFinished | ToolFailed):
            results[ev.tool_call_id] = ev
    (psid, prun), (fsid, frun) = parent, fork
    rename = [
        (re.compile(re.escape(frun.encode()) + rb"(?![0-9])"), prun.encode()),
        (re.compile(re.escape(fsid.encode())), psid.encode()),
    ]
    return Served(answers=answers, tool_results=results, tool_args=args, rename=rename)


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
    )


class ServedModel:
    """A model that answers a recorded request from the recording, else asks ``inner``."""

    def __init__(self, inner: Model, served: Served) -> None:
        self.name = inner.name
        self._inner = inner
        self._served = served
        window = getattr(inner, "context_window", None)
        if window is not None:
            self.context_window = window

    def complete(self, request: ModelRequest) -> ModelResponse:
        answer = self._served.take(request)
        if answer is None:
            return self._inner.complete(request)
        if isinstance(answer, ModelFailed):
            raise ModelError(answer.message, status=answer.status, error_type=answer.error_type)
        return ModelResponse(
            content=answer.content, usage=answer.usage, stop_reason=answer.stop_reason
        )


class Unavailable:
    """A model a rerun cannot build (a recorded name that is no provider spec): a call
    that is not served from the recording fails, recorded as ``model_failed``."""

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self._why = why

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError(
            f"rerun: model {self.name} has no recorded reply for this request and cannot be"
            f" asked live ({self._why}); pass it (model=…, clew rerun --with ROLE=SPEC)",
            error_type="ModelUnavailable",
        )


class ServedTool:
    """A tool whose calls get an edited result, else their recorded one, else run live."""

    def __init__(self, inner: Tool, served: Served, edits: Mapping[str, ToolOutput], live: bool):
        self.name = inner.name
        self.description = inner.description
        self.args_model: type[pydantic.BaseModel] = inner.args_model
        self.idempotent = inner.idempotent
        self.spec: ToolSpec = spec_of(inner)
        for attr in ("in_doubt", "timeout_s", "needs_approval"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))
        self._inner = inner
        self._served = served
        self._edits = edits
        self._live = live

    def call(self, args: pydantic.BaseModel, ctx: ToolContext | None = None) -> ToolOutput:
        call_id = ctx.tool_call_id if ctx is not None else ""
        if call_id in self._edits:
            with self._served.lock:
                self._served.edited.append(call_id)
            return self._edits[call_id]
        recorded = self._served.tool_results.get(call_id)
        dumped = args.model_dump(mode="json", exclude_unset=True)
        if recorded is not None and self._served.tool_args.get(call_id) == dumped:
            with self._served.lock:
                self._served.served_tools += 1
            return _replayed(recorded)
        if not self._live:
            raise NotRecorded(
                f"tool {self.name}: call {call_id} has no recorded result and no live tool"
                " was given to the rerun"
            )
        return call_tool(self._inner, args, ctx)


def _replayed(recorded: ToolCallFinished | ToolFailed) -> ToolOutput:
    """Return a recorded outcome as the tool's output (a failure raised again)."""
    if isinstance(recorded, ToolFailed):
        error: type[Exception] = type(recorded.error_type, (Exception,), {})
        raise error(recorded.message)
    blocks: list[ContentBlock] = list(recorded.content)
    return blocks or None
