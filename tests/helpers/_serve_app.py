"""The app of the serve tests (``clew serve --app tests.helpers._serve_app:recipes``).

Its ``counted`` model recipe is the demo's scripted model, slowed down so a process can
be killed mid-run, and counting every call it is asked to make: one line
``<pid> <request_hash>`` appended (one ``write`` of an ``O_APPEND`` file: whole lines,
whichever process writes) to the file ``$CLEW_TEST_MODEL_CALLS`` names — a paid call.

Its ``ledger`` tools recipe is the demo's two tools, ``save_note`` (not idempotent)
also appending ``<session id> <note>`` to the ledger file ``$CLEW_TEST_LEDGER`` names
each time it really runs (one ``O_APPEND`` write): the soak counts side effects there.

Its ``loopback`` model recipe (the pool benchmark and the soak) gives the demo's scripted
replies, each one paid for first by a real call of the OpenAI adapter to the loopback
model server at ``$CLEW_TEST_MODEL_URL`` (``tests/helpers/_model_server.py``: it answers
after its latency and counts, per session, the request hashes it was asked).
"""

from __future__ import annotations

import os
from typing import Any

from actors.demo import NoteArgs, demo_model, demo_tools
from actors.models.protocol import ModelRequest, ModelResponse, request_hash
from actors.models.providers.openai import OpenAIChatModel
from actors.models.tools import FunctionTool, Tool
from actors.runtime.serving import RecipeContext, Recipes

#: Milliseconds each scripted reply takes: a run of the demo takes about a second.
DELAY_MS = 120


class CountedModel:
    """Wrap a model; log each call before it is made."""

    def __init__(self, path: str, delay_ms: int) -> None:
        self.inner = demo_model(3, delay_ms)
        self.name = self.inner.name
        self.path = path

    def complete(self, request: ModelRequest) -> ModelResponse:
        line = f"{os.getpid()} {request_hash(request)}\n".encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        return self.inner.complete(request)


class _TaggedOpenAI(OpenAIChatModel):
    """The OpenAI adapter, naming the session and the request hash in ``user``."""

    def __init__(self, base_url: str, session_id: str) -> None:
        super().__init__("loopback", base_url=base_url)
        self.session_id = session_id

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        payload = super()._payload(request)
        payload["user"] = f"{self.session_id} {request_hash(request)}"
        return payload


class LoopbackModel:
    """The demo's scripted model; each call is first paid at the loopback model server."""

    def __init__(self, base_url: str, session_id: str) -> None:
        self.inner = demo_model(3)
        self.name = self.inner.name
        self.wire = _TaggedOpenAI(base_url, session_id)

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.wire.complete(request)  # the model's latency, on the wire; its text is unused
        return self.inner.complete(request)


def _append_line(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _ledger_tools(ctx: RecipeContext) -> list[Tool]:
    tools = demo_tools(ctx.project_dir)
    [save] = [t for t in tools if t.name == "save_note"]
    assert isinstance(save, FunctionTool)
    ledger, sid = ctx.environ["CLEW_TEST_LEDGER"], ctx.session_id

    def save_note(args: NoteArgs) -> str:
        _append_line(ledger, f"{sid} {args.text}\n")
        return f"saved note {args.text!r}"

    noted = FunctionTool(
        "save_note", save_note, NoteArgs, description=save.description, idempotent=False
    )
    return [t if t.name != "save_note" else noted for t in tools]


def _counted(ctx: RecipeContext) -> CountedModel:
    return CountedModel(ctx.environ["CLEW_TEST_MODEL_CALLS"], DELAY_MS)


def _loopback(ctx: RecipeContext) -> LoopbackModel:
    return LoopbackModel(ctx.environ["CLEW_TEST_MODEL_URL"], ctx.session_id)


def recipes() -> Recipes:
    """The serve tests' recipes: ``counted``, ``loopback`` and ``ledger`` beside the demo's."""
    return Recipes(
        models={"counted": _counted, "loopback": _loopback}, tools={"ledger": _ledger_tools}
    )
