"""The one error hierarchy of clew: every failure a user can see is a ``ClewError``."""

from __future__ import annotations


class ClewError(Exception):
    """Root of every error clew raises on purpose."""


class InvalidSessionId(ClewError, ValueError):
    """A session id from outside does not match ``^[a-zA-Z0-9_]+$`` (or is too long)."""


class InvalidName(ClewError, ValueError):
    """A caller-chosen name (a Task WAL name, an artifact name) is unsafe as a path."""


class StoreError(ClewError):
    """The event store failed: the translated form of an apsw / OS error."""


class UnknownSession(StoreError):
    """The session id is well formed but no such session exists in the store."""


class IntegrityError(ClewError):
    """Stored history is inconsistent (dangling parent, duplicate id, cycle, …)."""


class DecodeError(ClewError):
    """A stored payload cannot be decoded (unknown tag, bad version, bad shape)."""


class TaskGraphError(ClewError):
    """A task DAG operation was refused (illegal transition, cycle, unknown task)."""


class TaskWalError(ClewError):
    """A Task WAL file is corrupt or cannot be written."""


class ReplayDivergence(ClewError):
    """Re-executing a recorded session produced an event different from the recording."""


class ModelError(ClewError):
    """A model call failed (provider error, timeout, malformed body)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        #: Recorded in ``model_failed``; a replay re-raises with the recorded name.
        self.error_type = error_type or type(self).__name__


class ToolError(ClewError):
    """A tool call failed; becomes an ``is_error`` tool_result, never a crash."""
