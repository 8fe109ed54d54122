"""The model seam: a provider-neutral request/response and the ``Model`` protocol.

Every call goes through the runtime's recorder, which writes ``model_requested``
(with :func:`request_hash`) before the call and ``model_responded`` /
``model_failed`` after it. Adapters (scripted, OpenAI-compatible, Anthropic)
only map these shapes to and from their wire formats.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final, Literal, Protocol, get_args, runtime_checkable

import msgspec

from eventlog.blocks import ContentBlock, Message
from eventlog.codec import encode
from eventlog.events import Usage
from eventlog.ids import stable_hash


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a model is told about a tool: name, description, JSON schema of arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)


class ModelSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Sampling settings of one role's model calls; ``None`` keeps the request's default.

    Unset (``None``) fields fall back: a role's to the role it extends, then to the
    request defaults (``max_tokens`` 4096, no ``temperature``).
    """

    max_tokens: int | None = None
    temperature: float | None = None

    def over(self, base: ModelSettings) -> ModelSettings:
        """Return these settings with every unset field taken from ``base``."""
        return ModelSettings(
            max_tokens=self.max_tokens if self.max_tokens is not None else base.max_tokens,
            temperature=self.temperature if self.temperature is not None else base.temperature,
        )


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One model call, provider-neutral. Holds no secrets (keys live in the adapter)."""

    model: str
    messages: list[Message]
    system: str = ""
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    role: str = ""
    phase: str = ""
    max_tokens: int = 4096
    temperature: float | None = None


#: Why a model stopped, normalised across providers (each adapter maps its own words).
StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "error"]
STOP_REASONS: Final[tuple[str, ...]] = get_args(StopReason)


class ModelResponse(msgspec.Struct, frozen=True, kw_only=True):
    """A model's reply: content blocks (text, tool_call, …), usage, and why it stopped.

    ``stop_reason`` is normalised: ``end_turn``, ``tool_use``, ``max_tokens``,
    ``stop_sequence`` or ``error``.
    """

    content: list[ContentBlock]
    usage: Usage = Usage()
    stop_reason: str = "end_turn"
    model: str = ""


@runtime_checkable
class Model(Protocol):
    """A model client. ``name`` is the spec string recorded in events (``openai:gpt-4o``)."""

    name: str

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request``.

        Raises:
            ModelError: the call failed (after the adapter's own retries, if any).
        """
        ...


class TextDelta(msgspec.Struct, frozen=True, kw_only=True):
    """A piece of a model's reply text as it streams. Ephemeral: never recorded.

    ``call_index`` and ``attempt`` are those of the call's ``model_requested``: a
    retried attempt streams again from its start, so a consumer showing text keyed by
    ``(agent_id, call_index)`` restarts it when ``attempt`` changes. ``role`` and
    ``phase`` are the request's: a UI showing the answer keeps the primary's pieces
    (``phase`` ``primary``) and leaves out the router's plan (``route``) and the workers'.
    """

    agent_id: str
    run_id: str
    call_index: int
    attempt: int
    text: str
    #: The calling role (``router``, a worker's role, the primary's role).
    role: str = ""
    #: The call's phase (``route``, ``worker``, ``primary``, ``review`` …).
    phase: str = ""


#: What a streaming model yields: text pieces as they arrive, then, last, the whole
#: :class:`ModelResponse` — the very response ``complete`` would have returned.
StreamItem = str | ModelResponse

