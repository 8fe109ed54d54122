"""clew: an embeddable, event-sourced actor runtime for LLM agent sessions.

The public Python surface. Internal modules import their siblings directly.
"""

from actors.agent import RunSettings
from actors.brain import RunOutcome
from actors.model import Model, ModelRequest, ModelResponse, ToolSpec
from actors.recorder import Divergence, FieldDiff
from actors.replay import ReplayReport, RunDivergence
from actors.runtime import (
    FaultPlan,
    NothingToResume,
    Runtime,
    Session,
    SessionBusy,
    SessionInfo,
)
from actors.scripted import ScriptedModel, ScriptError, load_script
from actors.tools import FunctionTool, Tool, ToolRegistry, tool
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
