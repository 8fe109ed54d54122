"""The errors of the live runtime: one module, all under ``eventlog.errors.ClewError``.

A :class:`~eventlog.errors.Refused` error means bad input or a refused request with
nothing written; the CLI maps that base to exit code 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventlog.errors import ClewError, IntegrityError, Refused, ReplayDivergence, ToolError

if TYPE_CHECKING:
    from actors.divergences import FieldDiff


class NothingToResume(Refused):
    """The session has no interrupted run."""


class SessionBusy(Refused):
    """Another live process (or runtime, or thread of this process) owns the session now."""


class TaskWalUnavailable(Refused):
    """A Task WAL the request needs is corrupt; nothing was done (the message names
    ``file:line``)."""


class UsageError(Refused):
    """Bad input to a command or API call: one sentence for the user, nothing written."""


class AmbiguousId(UsageError):
    """An id prefix matches more than one session, run, node or agent (the message lists
    the candidates)."""


class ScriptError(Refused, ValueError):
    """The script of a ``ScriptedModel`` is missing, not JSON, or not a valid script."""


class ProviderConfigError(Refused, ValueError):
    """A model spec or provider setting is unusable (unknown scheme, missing key, …).

    Raised before any request is sent; its message is one sentence a CLI can print.
    """


class PlanError(ClewError, ValueError):
    """The router's reply is not a valid plan (the message says why, in one sentence)."""


class Divergence(ReplayDivergence):
    """A re-executed run emitted something other than its recording."""

    def __init__(
        self,
        run_id: str,
        run_seq: int | None,
        expected_type: str | None,
        actual_type: str | None,
        diff: list[FieldDiff],
    ) -> None:
        self.run_id = run_id
        self.run_seq = run_seq
        self.expected_type = expected_type
        self.actual_type = actual_type
        self.diff = diff
        super().__init__(
            f"run {run_id} diverged at run_seq {run_seq}: expected {expected_type},"
            f" got {actual_type}{_first_difference(diff)}"
        )


def _first_difference(diff: list[FieldDiff]) -> str:
    """Name the first difference; a changed text by its changed lines, not its whole value."""
    if not diff:
        return ""
    # A hash only says *that* a request changed: name what changed in it first.
    diff = [d for d in diff if d.path != "request_hash"] or diff
    text = next((d for d in diff if d.lines), None)
    if text is None:
        return f"; {diff[0].path}: {diff[0].expected!r} → {diff[0].actual!r}"
    changed = [line for line in text.lines if line.startswith(("-", "+"))]
    # One line of report: the changed lines, cut at 400 characters (a prompt can be long).
    shown = " ".join(changed)
    return f"; {text.path} changed: {shown[:400]}{'…' if len(shown) > 400 else ''}"


class OutputInvalid(ClewError):
    """A role's reply did not match its output schema, even after one retry."""


class TeamError(Refused, ValueError):
    """A team definition is unusable (unknown role, an ``extends`` cycle, …): one sentence."""


class EndOfRecording(ClewError):
    """A replay reached the end of an interrupted run's recording."""


class NothingToCancel(Refused):
    """The session has no run in progress (nor an interrupted one) to cancel."""


class NeedsResume(Refused):
    """The session has an interrupted run: it must be resumed before a new run starts."""


class SessionWaiting(NeedsResume):
    """The session's run waits for a person: decide (or answer) and resume it first."""


class NotWaiting(Refused):
    """A decision or an answer for a session whose run is not waiting for one."""


class UnknownApproval(Refused):
    """No approval request of this id waits in the session (a bad id, another session's)."""


class AlreadyDecided(Refused):
    """The approval request was decided already: a decision is recorded once."""


class InvalidEdit(UsageError):
    """Edited arguments of an approval do not fit the tool's parameters (names the field)."""


class StillWaiting(Refused):
    """A resume of a waiting session before every pending request was decided."""


class DeleteRefused(Refused):
    """``delete_session`` refused without ``force``: the session runs (a live process owns
    it), waits for a decision, or has forked sessions that read through it."""


