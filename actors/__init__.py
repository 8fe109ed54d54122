"""clew: an embeddable, event-sourced actor runtime for LLM agent sessions.

The public Python surface. Internal modules import their siblings directly.
"""

from actors.errors import Divergence, NothingToResume, ScriptError, SessionBusy
from actors.models.protocol import Model, ModelRequest, ModelResponse, ToolSpec
from actors.models.scripted import ScriptedModel, load_script
from actors.models.tools import FunctionTool, Tool, ToolRegistry, tool
from actors.orchestration.main_run import RunOutcome
from actors.replay.diff import FieldDiff
from actors.replay.inputs import RunSettings
from actors.replay.report import ReplayReport, RunDivergence
from actors.runtime.faults import FaultPlan
from actors.runtime.runtime import Runtime, Session, SessionInfo
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
    ReplayDivergence,
    StoreError,
    TaskGraphError,
    UnknownSession,
)
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
    "ArtifactRefBlock",
    "BrainTaskContext",
    "ClewError",
    "ContentBlock",
    "ContextRef",
    "Divergence",
    "FaultPlan",
    "FieldDiff",
    "FunctionTool",
    "HandoffPacket",
    "IntegrityError",
    "InvalidSessionId",
    "JsonBlock",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "NothingToResume",
    "ReplayDivergence",
    "ReplayReport",
    "RunDivergence",
    "RunOutcome",
    "RunSettings",
    "Runtime",
    "ScriptError",
    "ScriptedModel",
    "Session",
    "SessionBusy",
    "SessionInfo",
    "StoreError",
    "TaskGraphError",
    "TaskProgress",
    "TextBlock",
    "Tool",
    "ToolCallBlock",
    "ToolRegistry",
    "ToolResultBlock",
    "ToolSpec",
    "UnknownSession",
    "WorkerResult",
    "load_script",
    "tool",
]
