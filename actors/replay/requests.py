"""Model requests recorded by reference, and rebuilt from the log.

A run of flow 3+ records a ``model_requested`` as what the request was built from
(docs/storage.md): the conversation's tip node and its message count, content hashes of
the system prompt and of the tool specs, and the sampling settings — never the whole
message list, which made a long conversation's log grow with its square. The texts
behind the hashes are stored once per session in ``content_stored`` events
(:class:`ContentIndex` knows which are there); :class:`StoreRequests` turns a recorded
request back into the :class:`ModelRequest` it hashed, for a readable divergence or for
any tool that wants to see what a model was sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import msgspec

from actors.models.protocol import ModelRequest, ToolSpec
from eventlog.blocks import Message
from eventlog.codec import encode
from eventlog.events import ContentKind, ContentStored, ModelRequested
from eventlog.ids import stable_hash
from eventlog.store import EventStore
from projections.context import build_context

_specs_decoder = msgspec.json.Decoder(list[ToolSpec])


def content_hash(text: str) -> str:
    """Return the content hash a ``content_stored`` event files ``text`` under."""
    return stable_hash(text.encode(), 32)


def specs_text(specs: list[ToolSpec]) -> str:
    """Return tool specs as the text stored for them (JSON, in the model's order)."""
    return encode(specs).decode()


class ContentIndex:
    """The content hashes a session's log holds; thread-safe, one per session per run.

    Learned from the store (``content_stored`` events) at first use, then kept up to date:
    :meth:`claim` before a request refers to a text, :meth:`committed` once the claimer's
    ``content_stored`` is durable. A claim is a run's own until that commit: the runs of a
    main run commit in their own groups, in no order between them, so a second run that
    refers to a text another run has only claimed stores a copy of its own — else its
    request could be committed (and a kill could keep it) without the text it refers to.
    Copies are identical, and the first one read wins.
    """

    def __init__(self, store: EventStore, session_id: str) -> None:
        self._store = store
        self._session_id = session_id
        self._lock = threading.Lock()
        self._known: set[str] | None = None
        #: Hashes claimed and not committed yet: by which runs.
        self._claims: dict[str, set[str]] = {}

    def claim(self, content_hash: str, owner: str = "") -> bool:
        """Return True when run ``owner`` is to store ``content_hash``'s text: it is not
        in the log yet and ``owner`` has not claimed it before; False otherwise."""
        with self._lock:
            if self._known is None:
                self._known = {
                    e.event.content_hash
                    for e in self._store.read_session_events(self._session_id, "content_stored")
                    if isinstance(e.event, ContentStored)
                }
            if content_hash in self._known:
                return False
            owners = self._claims.setdefault(content_hash, set())
            if owner in owners:
                return False
            owners.add(owner)
            return True

    def committed(self, content_hash: str) -> None:
        """Count ``content_hash`` as in the log: a claimer's ``content_stored`` committed."""
        with self._lock:
            if self._known is not None:
                self._known.add(content_hash)
            self._claims.pop(content_hash, None)


def requested_event(
    request: ModelRequest,
    *,
    call_index: int,
    attempt: int,
    request_digest: str,
    tip: str | None = None,
    store: Callable[[ContentKind, str], str] | None = None,
) -> ModelRequested:
    """Return the ``model_requested`` of ``request``: by value without ``store`` (as runs
    of flows 1–2 record it), else by reference.

    ``tip``: the node whose path's context ``request.messages`` are (None: the messages
    are not a conversation's — a router's or a summariser's own — and are recorded by
    value). ``store(kind, text)`` stores a text once and returns its hash.
    """
    by_value = ModelRequested(
        call_index=call_index,
        attempt=attempt,
        model=request.model,
        role=request.role,
        phase=request.phase,
        request_hash=request_digest,
        messages=request.messages,
        tools=[s.name for s in request.tools],
        system=request.system,
    )
    if store is None:
        return by_value
    return msgspec.structs.replace(
        by_value,
        messages=[] if tip is not None else request.messages,
        system="",
        tip=tip,
        message_count=len(request.messages) if tip is not None else None,
        system_ref=store("system", request.system) if request.system else "",
        tools_ref=store("tools", specs_text(request.tools)) if request.tools else "",
        max_tokens=request.max_tokens,
        temperature=request.temperature,
    )


class StoreRequests:
    """Rebuilds recorded requests from a session's log (texts, nodes); caches texts."""

    def __init__(self, store: EventStore, session_id: str) -> None:
        self._store = store
        self._session_id = session_id
        self._texts: dict[str, str] | None = None

    def text(self, content_hash: str) -> str | None:
        """Return the text stored under ``content_hash`` in the session, if any."""
        if self._texts is None:
            self._texts = {}
            for e in self._store.read_session_events(self._session_id, "content_stored"):
                if isinstance(e.event, ContentStored):
                    self._texts.setdefault(e.event.content_hash, e.event.text)
        return self._texts.get(content_hash)

    def messages(self, requested: ModelRequested) -> list[Message] | None:
        """Return the messages of a recorded request (None: its tip node is not there)."""
        if requested.tip is None:
            return list(requested.messages)
        path = self._store.read_active_path(self._session_id, requested.tip)
        if not path or path[-1].node_id != requested.tip:
            return None
        return build_context(path)

    def specs(self, requested: ModelRequested) -> list[ToolSpec] | None:
        """Return the tool specs of a recorded by-reference request (None: not found)."""
        if not requested.tools_ref:
            return []
        text = self.text(requested.tools_ref)
        return None if text is None else _specs_decoder.decode(text)

    def request(self, requested: ModelRequested) -> ModelRequest:
        """Return what a recorded ``model_requested`` sent, in either form, as far as the
        log holds it (a by-value request's tools are known by name only)."""
        empty = ModelRequest(
            model=requested.model,
            messages=[],
            tools=[ToolSpec(name=n) for n in requested.tools],
            max_tokens=requested.max_tokens or ModelRequest(model="", messages=[]).max_tokens,
        )
        rebuilt = self.rebuild(requested, empty)
        if rebuilt is not None:
            return rebuilt
        return msgspec.structs.replace(
            empty,
            messages=list(requested.messages),
            system=requested.system,
            role=requested.role,
            phase=requested.phase,
            temperature=requested.temperature,
        )

    def rebuild(self, requested: ModelRequested, like: ModelRequest) -> ModelRequest | None:
        """Return the request a by-reference ``requested`` hashed, as far as the log holds
        it (None: a by-value one — see :func:`~actors.replay.request_diff.recorded_request`).

        A part the log does not hold (a node or a text removed) is taken from ``like``
        (today's request), so it shows no difference; compare the rebuilt request's hash
        with the recorded one to know whether the rebuild is exact.
        """
        if requested.message_count is None and not requested.system_ref:
            return None
        messages = self.messages(requested)
        system = self.text(requested.system_ref) if requested.system_ref else ""
        specs = self.specs(requested)
        return ModelRequest(
            model=requested.model,
            messages=like.messages if messages is None else messages,
            system=like.system if system is None else system,
            tools=like.tools if specs is None else specs,
            role=requested.role,
            phase=requested.phase,
            max_tokens=like.max_tokens if requested.max_tokens is None else requested.max_tokens,
            temperature=requested.temperature,
        )
