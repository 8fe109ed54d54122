"""A main run's recorded inputs: the one record a replay rebuilds the run from.

The inputs are written into the run's ``run_started`` event (its ``metadata``) before
anything else of the run happens. A replay or a resume reads them back with
:meth:`RunInputs.from_metadata` and re-executes the run from them, so they must say
everything the run depends on: the expanded prompt, the model chain names, the tool
specs (whether each tool is idempotent, its in-doubt policy), the settings, and the
team (its instructions, roles, allow-lists, settings and output schemas).

Versioning. ``inputs_version`` 1 is the form written since clew 0.1.0; it carries no
version key. A later version adds fields with defaults (so an older record decodes into
the current Struct: that is its upcast), lists them in :data:`FIELDS_SINCE` (a field of
a nested record by its dotted path, ``settings.tool_timeout_s``), and writes its number
under ``inputs_version``. A re-executed run writes its inputs back in the
version they were *recorded* in (:meth:`RunInputs.to_metadata`), so a session recorded
by an older clew still replays event for event. A new run records the *oldest* version
that holds its inputs (:meth:`RunInputs.in_oldest_version`): a run that uses nothing
added since version 1 records exactly what clew 0.1.0 recorded.

The flow. ``flow`` (since version 5) is the orchestration flow the run follows: the
events its code writes. A change that makes a run write different events (the router's
usage in ``run_ended``, the primary waiting after the workers, ``task_board`` nodes, the
plan's task name, …: flow 2; model requests recorded by reference, docs/storage.md: flow
3; a plan of no workers hands the primary the request again instead of a bare "No
workers ran.": flow 4) is a new flow; a run re-executes in the flow it was recorded in, so
a session recorded by an older clew still replays, resumes and verifies. A record
without the key is flow 1 (clew up to 0.1.x); new runs follow :data:`FLOW`, so they
record version 5 at least.

The re-drive. ``redrive`` (since version 6) names the re-drive that started the run
(``clew redrive``, :mod:`actors.runtime.redrive`): a run re-driven after an incident says
so in its own recording; any other run leaves it out and records version 5.

The history. ``history`` (since version 7) is the conversation a framework's run was
given to go on from (Pydantic AI's ``message_history``, as that framework's JSON), so a
resume or a replay hands the framework the same again. A run given none leaves it out
and records what it recorded before: a framework's run records version 6 at least (the
version current when framework runs came, :func:`actors.recording.framework_run.live_run`).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from actors.models.protocol import ModelSettings
from actors.models.tools import InDoubtPolicy, ToolRegistry, in_doubt_of
from eventlog.errors import DecodeError
from projections.references import Reference

#: The newest version this clew reads and writes.
INPUTS_VERSION: Final = 7
#: The orchestration flow new runs follow (see the module docstring); 1: before ``flow``.
FLOW: Final = 4
#: Fields added after version 1, with the version that added them. A dotted path names
#: a field of a nested record; ``[]`` a field of each item of a list.
FIELDS_SINCE: Final[dict[str, int]] = {
    "team": 2,
    "tools[].in_doubt": 2,
    "settings.max_dispatches": 2,
    "settings.tool_timeout_s": 2,
    "settings.model_timeout_s": 3,
    "settings.worker_timeout_s": 3,
    "settings.run_timeout_s": 3,
    "context": 3,
    "settings.context_budget": 3,
    "settings.instructions_file": 3,
    "settings.instructions_max_bytes": 3,
    "team.summarizer": 3,
    "settings.approval_required": 4,
    "flow": 5,
    "user_node_id": 5,
    "retry_of": 5,
    "team.checks": 5,
    "redrive": 6,
    "history": 7,
}


class RunSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Knobs of a Brain run; recorded in its ``run_started`` so a replay uses the same.

    ``in_doubt_policy`` is the run's default for a non-idempotent tool call left in
    doubt by a crash (``fail``, ``skip`` or ``retry``); a tool's own ``in_doubt``
    (``@tool(..., in_doubt=…)``) overrides it for that tool. ``max_dispatches`` bounds
    the primary's ``dispatch`` calls per main run (a team's built-in tool; 0 turns it off).
    """

    max_workers: int = 3
    max_turns: int = 8
    max_fix_iterations: int = 2
    in_doubt_policy: InDoubtPolicy = "fail"
    max_dispatches: int = 4
    #: Seconds a tool may run before it counts as failed (``tool_failed``, error type
    #: ``timeout``); a tool's own ``timeout_s`` wins; None means no limit. Since v2.
    tool_timeout_s: float | None = 300.0
    #: Seconds one model call may take before it counts as failed (``model_failed``,
    #: error type ``ModelTimeout``; the chain falls back). None: no limit. Since v3.
    model_timeout_s: float | None = None
    #: Seconds a worker may run before it is stopped (its run ends ``cancelled`` with the
    #: reason; the main run goes on as after a failed worker). None: no limit. Since v3.
    worker_timeout_s: float | None = None
    #: Seconds a main run may take before it is cancelled (``run_ended`` status
    #: ``cancelled``, source ``timeout``). None: no limit. Since v3.
    run_timeout_s: float | None = None
    #: The soft input budget: the share of a model's context window a request may fill
    #: before the conversation is compacted (docs/context.md). Since v3.
    context_budget: float = 0.8
    #: The project's instruction file, relative to the project directory, included in
    #: the worker and primary prompts; None: none. Since v3.
    instructions_file: str | None = "AGENTS.md"
    #: The most of the instruction file a prompt includes, in bytes. Since v3.
    instructions_max_bytes: int = 16 * 1024
    #: Tools whose every call waits for a person's approval (``*``: every tool). Since v4.
    approval_required: list[str] = msgspec.field(default_factory=list)


