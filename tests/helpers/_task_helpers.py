"""A synchronous test handle on a ``TaskManager`` actor: every call waits for its reply.

Production talks to the actor through its typed proxy (``TaskManagerProxy``), which
declares only what production uses; the tests also exercise the actor's queries, so
this forwards any method and waits for the future.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from actors.tasks.manager import CALL_TIMEOUT, TaskManager
from eventlog.clock import Clock


class SyncTasks:
    """Start a ``TaskManager`` and call it synchronously (``tasks.ready("plan")``)."""

    def __init__(
        self, project_dir: str | os.PathLike[str], session_id: str, *, clock: Clock | None = None
    ) -> None:
        self.ref = TaskManager.start(project_dir, session_id, clock=clock)
        self._proxy = self.ref.proxy()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._proxy, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs).get(timeout=CALL_TIMEOUT)

        return call

    def stop(self) -> None:
        if self.ref.is_alive():
            self.ref.stop(timeout=CALL_TIMEOUT)

    def __enter__(self) -> SyncTasks:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
