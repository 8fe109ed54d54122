"""A real HTTP server on 127.0.0.1 that speaks both provider wire formats, for tests.

Tests script replies in order (``server.reply(...)``); with none scripted the
server answers like a provider would: ``/chat/completions`` with an OpenAI
completion and ``/messages`` with an Anthropic message, echoing the last user
text. Every request is recorded (method, path, headers, body) so tests assert
the wire mapping itself. Faults: any status and headers, a ``hang`` before
replying, a ``content_length`` larger than the body (the body is cut off), raw
bytes that are not JSON, a slowloris ``drip`` (one byte every ``drip`` seconds, of
the body or — with ``drip_headers`` — of the whole reply), or an ``endless`` body
that streams until the client leaves. A streamed reply (``parts``, e.g. server-sent
events) is written one part at a time; it may ``stall_after`` some parts until
``release`` is set, or end after ``cut_after`` parts.

For a whole multi-turn session, ``server.answer_with(responder)`` installs a
function ``(path, request_json) -> Reply`` that answers every request no
scripted reply is queued for — a fake provider that chooses its reply by
reading the request (system prompt, last message), as concurrent agents need.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JSON_TYPE = "application/json"

Responder = Callable[[str, Any], "Reply"]
TEST_KEY = "sk-test-0123456789abcdef-SECRET"


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``body`` is JSON-encoded unless it is ``bytes``."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: float = 0.0
    content_length: int | None = None
    drip: float = 0.0
    drip_headers: bool = False
    endless: bool = False
    content_type: str = JSON_TYPE
    parts: tuple[bytes, ...] = ()
    stall_after: int | None = None
    release: threading.Event | None = None
    cut_after: int | None = None

    def encoded(self) -> bytes:
        if self.parts:
            return b"".join(self.parts)
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode()


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received: headers keyed in lower case, the raw body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


# --- wire-format reply builders ---------------------------------------------------------


def openai_reply(
    text: str | None = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "fake-gpt",
) -> dict[str, Any]:
    """Return a Chat Completions body; ``tool_calls`` items are ``{id, name, arguments}``."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


def anthropic_reply(
    *blocks: dict[str, Any],
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
    model: str = "fake-claude",
) -> dict[str, Any]:
    """Return a Messages API body with the given content blocks."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(blocks),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 2},
    }


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


def default_reply(path: str, request: Any) -> Reply:
    """Answer like the provider the path belongs to, echoing the last user text."""
    messages = request.get("messages", []) if isinstance(request, dict) else []
    text = "echo: " + _last_user_text(messages)
    if path.endswith("/chat/completions"):
        return Reply(body=openai_reply(text))
    if path.endswith("/messages"):
        return Reply(body=anthropic_reply({"type": "text", "text": text}))
    return Reply(status=404, body={"error": {"message": f"no route {path}"}})


# --- the server -------------------------------------------------------------------------


class FakeServer:
    """A ``ThreadingHTTPServer`` on an ephemeral loopback port, in a daemon thread."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        # a short poll interval: shutdown() waits up to one interval (0.5 s by default)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(self, *replies: Reply) -> None:
        """Queue ``replies``; each request takes the next one."""
        with self._lock:
            self._replies.extend(replies)

    def answer_with(self, responder: Responder | None) -> None:
        """Answer unscripted requests with ``responder(path, request_json)`` (None: default)."""
        with self._lock:
            self._responder = responder

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_reply(self, path: str, body: bytes) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            responder = self._responder
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if responder is not None:
            return responder(path, request)
        return default_reply(path, request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: one request per connection, so a cut-off body ends with a close.
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(RecordedRequest("POST", self.path, headers, body))
                reply = server._next_reply(self.path, body)
                if reply.hang and server._stopping.wait(reply.hang):
                    return
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    _answer(self, reply, server._stopping)  # unless the client left

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler


def _answer(handler: BaseHTTPRequestHandler, reply: Reply, stopping: threading.Event) -> None:
    """Send ``reply`` through ``handler``: at once, dripping, or without end."""
    payload = reply.encoded()
    handler.send_response(reply.status)
    handler.send_header("Content-Type", reply.content_type)
    for name, value in reply.headers.items():
        handler.send_header(name, value)
    if reply.parts and not reply.drip:  # a stream ends when the connection closes (HTTP/1.0)
        if reply.content_length is not None:
            handler.send_header("Content-Length", str(reply.content_length))
        handler.end_headers()
        _stream_parts(handler.wfile, reply, stopping)
        return
    if not reply.endless:  # an endless body ends when the connection closes
        handler.send_header("Content-Length", str(reply.content_length or len(payload)))
    if reply.drip_headers:
        # send_response() and send_header() only buffered the status line and headers.
        head, handler._headers_buffer = b"".join(handler._headers_buffer), []  # type: ignore[attr-defined]
        _drip(handler.wfile, head + b"\r\n", reply.drip, stopping)
    else:
        handler.end_headers()
    if reply.drip:
        _drip(handler.wfile, payload, reply.drip, stopping)
    elif reply.endless:
        _stream_forever(handler.wfile, payload, stopping)
    else:
        handler.wfile.write(payload)


def _stream_parts(out: io.BufferedIOBase, reply: Reply, stopping: threading.Event) -> None:
    """Send ``reply.parts`` one write each; stall or stop where the reply says."""
    for sent, part in enumerate([*reply.parts, b""]):
        if sent == reply.cut_after:
            return
        if sent == reply.stall_after:  # len(parts): the body is held open after its end
            release = reply.release or stopping
            while not (release.wait(0.01) or stopping.is_set()):
                pass
            if stopping.is_set():
                return
        out.write(part)
        out.flush()


def _drip(out: io.BufferedIOBase, data: bytes, every: float, stopping: threading.Event) -> None:
    """Send ``data`` one byte every ``every`` seconds (a slowloris reply)."""
    for i in range(len(data)):
        out.write(data[i : i + 1])
        out.flush()
        if stopping.wait(every):
            return


def _stream_forever(out: io.BufferedIOBase, first: bytes, stopping: threading.Event) -> None:
    """Send ``first``, then 64 KiB of spaces at a time until the client leaves."""
    out.write(first)
    filler = b" " * 65536
    while not stopping.is_set():
        out.write(filler)


# --- seams ------------------------------------------------------------------------------


class FakeClock:
    """A monotonic clock and a ``sleep`` that records each wait and advances the clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