class ToolRecord(msgspec.Struct, frozen=True, kw_only=True):
    """What a run recorded of one tool: its spec as the model saw it, crash behaviour."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)
    idempotent: bool = False
    #: The tool's own in-doubt policy (since version 2); None: the run's.
    in_doubt: InDoubtPolicy | None = None


class RoleRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One role of a recorded team, resolved (``extends`` applied).

    Its model chain is under the role's name in :attr:`RunInputs.models`.
    """

    name: str
    description: str = ""
    instructions: str = ""
    #: The role's tool allow-list, sorted (the specs are in :attr:`RunInputs.tools`).
    tools: list[str] = msgspec.field(default_factory=list)
    settings: ModelSettings = msgspec.field(default_factory=ModelSettings)
    #: The JSON schema a reply must match; None: free-form.
    output: dict[str, Any] | None = None
    #: The role it was derived from (for the reader; its fields are already merged in).
    extends: str | None = None


class CheckRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded check of a team (since version 5): its name and, for a command, the
    command (None: a Python callable, which a resume needs the team for)."""

    name: str
    command: str | None = None


class TeamRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A recorded team (since version 2); a run without one used the default team."""

    instructions: str = ""
    #: The catalogue, in the team's order; empty: open roles (the router names them).
    roles: list[RoleRecord] = msgspec.field(default_factory=list)
    primary: str | None = None
    reviewer: str | None = None
    router: RoleRecord | None = None
    #: The summariser's role, when the team sets one (since version 3).
    summarizer: RoleRecord | None = None
    #: The checks run on each answer; a failed one starts a fix (since version 5).
    checks: list[CheckRecord] = msgspec.field(default_factory=list)


class InstructionsRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The project instruction file as a run included it (its text, clipped to the budget)."""

    path: str
    text: str
    size_bytes: int
    sha256: str
    truncated: bool = False


class ContextRecord(msgspec.Struct, frozen=True, kw_only=True):
    """How a run manages its context (since version 3); see docs/context.md.

    A run recorded before it (``RunInputs.context`` None) keeps the behaviour it was
    recorded with: no token counts, no compaction, no instruction file.
    """

    #: The soft input budget, a share of the window (``RunSettings.context_budget``).
    budget: float = 0.8
    #: Context windows in tokens by model-chain key (a role, ``default``, ``router``,
    #: ``summarizer``): the chain's first model's, or the role's own override.
    windows: dict[str, int] = msgspec.field(default_factory=dict)
    #: The project instruction file included in the prompts; None: there was none.
    instructions: InstructionsRecord | None = None

    def window(self, role: str) -> int | None:
        """Return the context window of ``role``'s calls (its own, else the default's)."""
        return self.windows.get(role, self.windows.get("default"))

    def budget_for(self, role: str) -> int | None:
        """Return the input budget of ``role``'s calls in tokens; None: no window known."""
        window = self.window(role)
        return None if window is None else int(window * self.budget)


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
    #: The team (since version 2); None: the default team.
    team: TeamRecord | None = None
    #: Budgets, windows and the instruction file (since version 3); None: recorded before.
    context: ContextRecord | None = None
    #: The orchestration flow (since version 5); see the module docstring.
    flow: int = 1
    #: The user message node the run answers when it exists already (a retry, since
    #: version 5); None: the run appends ``prompt`` as a new user message.
    user_node_id: str | None = None
    #: The failed run this run retries (since version 5).
    retry_of: str | None = None
    #: The re-drive that started this run (since version 6): ``redrive_<time>_<hex>``.
    redrive: str | None = None
    #: The conversation the run went on from, as its framework's JSON (since version 7);
    #: None: the run started a conversation of its own.
    history: Any = None
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
        for path, since in FIELDS_SINCE.items():
            if since > self.inputs_version:
                _drop(out, path.split("."))
        if self.inputs_version == 1:
            del out["inputs_version"]
        return out

    def in_oldest_version(self, at_least: int = 1) -> RunInputs:
        """Return these inputs in the oldest version (``at_least`` or later) that holds
        every one of them.

        A run using nothing added since version 1 (no team, no per-tool in-doubt
        policy, default dispatch bound) records version 1: byte for byte what clew
        0.1.0 recorded.
        """
        for version in range(at_least, INPUTS_VERSION):
            candidate = msgspec.structs.replace(self, inputs_version=version)
            if RunInputs.from_metadata(candidate.to_metadata()) == candidate:
                return candidate
        return msgspec.structs.replace(self, inputs_version=INPUTS_VERSION)


def flow_of(metadata: dict[str, Any]) -> int:
    """Return the flow a main run's ``run_started`` metadata (or its runs row) records."""
    flow = metadata.get("flow", 1)
    return flow if isinstance(flow, int) else 1


def _drop(data: Any, path: list[str]) -> None:
    """Remove the field at ``path`` (``["tools[]", "in_doubt"]``) from builtins ``data``."""
    head, rest = path[0], path[1:]
    if head.endswith("[]"):
        items = data.get(head[:-2]) if isinstance(data, dict) else None
        for item in items or []:
            _drop(item, rest)
    elif not rest:
        if isinstance(data, dict):
            data.pop(head, None)
    elif isinstance(data, dict) and head in data:
        _drop(data[head], rest)


def tool_records(registry: ToolRegistry) -> list[ToolRecord]:
    """Return what a run records of its tools (sorted by name, like the model sees them)."""
    return [
        ToolRecord(
            name=spec.name,
            description=spec.description,
            parameters=spec.parameters,
            idempotent=t.idempotent,
            in_doubt=in_doubt_of(t),
        )
        for t, spec in registry.with_specs()
    ]
