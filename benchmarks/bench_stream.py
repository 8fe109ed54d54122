"""Streaming benchmark: ``stream()`` vs ``complete()`` of the same reply, on loopback.

Run: ``python benchmarks/bench_stream.py [--tokens 500] [--calls 200]``

A threaded ``http.server`` on 127.0.0.1 answers every request with one prepared body:
the OpenAI Chat Completions reply of ``--tokens`` words as plain JSON (the baseline,
what ``complete`` reads) or as the server-sent events of the same reply, one chunk per
word (what ``stream`` parses). Both adapters' work is measured per call, best of five
runs of ``--calls`` calls, and the ratio printed: the price of parsing the events,
which a watched run pays and an unwatched one (``complete``) does not.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from _timing import best_of

from actors.models.protocol import ModelRequest
from actors.models.providers import OpenAIChatModel
from eventlog.blocks import Message, TextBlock

REQUEST = ModelRequest(
    model="bench", messages=[Message(role="user", content=[TextBlock(text="hi")])]
)


def bodies(tokens: int) -> dict[bool, tuple[str, bytes]]:
    """Return {streamed?: (content type, body)} for a reply of ``tokens`` words."""
    words = [f"word{i} " for i in range(tokens)]
    whole = {
        "id": "c",
        "model": "m",
        "choices": [{"index": 0, "message": {"content": "".join(words)}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": tokens},
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + json.dumps({"id": "c", "model": "m", "choices": [choice]}) + "\n\n"

    events = [chunk({"content": w}) for w in words] + [chunk({}, "stop")]
    usage = {"id": "c", "choices": [], "usage": whole["usage"]}
    events += ["data: " + json.dumps(usage) + "\n\n", "data: [DONE]\n\n"]
    return {
        False: ("application/json", json.dumps(whole).encode()),
        True: ("text/event-stream", "".join(events).encode()),
    }


@contextmanager
def serving(replies: dict[bool, tuple[str, bytes]]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle on, the body waits for the
        # client's delayed ACK (40 ms a call on Linux), which would swamp what is measured.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            sent = self.rfile.read(int(self.headers["Content-Length"]))
            kind, body = replies[b'"stream":true' in sent]
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with serving(bodies(args.tokens)) as url, OpenAIChatModel("m", base_url=url) as model:

        def completes() -> None:
            for _ in range(args.calls):
                model.complete(REQUEST)

        def streams() -> None:
            for _ in range(args.calls):
                for _item in model.stream(REQUEST):
                    pass

        assert list(model.stream(REQUEST))[-1] == model.complete(REQUEST)
        base, _ = best_of(5, completes)
        streamed, _ = best_of(5, streams)
    per = 1e3 / args.calls
    print(f"reply of {args.tokens} words, {args.calls} calls, loopback, best of 5")
    print(f"complete(): {base * per:.3f} ms/call (baseline)")
    print(f"stream():   {streamed * per:.3f} ms/call  ratio {streamed / base:.2f}x")
    print(f"stream parse cost: {(streamed - base) * 1e6 / args.calls / args.tokens:.2f} µs/event")


if __name__ == "__main__":
    main()
