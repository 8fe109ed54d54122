"""Reading a session's recording back: events by run, and stand-ins for models and tools.

A re-executed run gets its inputs (prompt, model chain names, tool specs, settings)
from its ``run_started`` (:class:`~actors.recording.inputs.RunInputs`); models and tools
that a replay must never call are replaced by stand-ins carrying the recorded names
and specs.
"""

from __future__ import annotations

from typing import Any

import pydantic

from actors.models.protocol import Model, ModelRequest, ModelResponse, ToolSpec
from actors.models.tools import InDoubtPolicy, ToolRegistry
from actors.recording.inputs import RunInputs
from eventlog.errors import ClewError, ModelError
from eventlog.events import RunStarted
from eventlog.ids import is_main_run
from eventlog.records import StoredEvent
from eventlog.store import EventStore


class RecordedModel:
    """A stand-in for a model in a replay: it has the recorded name and is never called."""

    def __init__(self, name: str) -> None:
        self.name = name

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError(f"replay: model {self.name} has no recorded response for this call")


class RecordedTool:
    """A stand-in for a tool in a replay: the recorded spec; never executed."""

    def __init__(
        self, spec: ToolSpec, idempotent: bool, in_doubt: InDoubtPolicy | None = None
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.description = spec.description
        self.args_model: type[pydantic.BaseModel] = pydantic.create_model(
            f"Recorded_{spec.name}", __config__=pydantic.ConfigDict(extra="allow")
        )
        self.idempotent = idempotent
        self.in_doubt = in_doubt

    def call(self, args: Any) -> Any:
        raise ClewError(f"replay: tool {self.name} is never executed")


def run_started_of(events: list[StoredEvent]) -> RunStarted:
    """Return the ``run_started`` event of one run's events."""
    for e in events:
        if isinstance(e.event, RunStarted):
            return e.event
    raise ClewError("a main run without run_started")  # pragma: no cover - _recording finds one


def read_recording(store: EventStore, sid: str) -> tuple[dict[str, list[StoredEvent]], list[str]]:
    """Return the session's events by run, and its main runs in order."""
    by_run: dict[str, list[StoredEvent]] = {}
    mains: list[str] = []
    for ev in store.iter_events(sid):
        if ev.run_id is None:
            continue
        by_run.setdefault(ev.run_id, []).append(ev)
        if isinstance(ev.event, RunStarted) and is_main_run(sid, ev.event.agent_id):
            mains.append(ev.run_id)
    return by_run, mains


def recorded_models(inputs: RunInputs) -> dict[str, list[Model]]:
    """Return stand-ins for the recorded model chains."""
    return {role: [RecordedModel(n) for n in chain] for role, chain in inputs.models.items()}


def recorded_tools(inputs: RunInputs) -> ToolRegistry:
    """Return stand-ins for the recorded tools (same specs and idempotent flags)."""
    reg = ToolRegistry()
    for t in inputs.tools:
        spec = ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
        reg.add(RecordedTool(spec, t.idempotent, t.in_doubt))
    return reg


def recorded_specs(inputs: RunInputs) -> dict[str, ToolSpec]:
    """Return the recorded tool specs by name (what the model was told of each tool)."""
    return {
        t.name: ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
        for t in inputs.tools
    }


def session_tools(store: EventStore, sid: str) -> dict[str, RecordedTool]:
    """Return stand-ins for every tool the session's main runs recorded, by name."""
    out: dict[str, RecordedTool] = {}
    by_run, mains = read_recording(store, sid)
    for run_id in mains:
        inputs = RunInputs.from_metadata(run_started_of(by_run[run_id]).metadata)
        for t, _ in recorded_tools(inputs).with_specs():
            if isinstance(t, RecordedTool):
                out[t.name] = t
    return out
