"""The errors of the live runtime: one module, all under ``eventlog.errors.ClewError``.

A :class:`~eventlog.errors.Refused` error means bad input or a refused request with
nothing written; the CLI maps that base to exit code 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog.errors import ClewError, Refused, ReplayDivergence

if TYPE_CHECKING:
    from actors.replay.diff import FieldDiff


class NothingToResume(Refused):
    """The session has no interrupted run."""


class SessionBusy(Refused):
    """Another live process (or runtime) owns the session right now."""


class TaskWalUnavailable(Refused):
    """A Task WAL the request needs is corrupt; nothing was done (the message names
    ``file:line``)."""


class UsageError(Refused):
    """Bad input to a command or API call: one sentence for the user, nothing written."""


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
        first = f"; {diff[0].path}: {diff[0].expected!r} → {diff[0].actual!r}" if diff else ""
        super().__init__(
            f"run {run_id} diverged at run_seq {run_seq}: expected {expected_type},"
            f" got {actual_type}{first}"
        )


class EndOfRecording(ClewError):
    """A replay reached the end of an interrupted run's recording."""


class NeedsResume(Refused):
    """The session has an interrupted run: it must be resumed before a new run starts."""
