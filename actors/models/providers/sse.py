"""Streaming a reply as server-sent events, over the same bounded, retried exchange.

Both adapters' ``stream()`` share this: :class:`SseParser` cuts the body into events as
the bytes come, and the adapter's :class:`StreamReader` maps each event to the text it
adds, then the whole stream to the very ``ModelResponse`` that ``complete`` returns.

Policy (the prose lives in ``docs/providers.md``, "Streaming"):

- until the first piece of text is yielded, a failure is an ordinary failed attempt: the
  same :class:`~actors.models.providers.retry.RetryPolicy`, ``Retry-After`` and error
  messages as ``complete`` (a 429, a cut, a stream that ends before its end);
- once text was yielded, any failure — the connection cut, the attempt's time up, an
  event that is not valid, the size cap — raises ``ModelError(error_type=
  "StreamInterrupted", retryable=True)`` at once: retrying here would repeat text the
  caller already showed, so the runtime records the attempt and asks again itself;
- the attempt's wall-clock deadline (``deadline.py``) and ``max_response_bytes`` bound the
  whole stream, as they bound a JSON body;
- a 2xx reply that is not ``text/event-stream`` (a server that ignored ``"stream"``) is
  read as ``complete`` reads it, and its text yielded as one piece.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, Protocol

import httpx
import msgspec

from actors.models.protocol import STREAM_INTERRUPTED, ModelResponse, StreamItem
from actors.models.providers.http import JsonHttpClient, _Attempt
from eventlog.blocks import TextBlock
from eventlog.errors import ModelError


class SseEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One dispatched event: its type (``message`` when unnamed) and its data lines joined."""

    event: str = "message"
    data: str = ""


class _StreamProblem(Exception):
    """The stream cannot be mapped (or said it failed); becomes the attempt's error.

    Args:
        what: what went wrong, after ``HTTP 200 stream`` (``ended before [DONE]``).
        shown: the offending text, shown as an excerpt with secrets masked.
        retryable: whether asking again may help (an error event, an early end).
    """

    def __init__(self, what: str, shown: str = "", *, retryable: bool = False) -> None:
        super().__init__(what)
        self.what = what
        self.shown = shown
        self.retryable = retryable