class ProjectDirGone(Refused):
    """The project directory a session was created in (its Task WALs' home) is gone."""


class RunInterrupted(ClewError):
    """The run's environment failed (store full, I/O error, locked past the timeout, a
    Task WAL that cannot be written): the run stops as *interrupted*, nothing of the
    failure is recorded, and a resume finishes it once the cause is gone.

    An environment failure is never an outcome: recording it would make the session
    replay differently from the code that re-executes it (see
    docs/replay-and-recovery.md, "Environment failures").
    """


class RunCancelled(ClewError):
    """Control flow: the run noticed a cancellation (its ``run_cancelling`` is recorded)
    and unwinds to the Brain or worker that ends it as cancelled. Never an outcome of a
    model or a tool."""

    def __init__(self, reason: str, *, source: str, during: str = "", scope: str = "run") -> None:
        super().__init__(reason)
        self.reason = reason
        self.source = source
        self.during = during
        self.scope = scope


class RunParked(ClewError):
    """Control flow: the run recorded ``run_waiting`` and unwinds to the Brain or worker
    that leaves it open, ``waiting`` for a person. ``pending`` holds what it waits for
    (the :class:`~actors.orchestration.approvals.PendingApproval` requests)."""

    def __init__(self, reason: str, pending: list[Any] | None = None, question: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.pending: list[Any] = list(pending or [])
        self.question = question


class CallCancelled(ClewError):
    """A model or tool call's run was cancelled while the call ran (it may still run)."""


class CallTimedOut(ClewError):
    """A model or tool call did not return within its timeout (it may still run)."""


class Unencodable(ClewError, ValueError):
    """A value cannot be stored in the log (a lone surrogate, an object JSON cannot hold,
    nesting deeper than the limit); the message says what and where."""


class ToolTimeout(ToolError):
    """A tool did not return within its timeout (its thread may still be running)."""

    error_type = "timeout"


class ToolAborted(ToolError):
    """A tool raised a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
    ``KeyboardInterrupt``, …); contained, and recorded with that exception's name."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


class ArchivedSession(Refused):
    """The session is archived: it stays readable, and refuses every write (a run, a
    retry, a resume, a switch of its active node)."""


class NothingToRetry(Refused):
    """The session's last main run did not fail: there is nothing to retry."""


class CopyRefused(UsageError):
    """``clew copy``: the target already holds a different session of that id (or the
    copy differs from its source)."""


class BundleRefused(Refused):
    """``clew import``: the file is not a session bundle clew can read, it was altered since
    it was written, or the target holds a different session of one of its ids."""


class NotRecorded(ClewError):
    """A rerun's tool call has no recorded result and no live tool was given."""


class McpUnavailable(Refused):
    """An MCP server could not be started, reached or listed (``actors.mcp``), or the
    ``mcp`` extra is not installed; nothing was done (the message says which and why)."""


class McpToolFailed(ToolError):
    """An MCP tool call failed: the server answered ``isError``, did not answer in time,
    or the connection broke; recorded as a ``tool_failed`` like any tool's failure."""


class DurableRunFailed(ClewError):
    """A durable framework run did not complete: interrupted (resume it), diverged, or
    waiting for a person (``outcome.pending``: decide them, then
    ``session.resume(agent=…)``). ``outcome`` is the run's ``RunOutcome``."""

    def __init__(self, message: str, outcome: Any) -> None:
        super().__init__(message)
        self.outcome = outcome


class ToolCallFailed(ClewError):
    """A tool of a framework's run raised (recorded as ``tool_failed``): the run fails."""

    def __init__(self, tool_name: str, error_type: str, message: str) -> None:
        super().__init__(f"tool {tool_name!r} failed: {error_type}: {message}")
        self.error_type = error_type


class CheckpointDamaged(IntegrityError):
    """A LangGraph thread's stored checkpoints cannot be read back as written: an event
    was changed or removed (the hash chain breaks), or a stored channel value cannot be
    rebuilt. The message names the thread, the seq or checkpoint and what is wrong."""
