"""A loopback OpenAI-compatible model server that answers every call after a fixed latency,
and counts what it was paid for: the pool benchmark's and the soak's model provider.

``POST /v1/chat/completions`` sleeps ``delay_s`` (200 ms by default: a realistic model
latency, so a serve pool's throughput is bound by concurrency, not by the CPU) and
answers a plain completion. The ``loopback`` recipe of ``tests/helpers/_serve_app.py``
sends each call of the demo's scripted model here through the real OpenAI adapter, with
``user`` = ``<session id> <request hash>``: :attr:`LoopbackModelServer.paid` counts, per
session, every request hash it answered — a recorded reply asked again would be a paid
hash with no ``model_requested`` of its own.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "model": "loopback",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        }
    ).encode()


class _Quiet(ThreadingHTTPServer):
    """A server that does not print a traceback when a client is killed mid-call."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


class LoopbackModelServer:
    """A threading HTTP server on 127.0.0.1 (an ephemeral port) in a daemon thread."""

    def __init__(self, delay_s: float = 0.2) -> None:
        self.delay_s = delay_s
        #: ``(session id, request hash)`` → calls answered.
        self.paid: Counter[tuple[str, str]] = Counter()
        #: Calls answered in all.
        self.requests = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: the adapter reuses its connections

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                try:
                    sid, _, digest = str(json.loads(body).get("user", "")).partition(" ")
                except ValueError:
                    sid, digest = "", ""
                time.sleep(server.delay_s)
                with server._lock:
                    server.paid[(sid, digest)] += 1
                    server.requests += 1
                reply = _completion("ok")
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._httpd = _Quiet(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """Up to and including ``/v1`` (what the OpenAI adapter takes)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def paid_by_session(self) -> dict[str, Counter[str]]:
        """Per session: request hash → calls answered."""
        out: dict[str, Counter[str]] = {}
        with self._lock:
            for (sid, digest), n in self.paid.items():
                out.setdefault(sid, Counter())[digest] += n
        return out

    def __enter__(self) -> LoopbackModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