#: The ``error_type`` of a :class:`~eventlog.errors.ModelError` raised by ``stream`` after
#: it yielded text: the stream was cut (or went bad) mid-way, so the call is asked again
#: as a new attempt rather than retried silently behind text already shown.
STREAM_INTERRUPTED = "StreamInterrupted"


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model that can also stream its reply (the runtime uses it when someone watches)."""

    def stream(self, request: ModelRequest) -> Iterator[StreamItem]:
        """Yield the reply's text pieces, then the complete ``ModelResponse`` (last item).

        The response must equal what :meth:`Model.complete` returns for ``request``:
        the recorded events are the same whether the call streamed or not.

        Raises:
            ModelError: the call failed. Raised after text was yielded (the stream
                was cut), the runtime records the failed attempt and asks the same
                model once more, as the next attempt.
        """
        ...


@runtime_checkable
class AsyncModel(Protocol):
    """An ``async`` model client; the runtime accepts it wherever a ``Model`` goes.

    The actors stay threads: a call is run on the event loop the run was started from
    (``Session.arun``/``astream``), else on a loop thread of the runtime's own.
    """

    name: str

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` (same contract as :meth:`Model.complete`)."""
        ...


@runtime_checkable
class AsyncStreamingModel(AsyncModel, Protocol):
    """An ``async`` model that can also stream (same contract as :class:`StreamingModel`)."""

    def astream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Yield text pieces, then the complete ``ModelResponse``."""
        ...


def request_hash(request: ModelRequest) -> str:
    """Return the stable hash of ``request``: same prompt, tools and settings → same hash."""
    return stable_hash(encode(request), 24)


#: Where the messages sit in an encoded request whose message list is empty.
_EMPTY_MESSAGES = b'"messages":[]'


class RequestHasher:
    """:func:`request_hash`, incrementally, for the requests of one growing conversation.

    A conversation's next request holds the previous one's messages and a few more; the
    hash state after each message seen is kept (``sha256`` copies, for the last
    :attr:`KEPT` messages), so each call encodes and hashes only the messages after the
    longest prefix it has seen, the system prompt and the tools. The result is byte for
    byte :func:`request_hash`'s: the messages kept are matched by identity, and the hash
    goes on from the state after the last one that matches — a run whose context was
    rebuilt from the path (the previous run's messages are equal, not the same objects)
    hashes only those again. Another head (model, system prompt, tools) starts over.
    Not thread-safe: one per conversation (one per role of a run, or of a session's runs).
    """

    #: Messages whose hash state is kept (older ones: a match short of them starts over).
    KEPT: Final = 256

    def __init__(self) -> None:
        self._head = b""
        self._seen: list[Message] = []
        #: (messages hashed, the state after them), oldest first; (0, head) first.
        self._states: list[tuple[int, Any]] = []

    def hash(self, request: ModelRequest) -> str:
        """Return ``request_hash(request)``."""
        bare = encode(msgspec.structs.replace(request, messages=[]))
        at = bare.index(_EMPTY_MESSAGES) + len(_EMPTY_MESSAGES) - 1
        head, tail = bare[:at], bare[at:]
        messages = request.messages
        seen, states = self._seen, self._states
        if head != self._head:
            self._head = head
            seen.clear()
            states[:] = [(0, hashlib.sha256(head))]
        # Inline the usual case (the conversation grew): no call for it on a worker's turn.
        same = (
            min(len(seen), len(messages))
            if all(map(operator.is_, seen, messages))
            else same_prefix(seen, messages)
        )
        while states and states[-1][0] > same:
            states.pop()
        if not states:  # the match is older than the states kept
            states.append((0, hashlib.sha256(head)))
        start, state = states[-1]
        del seen[start:]
        state = state.copy()
        for m in messages[start:]:
            if seen:
                state.update(b",")
            state.update(encode(m))
            seen.append(m)
            states.append((len(seen), state.copy()))
        if len(states) > self.KEPT:
            del states[: len(states) - self.KEPT]
        done = state.copy()
        done.update(tail)
        digest: str = done.hexdigest()
        return digest[:24]


def same_prefix(seen: list[Message], messages: list[Message]) -> int:
    """Return how many of ``messages`` are, from the first, the very objects of ``seen``."""
    n = min(len(seen), len(messages))
    if all(map(operator.is_, seen, messages)):  # the usual case: the conversation grew
        return n
    # The index of the first pair that differs, found in C (no Python frame per message).
    differ = itertools.compress(itertools.count(), map(operator.is_not, seen, messages))
    return next(differ, n)
