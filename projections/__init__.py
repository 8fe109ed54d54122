"""Pure folds over clew events: node tree, boards, timeline, usage, a run's todos, context.

Every projection has a ``fold(state, stored_event) -> state`` and a ``rebuild(events)``
with ``rebuild(all) == fold after each event``. Nothing here writes or starts an actor;
the only I/O is reading ``@path`` files in :mod:`projections.references` and the store
readers ``verify`` is handed.
"""

from projections.boards import INTERRUPTED, LIVE_RUN_STATUSES, Boards, Liveness
from projections.context import build_context, compaction_start
from projections.errors import BranchRefused, UnknownNode
from projections.rebuild import SessionState, fold, rebuild
from projections.references import (
    MAX_FILE_BYTES,
    ExpandedPrompt,
    FileReference,
    MissingReference,
    Reference,
    SessionReference,
    expand_references,
)
from projections.snapshot import (
    FIELD_MAX_BYTES,
    SNAPSHOT_MAX_BYTES,
    SessionSnapshot,
    clip_utf8,
    format_snapshot,
    session_snapshot,
)
from projections.timeline import Timeline
from projections.todos import RunTodos, render_board, render_plan
from projections.tree import (
    NodeTree,
    check_branch_point,
    check_branch_target,
    check_switch_target,
)
from projections.usage import Totals, UsageTotals
from projections.verify import Difference, ProjectionCheck, diff_rows, usage_differences, verify

__all__ = [
    "FIELD_MAX_BYTES",
    "INTERRUPTED",
    "LIVE_RUN_STATUSES",
    "MAX_FILE_BYTES",
    "SNAPSHOT_MAX_BYTES",
    "Boards",
    "BranchRefused",
    "Difference",
    "ExpandedPrompt",
    "FileReference",
    "Liveness",
    "MissingReference",
    "NodeTree",
    "ProjectionCheck",
    "Reference",
    "RunTodos",
    "SessionReference",
    "SessionSnapshot",
    "SessionState",
    "Timeline",
    "Totals",
    "UnknownNode",
    "UsageTotals",
    "build_context",
    "check_branch_point",
    "check_branch_target",
    "check_switch_target",
    "clip_utf8",
    "compaction_start",
    "diff_rows",
    "expand_references",
    "fold",
    "format_snapshot",
    "rebuild",
    "render_board",
    "render_plan",
    "session_snapshot",
    "usage_differences",
    "verify",
]
