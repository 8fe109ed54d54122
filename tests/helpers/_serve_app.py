"""The app of the serve tests (``clew serve --app tests.helpers._serve_app:recipes``).

Its ``counted`` model recipe is the demo's scripted model, slowed down so a process can
be killed mid-run, and counting every call it is asked to make: one line
``<pid> <request_hash>`` appended (one ``write`` of an ``O_APPEND`` file: whole lines,
whichever process writes) to the file ``$CLEW_TEST_MODEL_CALLS`` names — a paid call.
"""

from __future__ import annotations

import os

from actors.demo import demo_model
from actors.models.protocol import ModelRequest, ModelResponse, request_hash
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


def _counted(ctx: RecipeContext) -> CountedModel:
    return CountedModel(ctx.environ["CLEW_TEST_MODEL_CALLS"], DELAY_MS)


def recipes() -> Recipes:
    """The serve tests' recipes: ``counted`` beside the built-in ``demo`` ones."""
    return Recipes(models={"counted": _counted})