class SseParser:
    """Cut an event stream into :class:`SseEvent` s, chunk by chunk, as they arrive.

    Each byte is looked at a bounded number of times however the stream is chunked: a
    line arriving in many small chunks is kept as its pieces and joined once, when it
    ends. ``id:`` and ``retry:`` fields and ``:`` comments are ignored; an event still
    open when the body ends is dropped, as the standard says.
    """

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # the current line's bytes so far
        self._cr = False  # the last chunk ended with a CR: a CRLF's LF may come next
        self._first = True
        self._event = ""
        self._data: list[str] = []
        self.received = 0
        self._problem: _StreamProblem | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Take the next bytes of the body; return the events they complete.

        Raises:
            _StreamProblem: an earlier line was not UTF-8 text.
        """
        if self._problem is not None:
            raise self._problem
        self.received += len(chunk)
        if self._cr:
            chunk = b"\r" + chunk
        self._cr = chunk.endswith(b"\r")
        if self._cr:
            chunk = chunk[:-1]
        if b"\r" in chunk:  # CRLF and a lone CR end a line as LF does
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            self._partial.append(chunk)
            return []
        lines = chunk.split(b"\n")
        if self._partial:
            lines[0] = b"".join([*self._partial, lines[0]])
        self._partial = [lines.pop()]
        return self._lines(lines)

    def close(self) -> list[SseEvent]:
        """Take the end of the body; return the event a last lone CR completes, if any.

        Raises:
            _StreamProblem: a line was not UTF-8 text.
        """
        if self._problem is not None:
            raise self._problem
        if not self._cr:
            return []
        self._cr = False
        line, self._partial = b"".join(self._partial), []
        return self._lines([line])

    def _lines(self, lines: list[bytes]) -> list[SseEvent]:
        events: list[SseEvent] = []
        for raw in lines:
            if not raw:
                if self._data:
                    events.append(
                        SseEvent(event=self._event or "message", data="\n".join(self._data))
                    )
                self._event, self._data = "", []
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                # Raised on the next call: the events before it (the stream's end among
                # them, perhaps) are delivered first.
                shown = repr(raw[:200])
                self._problem = _StreamProblem("with a line that is not UTF-8 text", shown)
                break
            if self._first:
                self._first = False
                line = line.removeprefix("\ufeff")  # a byte order mark may open the stream
            name, _, value = line.partition(":")
            if name == "data":
                self._data.append(value.removeprefix(" "))
            elif name == "event":
                self._event = value.removeprefix(" ")
            # else: a comment (empty name), id, retry, or an unknown field
        return events


class StreamReader(Protocol):
    """An adapter's mapping of one attempt's event stream; a fresh one per attempt."""

    @property
    def done(self) -> bool:
        """Whether the stream said it is complete (``[DONE]``, ``message_stop``)."""
        ...

    def feed(self, event: SseEvent) -> str:
        """Take one event; return the reply text it adds (``""`` for none).

        Raises:
            _StreamProblem: an error event, or an event the adapter cannot map.
        """
        ...

    def response(self) -> ModelResponse:
        """Return the whole reply, as ``complete`` maps the same reply unstreamed.

        Raises:
            _StreamProblem: the stream ended before the reply did, or holds none.
        """
        ...


def stream_reply(
    http: JsonHttpClient,
    payload: Mapping[str, Any],
    reader: Callable[[], StreamReader],
    whole: Callable[[dict[str, Any]], ModelResponse],
) -> Iterator[StreamItem]:
    """Yield the reply's text pieces as they come, then its ``ModelResponse``, last.

    Args:
        http: the adapter's client (endpoint, headers, retry policy, limits, secrets).
        payload: the wire body, asking for a stream.
        reader: makes the adapter's event mapping, once per attempt.
        whole: maps a non-streamed JSON reply (a server that ignored ``"stream"``).

    Raises:
        ModelError: as ``complete`` raises it before any text was yielded; after, with
            ``error_type="StreamInterrupted"`` and ``retryable=True``.
    """
    body = msgspec.json.encode(payload)
    tries = http.tries()
    while True:
        timeout = http.next_attempt(tries)
        pieces = 0
        try:
            with contextlib.closing(_attempt(http, body, timeout, reader(), whole)) as items:
                for item in items:
                    pieces += isinstance(item, str)
                    yield item
            return
        except _Attempt as failed:
            if pieces:
                raise interrupted(failed.error, pieces) from None
            http.after_failure(tries, failed)


def interrupted(error: ModelError, pieces: int) -> ModelError:
    """Return the error of a stream that failed after ``pieces`` pieces of text were yielded."""
    said = f"{pieces} piece{'s' if pieces != 1 else ''} of text"
    return ModelError(
        f"{error} (stream interrupted after {said})",
        status=error.status,
        retryable=True,
        error_type=STREAM_INTERRUPTED,
    )


def _attempt(
    http: JsonHttpClient,
    body: bytes,
    timeout: float,
    reader: StreamReader,
    whole: Callable[[dict[str, Any]], ModelResponse],
) -> Generator[StreamItem]:
    """Run one attempt: yield its text pieces, then its response.

    Raises:
        _Attempt: the attempt failed (the caller decides about retrying).
    """
    response, at = http.open(body, timeout)
    if not is_event_stream(response):
        reply = whole(http.read_json(response, at, timeout))
        text = "".join(b.text for b in reply.content if isinstance(b, TextBlock))
        if text:
            yield text
        yield reply
        return
    status = response.status_code
    parser = SseParser()
    try:
        yield from _texts(_events(http.body_chunks(response, at, timeout), parser), reader)
        reply = reader.response()
    except httpx.TransportError:
        what = f"HTTP {status} stream cut off after {parser.received:,} bytes"
        raise _Attempt(http.fail(what, status, retry=True)) from None
    except _StreamProblem as problem:
        what = f"HTTP {status} stream {problem.what}"
        if problem.shown:
            what += f": {http.shown(problem.shown)!r}"
        raise _Attempt(http.fail(what, status, problem.retryable)) from None
    finally:
        response.close()  # also when the consumer stops early: the connection is dropped
    yield reply


def _texts(events: Iterator[SseEvent], reader: StreamReader) -> Iterator[str]:
    """Yield the text of each event up to the stream's end, then read on to the body's end.

    Reading the few bytes after ``[DONE]`` / ``message_stop`` (the end of the chunked
    body) keeps the connection for the next call: closing a response mid-body drops it,
    and a new connection costs a TLS handshake. Once the reply is whole, a failure (a
    server holding the body open until the attempt's time is up, bytes that are not
    text) only ends the reading.
    """
    try:
        for event in events:
            text = "" if reader.done else reader.feed(event)
            if text:
                yield text
    except (httpx.TransportError, _Attempt, _StreamProblem):
        if not reader.done:
            raise


def _events(chunks: Iterator[bytes], parser: SseParser) -> Iterator[SseEvent]:
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()


def is_event_stream(response: httpx.Response) -> bool:
    """Return whether ``response`` is an event stream (``text/event-stream``)."""
    media = str(response.headers.get("content-type", "")).partition(";")[0]
    return media.strip().lower() == "text/event-stream"


def decode_event(event: SseEvent, shape: type[Any]) -> Any:
    """Return the JSON data of ``event`` decoded as ``shape``.

    Raises:
        _StreamProblem: the data is not JSON of that shape.
    """
    try:
        return msgspec.json.decode(event.data, type=shape)
    except msgspec.DecodeError as e:  # ValidationError is a DecodeError
        raise _StreamProblem(f"with an event that cannot be read ({e})", event.data) from None
