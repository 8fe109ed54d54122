"""``Session``: a handle on one session of a :class:`~actors.runtime.runtime.Runtime`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING

from actors.models.chains import ModelArg
from actors.models.tools import Tool
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Team
from actors.recording.inputs import RunSettings
from actors.runtime import aio
from actors.runtime.cancelling import CancelReport
from actors.runtime.handle import RunHandle, StreamItem
from actors.runtime.hitl import SessionWaits
from actors.runtime.status import SessionInfo

if TYPE_CHECKING:
    from actors.runtime.runtime import Runtime


class Session(SessionWaits):
    """A handle on one session of a :class:`Runtime`."""

    def __init__(self, runtime: Runtime, session_id: str) -> None:
        self.runtime = runtime
        self.id = session_id

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    def info(self) -> SessionInfo:
        """Return this session's summary line."""
        return self.runtime.info(self.runtime.store.read_session(self.id))

    def run(
        self,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Run one main run (route → workers → primary → review) and return its outcome.

        Args:
            model: the model chain(s) (``default`` for every role without its own).
            tools: tools every role may call (with the default team: every agent).
            team: the roles, their instructions, allow-lists, models and typed output;
                None: the default team (the router names roles, every role every tool).

        Raises:
            UsageError: the prompt is empty or not valid text (nothing is written).
            TeamError: the team is unusable (an ``extends`` cycle, an unknown role …).
            ProjectDirGone: the session's project directory no longer exists.
            NeedsResume: the session has an interrupted run.
            SessionBusy: a live process owns the session.
        """
        return self.runtime.run(
            self.id, prompt, model=model, tools=tools, settings=settings, team=team
        )

    def start(
        self,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunHandle:
        """Start one main run and return its :class:`RunHandle` at once: ``stream()`` its
        events and text, ``result()`` to await the :class:`RunOutcome`, ``cancel()``.

        Takes the same arguments as :meth:`run` and raises the same errors, at once,
        before anything is written.
        """
        return self.runtime.start(
            self.id, prompt, model=model, tools=tools, settings=settings, team=team
        )

    async def arun(
        self,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Run one main run and return its outcome, without blocking the event loop.

        Same arguments and errors as :meth:`run` (raised before anything is written).
        Async models run on this loop. Cancelling the awaiting task cancels the run
        (recorded) before the ``CancelledError`` goes on.
        """
        return await aio.arun(
            self.runtime, self.id, prompt, model=model, tools=tools, settings=settings, team=team
        )

    def astream(
        self,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> AsyncGenerator[StreamItem, None]:
        """Start one main run and ``async``-iterate what :meth:`RunHandle.stream` yields:
        every committed event of the run in ``seq`` order, with the ``TextDelta`` pieces.

        Same arguments and errors as :meth:`run` (raised at the first iteration). Async
        models run on this loop. The run belongs to the iteration: cancelling the task,
        or closing the iterator before the run ended, cancels the run (recorded) and
        waits for its end; a run that raised raises here, at the end.
        """
        return aio.astream_run(
            self.runtime, self.id, prompt, model=model, tools=tools, settings=settings, team=team
        )

    def cancel(self, reason: str = "cancelled") -> CancelReport:
        """Cancel this session's run in progress; see :meth:`Runtime.cancel`."""
        return self.runtime.cancel(self.id, reason)

    def retry(
        self,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Retry the failed last run: a new attempt (``run_started.attempt`` + 1) that
        answers the same user message again, under it (docs/runtime.md, "Retry").

        ``model``/``tools``/``team`` as for :meth:`run` (no team: the recorded one).

        Raises:
            NothingToRetry: the last run did not fail (or there is none).
            NeedsResume: the session has an interrupted run.
            ArchivedSession: the session is archived.
            SessionBusy: a live process owns the session.
        """
        return self.runtime.retry(self.id, model=model, tools=tools, settings=settings, team=team)

    def archive(self, reason: str = "") -> bool:
        """Archive the session: it stays readable and refuses every write from now on.

        Returns False when it was archived already (nothing written).

        Raises:
            NeedsResume: the session has an interrupted run.
            SessionBusy: a live process owns the session.
        """
        return self.runtime.archive(self.id, reason)
