"""A main run's recorded inputs: the one record a replay rebuilds the run from.

The inputs are written into the run's ``run_started`` event (its ``metadata``) before
anything else of the run happens. A replay or a resume reads them back with
:meth:`RunInputs.from_metadata` and re-executes the run from them, so they must say
everything the run depends on: the expanded prompt, the model chain names, the tool
specs (and whether each tool is idempotent), the settings.

Versioning. ``inputs_version`` 1 is the form written since clew 0.1.0; it carries no
version key. A later version adds fields with defaults (so an older record decodes into
the current Struct: that is its upcast), lists them in :data:`FIELDS_SINCE` (a field of
a nested record by its dotted path, ``settings.tool_timeout_s``), and writes its number
under ``inputs_version``. A re-executed run writes its inputs back in the
version they were *recorded* in (:meth:`RunInputs.to_metadata`), so a session recorded
by an older clew still replays event for event.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from actors.models.tools import ToolRegistry
from actors.replay.recorder import InDoubtPolicy
from eventlog.errors import DecodeError
from projections.references import Reference

#: The version new runs record.
INPUTS_VERSION: Final = 2
#: Fields added after version 1 (dotted for a nested record), with the version that
#: added them.
FIELDS_SINCE: Final[dict[str, int]] = {"settings.tool_timeout_s": 2}


class RunSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Knobs of a Brain run; recorded in its ``run_started`` so a replay uses the same."""

    max_workers: int = 3
    max_turns: int = 8
    max_fix_iterations: int = 2
    in_doubt_policy: InDoubtPolicy = "fail"
    #: Seconds a tool may run before it counts as failed (``tool_failed``, error type
    #: ``timeout``); a tool's own ``timeout_s`` wins; None means no limit. Since v2.
    tool_timeout_s: float | None = 300.0


class ToolRecord(msgspec.Struct, frozen=True, kw_only=True):
    """What a run recorded of one tool: its spec as the model saw it, and idempotency."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)
    idempotent: bool = False


class RunInputs(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a main run is built from; see the module docstring for versioning."""

    #: The user's request with its ``@path`` / ``@@session`` references expanded.
    prompt: str
    #: The request as the caller wrote it.
    raw_prompt: str = ""
    #: True for the session's first main run: it creates the Brain agent.
    create_agent: bool = False
    references: list[Reference] = msgspec.field(default_factory=list)
    #: Model chain names by role (``default`` is the fallback chain).
    models: dict[str, list[str]] = msgspec.field(default_factory=dict)
    tools: list[ToolRecord] = msgspec.field(default_factory=list)
    settings: RunSettings = msgspec.field(default_factory=RunSettings)
    inputs_version: int = INPUTS_VERSION

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> RunInputs:
        """Decode (and so upcast) the inputs recorded in a ``run_started``'s metadata.

        Raises:
            DecodeError: the metadata is not the inputs of a main run.
        """
        data = dict(metadata)
        data.setdefault("inputs_version", 1)
        try:
            inputs = msgspec.convert(data, cls)
        except msgspec.ValidationError as e:
            raise DecodeError(f"run_started holds no valid run inputs: {e}") from e
        if inputs.inputs_version > INPUTS_VERSION:
            raise DecodeError(
                f"run inputs version {inputs.inputs_version} is newer than this clew"
                f" ({INPUTS_VERSION})"
            )
        return inputs

    def to_metadata(self) -> dict[str, Any]:
        """Return the ``run_started`` metadata, in the version these inputs were recorded in."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        for name, since in FIELDS_SINCE.items():
            if since > self.inputs_version:
                *parents, leaf = name.split(".")
                record = out
                for parent in parents:
                    record = record[parent]
                record.pop(leaf, None)
        if self.inputs_version == 1:
            del out["inputs_version"]
        return out


def tool_records(registry: ToolRegistry) -> list[ToolRecord]:
    """Return what a run records of its tools (sorted by name, like the model sees them)."""
    return [
        ToolRecord(
            name=spec.name,
            description=spec.description,
            parameters=spec.parameters,
            idempotent=t.idempotent,
        )
        for t, spec in registry.with_specs()
    ]
