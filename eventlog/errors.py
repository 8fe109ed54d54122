"""The error tree of clew's durable layer, and its root.

Every error clew raises on purpose is a :class:`ClewError`. Errors that mean "bad input
or a refused request" — the caller asked for something that cannot be done, and nothing
was written — also derive from :class:`Refused`; the CLI maps exactly that base to exit
code 2, so a new refusal needs no entry in any list. The upper layers add their own
errors in one module each (``projections/errors.py``, ``actors/errors.py``), all under
this root.
"""

from __future__ import annotations

import os


class ClewError(Exception):
    """Root of every error clew raises on purpose."""


class Refused(ClewError):
    """Bad input or a refused request: nothing was written (the CLI exits 2)."""


class InvalidSessionId(Refused, ValueError):
    """A session id from outside does not match ``^[a-zA-Z0-9_]+$`` (or is too long)."""


class InvalidName(Refused, ValueError):
    """A caller-chosen name (a Task WAL name, an artifact name) is unsafe as a path."""


class UnsafeFile(Refused):
    """A file clew would read or write is not a plain regular file it may use.

    A symlink where none may be (a Task WAL, a directory above it), a FIFO or a device, or
    a file over its size limit: refused before anything is read, cut or written.
    """


class StoreError(ClewError):
    """The event store failed: the translated form of an apsw / OS error."""


class UnknownSession(Refused, StoreError):
    """The session id is well formed but no such session exists in the store."""


class DeletedSession(UnknownSession):
    """The session id names a session that was deleted (``clew delete``): the message says
    when, from the store's ``deleted_sessions`` audit table."""


class ReadOnlyStore(Refused, StoreError):
    """A write was asked of a store or runtime opened read-only, or of a PostgreSQL role
    the server does not let write: nothing was written."""


class IntegrityError(ClewError):
    """Stored history is inconsistent (dangling parent, duplicate id, cycle, a broken hash
    chain, a stored value that is not valid UTF-8, …)."""


class DecodeError(ClewError):
    """A stored payload cannot be decoded (unknown tag, bad version, bad shape)."""


class TaskGraphError(ClewError):
    """A task DAG operation was refused (illegal transition, cycle, unknown task)."""


class TaskWalError(ClewError):
    """A Task WAL file is corrupt or cannot be written."""


class TaskWalCorrupt(TaskWalError):
    """A committed line of a Task WAL is bad: the WAL is unavailable.

    ``str(error)`` starts with ``file:line``; the parts are kept as attributes so a
    report can show them without parsing the message.
    """

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason

    def __reduce__(self) -> tuple[type[TaskWalCorrupt], tuple[str, int, str]]:
        return (type(self), (self.path, self.line, self.reason))


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


# --- echoing what the caller gave -------------------------------------------------------------

#: How many characters of a caller-supplied value (a session id, a path, a spec, a flag's
#: value) an error message echoes: enough to recognise it, never a 100 kB argument pasted
#: back into a one-line error.
ECHO_LIMIT = 200


def _text(value: object) -> str:
    if isinstance(value, str | os.PathLike):
        return str(os.fspath(value))
    return repr(value)


def clipped(value: object, limit: int = ECHO_LIMIT) -> str:
    """Return ``value`` (a str or path as is, anything else as its repr), cut to ``limit``
    characters with the length said: ``clipped("x" * 5000)`` is 200 ``x``, then
    ``… (5,000 characters)``."""
    text = _text(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def quoted(value: object, limit: int = ECHO_LIMIT) -> str:
    """Return ``repr()`` of a caller-supplied value's text, cut like :func:`clipped`.

    The cut is made on the repr, so escapes (``\\udcff`` is 6 characters) count too.
    """
    text = _text(value)
    shown = repr(text)
    if len(shown) <= limit + 2:
        return shown
    return f"{shown[: limit + 1]}…{shown[0]} ({len(text):,} characters)"
