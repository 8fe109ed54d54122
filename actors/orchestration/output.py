"""Typed output: a role's reply validated against a pydantic model (its JSON schema).

A role with ``output=Model`` must end with a JSON reply that validates. The verdict
is written into the reply's own node (``metadata``: ``{"output": "valid"}`` or
``{"output_error": "<one sentence>"}``), so it is part of the record: a replay with
the real model class re-validates and compares; a replay without it (stand-ins, the
CLI) takes the recorded verdict — the schema alone is recorded, never the class.
An invalid reply is fed back to the model once; a second invalid reply fails the
worker (or the primary) with :class:`~actors.errors.OutputInvalid`.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic

from actors.errors import PlanError
from actors.orchestration.plan import json_payload
from actors.recording.recorder import RunRecorder
from eventlog.blocks import ContentBlock
from eventlog.events import NodeAppended

VALID = "valid"
#: Node metadata keys carrying a reply's verdict.
OUTPUT_KEY = "output"
ERROR_KEY = "output_error"


class OutputSpec:
    """What a role's reply must be: a JSON schema, and the model that checks it.

    ``model`` is None for a stand-in rebuilt from a recording: it never validates, it
    reads the recorded verdict (see the module docstring).
    """

    def __init__(self, schema: dict[str, Any], model: type[pydantic.BaseModel] | None) -> None:
        self.schema = schema
        self.model = model

    @classmethod
    def of(cls, model: type[pydantic.BaseModel]) -> OutputSpec:
        """Return the spec of replies validated by ``model``."""
        return cls(model.model_json_schema(), model)

    def instruction(self) -> str:
        """Return what the model is told about the reply it must give."""
        schema = json.dumps(self.schema, sort_keys=True, ensure_ascii=False)
        return (
            "Reply with only a JSON value (no prose around it) matching this JSON schema:\n"
            f"```json\n{schema}\n```"
        )

    def check(self, content: list[ContentBlock], rec: RunRecorder) -> str | None:
        """Return why ``content`` is not a valid reply (one sentence), or None if it is."""
        if self.model is None:
            return _recorded_verdict(rec)
        try:
            self.model.model_validate(json_payload(content))
        except PlanError as e:
            return f"the reply is not JSON: {e}"
        except pydantic.ValidationError as e:
            first = e.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(value)"
            return f"invalid output at {loc}: {first['msg']}"
        return None

    def value(self, content: list[ContentBlock]) -> Any:
        """Return the validated reply: a model instance (the JSON data for a stand-in)."""
        data = json_payload(content)
        return data if self.model is None else self.model.model_validate(data)


def verdict_metadata(error: str | None) -> dict[str, Any]:
    """Return the node metadata recording a reply's verdict."""
    return {OUTPUT_KEY: VALID} if error is None else {ERROR_KEY: error}


def feedback(error: str) -> str:
    """Return the message that gives an invalid reply back to the model, once."""
    return (
        f"Your reply does not match the required output: {error}. Reply again with only"
        " the JSON value the schema asks for."
    )


def _recorded_verdict(rec: RunRecorder) -> str | None:
    """The verdict recorded in the reply's node, the next node of the recording."""
    node = rec.next_recorded(NodeAppended)
    if node is None:
        return None  # the recording ends here: nothing is compared any more
    error = node.node.metadata.get(ERROR_KEY)
    return str(error) if error is not None else None
