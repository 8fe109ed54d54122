"""The loopback model: one OpenAI-compatible server every system of the crash suite calls.

It runs in the runner's process (a ``ThreadingHTTPServer`` on 127.0.0.1) and serves every
system and every trial, so all of them get the same replies for the same conversation.
Each trial talks to its own base URL, ``http://127.0.0.1:PORT/t/<trial>/v1``, so the server
counts the requests of each trial apart (the re-paid calls are counted here, outside the
system under test).

The reply is chosen from the conversation alone (:func:`scripted_reply`): a request without
tools is clew's router (it gets the plan); otherwise the tool results already in the
conversation say where the agent is — none: look the invoice up; the invoice: refund it;
the refund: answer. Tool-call ids are fresh per request, as a real model's are, so a
re-paid call that asks for the refund again asks for it under a new id.

Faults: every reply waits ``delay`` seconds (a slow model, so random kills land inside
responses), and a trial can be armed to SIGKILL its child at its k-th request — ``before``
any byte of the reply, or ``mid`` reply (headers and half the body sent, or half the
stream's chunks).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import scenario

USAGE = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}


@dataclass
class Arm:
    """Kill the trial's child at its ``request``-th model request, ``when`` = before|mid."""

    request: int
    when: str
    pid: int = 0
    fired: bool = False


@dataclass
class Trial:
    """What the server saw of one trial: requests received and answered in full."""

    received: int = 0
    answered: int = 0
    arm: Arm | None = None
    in_flight: int = 0
    #: requests that asked for ``"stream": true`` (server-sent events)
    streamed: int = 0
    first_at: float = 0.0
    last_at: float = 0.0
    log: list[str] = field(default_factory=list)


def _tool_results(messages: list[dict[str, Any]]) -> list[str]:
    """Return the contents of the conversation's tool results, in order."""
    out: list[str] = []
    for m in messages:
        if m.get("role") == "tool":
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            out.append(str(content))
    return out


def scripted_reply(request: dict[str, Any], serial: int) -> dict[str, Any]:
    """Return the assistant message for ``request`` (``serial``: this trial's request number)."""
    tools = [t.get("function", {}).get("name") for t in request.get("tools") or []]
    if not tools:  # clew's router: no tools, asks for a plan
        return {"role": "assistant", "content": json.dumps({"primary_role": "agent"})}
    results = _tool_results(request.get("messages") or [])
    refunded = [r for r in results if scenario.REFUND_MARK in r]
    looked_up = [r for r in results if scenario.INVOICE_MARK in r]
    if refunded:
        refund_id = scenario.refund_id_in(refunded[-1])
        return {"role": "assistant", "content": scenario.answer_json(refund_id)}
    if looked_up:
        name, args = scenario.REFUND_TOOL, {"invoice": scenario.INVOICE, "amount_eur": 42}
    else:
        name, args = scenario.LOOKUP_TOOL, {"invoice": scenario.INVOICE}
    call = {
        "id": f"call_{serial}_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def completion(message: dict[str, Any]) -> dict[str, Any]:
    """Return a Chat Completions body holding ``message``."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-crash",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "crash-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


def stream_chunks(message: dict[str, Any]) -> list[bytes]:
    """Return the server-sent events of ``message`` streamed (several text pieces)."""

    def event(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        body: dict[str, Any] = {
            "id": "chatcmpl-crash",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": "crash-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            body["choices"] = []
            body["usage"] = usage
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    chunks = [event({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    for i in range(0, len(text), 12):
        chunks.append(event({"content": text[i : i + 12]}))
    for i, call in enumerate(message.get("tool_calls") or []):
        head = {"index": i, "id": call["id"], "type": "function"}
        head["function"] = {"name": call["function"]["name"], "arguments": ""}
        chunks.append(event({"tool_calls": [head]}))
        args = call["function"]["arguments"]
        for j in range(0, len(args), 12):
            piece = {"index": i, "function": {"arguments": args[j : j + 12]}}
            chunks.append(event({"tool_calls": [piece]}))
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    chunks.append(event({}, finish))
    chunks.append(event({}, usage=USAGE))
    chunks.append(b"data: [DONE]\n\n")
    return chunks


class _QuietServer(ThreadingHTTPServer):
    """A client SIGKILLed mid-request resets its connection: expected here, not an error."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class ModelServer:
    """The loopback model server; :attr:`trials` holds what it saw, per trial id."""

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.trials: dict[str, Trial] = {}
        self.lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def base_url(self, trial: str) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/t/{trial}/v1"

    def trial(self, trial: str) -> Trial:
        with self.lock:
            return self.trials.setdefault(trial, Trial())

    def arm(self, trial: str, request: int, when: str) -> None:
        """Kill ``trial``'s child at its ``request``-th request (see :meth:`set_pid`)."""
        self.trial(trial).arm = Arm(request, when)

    def set_pid(self, trial: str, pid: int) -> None:
        t = self.trial(trial)
        if t.arm is not None:
            t.arm.pid = pid

    def start(self) -> ModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _kill(self, arm: Arm) -> None:
        deadline = time.monotonic() + 10
        while not arm.pid and time.monotonic() < deadline:  # the runner sets it just after spawn
            time.sleep(0.005)
        arm.fired = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(arm.pid, signal.SIGKILL)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                parts = self.path.split("/")  # /t/<trial>/v1/chat/completions
                if len(parts) < 4 or parts[1] != "t" or not self.path.endswith("/completions"):
                    self.send_error(404)
                    return
                trial = server.trial(parts[2])
                with server.lock:
                    trial.received += 1
                    serial = trial.received
                    trial.first_at = trial.first_at or time.monotonic()
                    trial.in_flight += 1
                arm = trial.arm
                kill = arm if arm and not arm.fired and arm.request == serial else None
                try:
                    self._answer(body, serial, kill, trial)
                finally:
                    with server.lock:
                        trial.in_flight -= 1

            def _answer(
                self, body: dict[str, Any], serial: int, kill: Arm | None, trial: Trial
            ) -> None:
                if kill is not None and kill.when == "before":
                    server._kill(kill)
                    return
                time.sleep(server.delay)
                message = scripted_reply(body, serial)
                if body.get("stream"):
                    with server.lock:
                        trial.streamed += 1
                    chunks = stream_chunks(message)
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        for i, chunk in enumerate(chunks):
                            if kill is not None and i == len(chunks) // 2:
                                server._kill(kill)
                                return
                            self.wfile.write(chunk)
                            self.wfile.flush()
                            time.sleep(server.delay / len(chunks))
                    self.close_connection = True
                else:
                    payload = json.dumps(completion(message)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        if kill is not None:
                            self.wfile.write(payload[: len(payload) // 2])
                            self.wfile.flush()
                            server._kill(kill)
                            return
                        self.wfile.write(payload)
                        self.wfile.flush()
                with server.lock:
                    trial.answered += 1
                    trial.last_at = time.monotonic()
                    trial.log.append(str(message.get("tool_calls") or "answer")[:60])

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
