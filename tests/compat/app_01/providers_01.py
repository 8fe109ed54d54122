"""A small application written from clew 0.1.0's docs/providers.md only.

It imports the adapters from ``actors.providers`` (the path 0.1 documented), runs a
session against a local Chat Completions server (a stand-in for Ollama or vLLM, served
here on the loopback interface), stops the server and replays the session offline. It
also checks the documented refusals of ``model_from_spec`` and one non-retried HTTP
error. Prints one JSON document of what it saw.

Usage: ``python providers_01.py HOME``. Do not modernise this file: it is the 0.1
contract (docs/compatibility.md).
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from actors.providers import (
    AnthropicModel,
    HttpOptions,
    OpenAIChatModel,
    ProviderConfigError,
    RetryPolicy,
    model_from_spec,
)

from actors import ClewError, Message, ModelError, ModelRequest, Runtime, TextBlock


class ChatCompletions(BaseHTTPRequestHandler):
    """Answers every chat completion with one text reply; ``/bad/…`` with HTTP 400."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.startswith("/bad/"):
            status, reply = 400, {"error": {"message": "no such model"}}
        else:
            status = 200
            reply = {
                "model": body["model"],
                "choices": [
                    {
                        "message": {"role": "assistant", "content": "Hello from the server."},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 5},
            }
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Quiet."""


server = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
threading.Thread(target=server.serve_forever, daemon=True).start()
base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
seen: dict[str, object] = {}

# The spec strings and their refusals.
local = model_from_spec("openai:qwen2.5", env={}, base_url=base_url)
seen["spec_name"] = local.name
for spec, env in [("bogus:x", {}), ("openai:gpt-4o-mini", {})]:
    try:
        model_from_spec(spec, env=env)
    except ProviderConfigError as e:
        seen[f"refused {spec}"] = [isinstance(e, ClewError), isinstance(e, ValueError), str(e)]
local.close()
with AnthropicModel("claude-haiku-4-5", base_url=base_url, api_key="k") as claude:
    seen["anthropic_name"] = claude.name

# Build an adapter directly: no environment involved at all.
model = OpenAIChatModel(
    "qwen2.5",
    base_url=base_url,
    api_key="not-a-real-key",
    options=HttpOptions(timeout=30, retry=RetryPolicy(max_attempts=3)),
)
request = ModelRequest(
    model=model.name, messages=[Message(role="user", content=[TextBlock(text="hi")])]
)
seen["complete"] = [b.text for b in model.complete(request).content if isinstance(b, TextBlock)]
with OpenAIChatModel("x", base_url=base_url.replace("/v1", "/bad/v1"), api_key="k") as broken:
    try:
        broken.complete(request)
    except ModelError as e:
        seen["http_400"] = [e.status, e.retryable]

home = Path(sys.argv[1])
with Runtime(home, project_dir=home) as rt:
    session = rt.new_session()
    outcome = session.run("Say hello", model=model)
    seen["outcome"] = [outcome.status, outcome.answer]
    model.close()
    server.shutdown()
    server.server_close()
    # Replay needs no key, no network and no provider: the server is gone.
    report = rt.replay(session.id)
    seen["replay"] = [report.identical, report.runs]

# The key lives only in the adapter's headers: no byte of the home holds it.
seen["key_stored"] = any(
    b"not-a-real-key" in f.read_bytes() for f in home.rglob("*") if f.is_file()
)

print(json.dumps(seen, sort_keys=True))
