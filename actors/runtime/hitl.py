"""The "pause for a person" surface of ``Runtime`` and ``Session``: pending, decide,
answer, resume_waiting (mixed into both; the work is in :mod:`actors.runtime.waiting`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from actors.models.chains import ModelArg
from actors.models.tools import Tool
from actors.orchestration.approvals import Decision, PendingApproval
from actors.orchestration.hooks import Hooks
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Team
from actors.recording.inputs import RunSettings
from actors.runtime import waiting
from actors.runtime.engine import Engine
from actors.runtime.waiting import WaitState
from eventlog.events import ApprovalDecided, ClarificationAnswered

if TYPE_CHECKING:
    from actors.runtime.runtime import Runtime


class RuntimeWaits:
    """What a :class:`~actors.runtime.runtime.Runtime` offers for waiting sessions."""

    _engine: Engine

    @property
    def hooks(self) -> Hooks | None:
        """The application's hooks every new run and resume of this runtime calls."""
        hooks: Hooks | None = self._engine.hooks
        return hooks

    @hooks.setter
    def hooks(self, value: Hooks | None) -> None:
        self._engine.hooks = value

    def pending(self, session_id: str) -> list[PendingApproval]:
        """Return the tool calls of the session waiting for a decision (none: [])."""
        state = waiting.wait_state(self._engine, session_id)
        return list(state.pending) if state is not None else []

    def waiting(self, session_id: str | None = None) -> list[WaitState]:
        """Return what each waiting session waits for (one session, or every one)."""
        if session_id is None:
            return waiting.waiting_sessions(self._engine)
        state = waiting.wait_state(self._engine, session_id)
        return [state] if state is not None else []

    def decide(self, session_id: str, call_id: str, decision: Decision) -> ApprovalDecided:
        """Record ``Approve()``, ``Deny(reason)`` or ``Edit(arguments=…)`` for a pending
        tool call (from any process); then :meth:`resume` the session.

        Raises:
            NotWaiting: the session's run is not waiting.
            UnknownApproval: no request ``call_id`` waits in this session.
            AlreadyDecided: it was decided already.
            SessionBusy: another process owns the session.
            ReadOnlyStore: the runtime was opened read-only.
        """
        return waiting.decide(self._engine, session_id, call_id, decision)

    def answer(self, session_id: str, text: str) -> ClarificationAnswered:
        """Record the answer to the session's clarifying question; then :meth:`resume`.

        Raises:
            NotWaiting: the session's run does not wait for an answer.
            AlreadyDecided: it was answered already.
            UsageError: an empty answer.
        """
        return waiting.answer(self._engine, session_id, text)


class SessionWaits:
    """What a :class:`~actors.runtime.runtime.Session` offers while it waits."""

    runtime: Runtime
    id: str

    def pending(self) -> list[PendingApproval]:
        """Return this session's tool calls waiting for a decision."""
        return self.runtime.pending(self.id)

    def decide(self, call_id: str, decision: Decision) -> ApprovalDecided:
        """Record a decision on a pending tool call; see :meth:`Runtime.decide`."""
        return self.runtime.decide(self.id, call_id, decision)

    def answer(self, text: str) -> ClarificationAnswered:
        """Record the answer to this session's clarifying question."""
        return self.runtime.answer(self.id, text)

    def resume_waiting(
        self,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Continue the waiting run once everything it waits for is decided.

        Raises:
            StillWaiting: a request has no decision yet (the message lists them).
            NothingToResume: the session is not waiting.
        """
        return self.runtime.resume(self.id, model=model, tools=tools, settings=settings, team=team)
