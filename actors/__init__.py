"""clew: an embeddable, event-sourced actor runtime for LLM agent sessions.

The public Python surface. Internal modules import their siblings directly.

The rooms: ``runtime/`` (the Runtime facade, sessions, run, replay, resume, verify) ·
``orchestration/`` (the Brain, workers, the agent loop, plans and prompts) · ``tasks/``
(the task manager and a run's task board) · ``recording/`` (the recorder every run
records through, the run inputs, reading a recording back) · ``replay/`` (re-execution,
divergences, the replay report) · ``models/`` (the model and tool seams,
the scripted model, providers) · ``observe/`` (the run digest's log lines, OpenTelemetry
spans of each run) · ``cli/`` (the ``clew`` command) · ``ui/`` (``clew ui``, the web
inspector; needs ``clew[ui]``) · ``errors`` · ``divergences`` (the values a divergence is
made of) · ``demo``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from actors import moved

if TYPE_CHECKING:
    from actors.divergences import FieldDiff, RunDivergence
    from actors.errors import (
        AlreadyDecided,
        ArchivedSession,
        DeleteRefused,
        Divergence,
        NeedsResume,
        NothingToCancel,
        NothingToResume,
        NothingToRetry,
        NotWaiting,
        OutputInvalid,
        ProjectDirGone,
        ProviderConfigError,
        ScriptError,
        SessionBusy,
        SessionWaiting,
        StillWaiting,
        TeamError,
        UnknownApproval,
        UsageError,
    )
    from actors.models.protocol import (
        AsyncModel,
        AsyncStreamingModel,
        Model,
        ModelRequest,
        ModelResponse,
        ModelSettings,
        StreamingModel,
        TextDelta,
        ToolSpec,
    )
    from actors.models.scripted import ScriptedModel, load_script
    from actors.models.tools import (
        FunctionTool,
        InDoubtPolicy,
        Tool,
        ToolContext,
        ToolRegistry,
        tool,
    )
    from actors.orchestration.approvals import Approve, Decision, Deny, Edit, PendingApproval
    from actors.orchestration.checks import Check
    from actors.orchestration.hooks import Allow, Hooks
    from actors.orchestration.main_run import RunOutcome
    from actors.orchestration.team import Role, Team
    from actors.recording.inputs import RunInputs, RunSettings
    from actors.replay.calls import CallError, ModelCall
    from actors.replay.divergence import Consequences, FirstDivergence
    from actors.replay.report import LiveToolsCount, ReplayReport
    from actors.replay.request_diff import describe_request_change
    from actors.runtime.branching import RerunReport
    from actors.runtime.coord.protocol import QueuedRun
    from actors.runtime.faults import FaultPlan
    from actors.runtime.recovery import CancelReport
    from actors.runtime.runtime import Runtime
    from actors.runtime.serving import RecipeContext, Recipes, ServeReport
    from actors.runtime.session import Session
    from actors.runtime.start import RunHandle
    from actors.runtime.status import SessionInfo
    from actors.runtime.upkeep import SessionCheck, VerifyReport
    from actors.runtime.waiting import WaitState
    from eventlog.blocks import (
        ArtifactRefBlock,
        ContentBlock,
        JsonBlock,
        Message,
        TextBlock,
        ToolCallBlock,
        ToolResultBlock,
    )
    from eventlog.errors import (
        ClewError,
        DeletedSession,
        IntegrityError,
        InvalidSessionId,
        ModelError,
        Refused,
        ReplayDivergence,
        StoreError,
        TaskGraphError,
        UnknownSession,
    )
    from eventlog.events import Usage
    from eventlog.packets import (
        AgentTaskContext,
        BrainTaskContext,
        ContextRef,
        HandoffPacket,
        TaskProgress,
        WorkerResult,
    )
    from eventlog.records import StoredEvent
    from projections.costs import Price

#: Where each public name lives: ``from actors import X`` imports X's module then, not
#: every module at ``import actors`` (``clew --version`` need not load the runtime).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "actors.divergences": (
        "FieldDiff",
        "RunDivergence",
    ),
    "actors.errors": (
        "AlreadyDecided",
        "ArchivedSession",
        "DeleteRefused",
        "Divergence",
        "NeedsResume",
        "NothingToCancel",
        "NothingToResume",
        "NothingToRetry",
        "NotWaiting",
        "OutputInvalid",
        "ProjectDirGone",
        "ProviderConfigError",
        "ScriptError",
        "SessionBusy",
        "SessionWaiting",
        "StillWaiting",
        "TeamError",
        "UnknownApproval",
        "UsageError",
    ),
    "actors.models.protocol": (
        "AsyncModel",
        "AsyncStreamingModel",
        "Model",
        "ModelRequest",
        "ModelResponse",
        "ModelSettings",
        "StreamingModel",
        "TextDelta",
        "ToolSpec",
    ),
    "actors.models.scripted": (
        "ScriptedModel",
        "load_script",
    ),
    "actors.models.tools": (
        "FunctionTool",
        "InDoubtPolicy",
        "Tool",
        "ToolContext",
        "ToolRegistry",
        "tool",
    ),
    "actors.orchestration.approvals": (
        "Approve",
        "Decision",
        "Deny",
        "Edit",
        "PendingApproval",
    ),
    "actors.orchestration.checks": ("Check",),
    "actors.orchestration.hooks": (
        "Allow",
        "Hooks",
    ),
    "actors.orchestration.main_run": ("RunOutcome",),
    "actors.orchestration.team": (
        "Role",
        "Team",
    ),
    "actors.recording.inputs": (
        "RunInputs",
        "RunSettings",
    ),
    "actors.replay.calls": (
        "CallError",
        "ModelCall",
    ),
    "actors.replay.divergence": (
        "Consequences",
        "FirstDivergence",
    ),
    "actors.replay.report": (
        "LiveToolsCount",
        "ReplayReport",
    ),
    "actors.replay.request_diff": ("describe_request_change",),
    "actors.runtime.branching": ("RerunReport",),
    "actors.runtime.coord.protocol": ("QueuedRun",),
    "actors.runtime.faults": ("FaultPlan",),
    "actors.runtime.recovery": ("CancelReport",),
    "actors.runtime.runtime": ("Runtime",),
    "actors.runtime.serving": (
        "RecipeContext",
        "Recipes",
        "ServeReport",
    ),
    "actors.runtime.session": ("Session",),
    "actors.runtime.start": ("RunHandle",),
    "actors.runtime.status": ("SessionInfo",),
    "actors.runtime.upkeep": (
        "SessionCheck",
        "VerifyReport",
    ),
    "actors.runtime.waiting": ("WaitState",),
    "eventlog.blocks": (
        "ArtifactRefBlock",
        "ContentBlock",
        "JsonBlock",
        "Message",
        "TextBlock",
        "ToolCallBlock",
        "ToolResultBlock",
    ),
    "eventlog.errors": (
        "ClewError",
        "DeletedSession",
        "IntegrityError",
        "InvalidSessionId",
        "ModelError",
        "Refused",
        "ReplayDivergence",
        "StoreError",
        "TaskGraphError",
        "UnknownSession",
    ),
    "eventlog.events": ("Usage",),
    "eventlog.packets": (
        "AgentTaskContext",
        "BrainTaskContext",
        "ContextRef",
        "HandoffPacket",
        "TaskProgress",
        "WorkerResult",
    ),
    "eventlog.records": ("StoredEvent",),
    "projections.costs": ("Price",),
}

_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "AgentTaskContext",
    "Allow",
    "AlreadyDecided",
    "Approve",
    "ArchivedSession",
    "ArtifactRefBlock",
    "AsyncModel",
    "AsyncStreamingModel",
    "BrainTaskContext",
    "CallError",
    "CancelReport",
    "Check",
    "ClewError",
    "Consequences",
    "ContentBlock",
    "ContextRef",
    "Decision",
    "DeleteRefused",
    "DeletedSession",
    "Deny",
    "Divergence",
    "Edit",
    "FaultPlan",
    "FieldDiff",
    "FirstDivergence",
    "FunctionTool",
    "HandoffPacket",
    "Hooks",
    "InDoubtPolicy",
    "IntegrityError",
    "InvalidSessionId",
    "JsonBlock",
    "LiveToolsCount",
    "Message",
    "Model",
    "ModelCall",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "NeedsResume",
    "NotWaiting",
    "NothingToCancel",
    "NothingToResume",
    "NothingToRetry",
    "OutputInvalid",
    "PendingApproval",
    "Price",
    "ProjectDirGone",
    "ProviderConfigError",
    "QueuedRun",
    "RecipeContext",
    "Recipes",
    "Refused",
    "ReplayDivergence",
    "ReplayReport",
    "RerunReport",
    "Role",
    "RunDivergence",
    "RunHandle",
    "RunInputs",
    "RunOutcome",
    "RunSettings",
    "Runtime",
    "ScriptError",
    "ScriptedModel",
    "ServeReport",
    "Session",
    "SessionBusy",
    "SessionCheck",
    "SessionInfo",
    "SessionWaiting",
    "StillWaiting",
    "StoreError",
    "StoredEvent",
    "StreamingModel",
    "TaskGraphError",
    "TaskProgress",
    "Team",
    "TeamError",
    "TextBlock",
    "TextDelta",
    "Tool",
    "ToolCallBlock",
    "ToolContext",
    "ToolRegistry",
    "ToolResultBlock",
    "ToolSpec",
    "UnknownApproval",
    "UnknownSession",
    "Usage",
    "UsageError",
    "VerifyReport",
    "WaitState",
    "WorkerResult",
    "describe_request_change",
    "load_script",
    "tool",
]


def __getattr__(name: str) -> Any:
    """Import the module that holds the public name ``name`` and return it (PEP 562)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'actors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup finds it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


moved.install()  # old import paths of earlier releases keep working (docs/compatibility.md)
