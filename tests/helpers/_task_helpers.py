"""A synchronous test handle on a ``TaskManager`` actor: every call waits for its reply.

Production talks to the actor through its typed proxy (``TaskManagerProxy``), which
declares only what production uses; the tests exercise every message and the DAG's
queries through :class:`~actors.tasks.manager.TaskManagerHandle`.
"""

from __future__ import annotations

import os

from actors.tasks.manager import CALL_TIMEOUT, TaskManager, TaskManagerHandle
from eventlog.clock import Clock


class SyncTasks(TaskManagerHandle):
    """Start a ``TaskManager`` and call it synchronously (``tasks.ready("plan")``): the
    blocking handle clew ships, started as the tests start it."""

    def __init__(
        self, project_dir: str | os.PathLike[str], session_id: str, *, clock: Clock | None = None
    ) -> None:
        super().__init__(
            TaskManager.start(project_dir, session_id, clock=clock), timeout=CALL_TIMEOUT
        )
