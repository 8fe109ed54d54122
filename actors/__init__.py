"""clew: an embeddable, event-sourced actor runtime for LLM agent sessions.

The public Python surface. Internal modules import their siblings directly.

The rooms: ``runtime/`` (the Runtime facade, sessions, run, replay, resume, verify) ·
``orchestration/`` (the Brain, workers, the agent loop, plans and prompts) · ``tasks/``
(the task manager and a run's task board) · ``replay/`` (the recorder, divergences,
reading a recording, the recorded run inputs) · ``models/`` (the model and tool seams,
the scripted model, providers) · ``cli/`` (the ``clew`` command) · ``errors`` · ``demo``.
"""

from actors.errors import (
    ArchivedSession,
    Divergence,
    NeedsResume,
    NothingToResume,
    NothingToRetry,
    OutputInvalid,
    ProjectDirGone,
    ProviderConfigError,
    ScriptError,
    SessionBusy,
    TeamError,
    UsageError,
)
from actors.models.protocol import Model, ModelRequest, ModelResponse, ModelSettings, ToolSpec
from actors.models.scripted import ScriptedModel, load_script
from actors.models.tools import (
    FunctionTool,
    InDoubtPolicy,
    Tool,
    ToolContext,
    ToolRegistry,
    tool,
)
from actors.orchestration.checks import Check
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Role, Team
from actors.replay.diff import FieldDiff
from actors.replay.inputs import RunInputs, RunSettings
from actors.replay.report import ReplayReport, RunDivergence
from actors.runtime.faults import FaultPlan
from actors.runtime.runtime import Runtime, Session, SessionInfo
from actors.runtime.verify import SessionCheck, VerifyReport
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

__all__ = [
    "AgentTaskContext",
    "ArchivedSession",
    "ArtifactRefBlock",
    "BrainTaskContext",
    "Check",
    "ClewError",
    "ContentBlock",
    "ContextRef",
    "Divergence",
    "FaultPlan",
    "FieldDiff",
    "FunctionTool",
    "HandoffPacket",
    "InDoubtPolicy",
    "IntegrityError",
    "InvalidSessionId",
    "JsonBlock",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "NeedsResume",
    "NothingToResume",
    "NothingToRetry",
    "OutputInvalid",
    "ProjectDirGone",
    "ProviderConfigError",
    "Refused",
    "ReplayDivergence",
    "ReplayReport",
    "Role",
    "RunDivergence",
    "RunInputs",
    "RunOutcome",
    "RunSettings",
    "Runtime",
    "ScriptError",
    "ScriptedModel",
    "Session",
    "SessionBusy",
    "SessionCheck",
    "SessionInfo",
    "StoreError",
    "TaskGraphError",
    "TaskProgress",
    "Team",
    "TeamError",
    "TextBlock",
    "Tool",
    "ToolCallBlock",
    "ToolContext",
    "ToolRegistry",
    "ToolResultBlock",
    "ToolSpec",
    "UnknownSession",
    "Usage",
    "UsageError",
    "VerifyReport",
    "WorkerResult",
    "load_script",
    "tool",
]
