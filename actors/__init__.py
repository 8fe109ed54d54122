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

from actors import moved
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

moved.install()  # old import paths of earlier releases keep working (docs/compatibility.md)
