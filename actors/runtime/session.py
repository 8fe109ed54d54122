"""``Session``: one session of an open home, and every verb that acts on it.

A :class:`Session` carries out its own verbs against the home's
:class:`~actors.runtime.engine.Engine` — run, resume, retry, cancel, decide, fork, rerun,
archive, delete, replay, verify, follow — each applying the operation of its room
(:mod:`~actors.runtime.start`, :mod:`~actors.runtime.recovery`,
:mod:`~actors.runtime.waiting`, :mod:`~actors.runtime.branching`,
:mod:`~actors.runtime.upkeep`, :mod:`~actors.runtime.replayer`,
:mod:`~actors.runtime.status`). :class:`~actors.runtime.runtime.Runtime` opens the home
and finds sessions; its ``rt.resume(session_id, …)`` and friends are aliases of these.

Building a ``Session`` reads nothing: ``Runtime.session(id)`` checks the id and reads its
row first; each verb checks what it needs itself (a bad or unknown id raises
``InvalidSessionId`` / ``UnknownSession`` from the verb, a deleted one ``DeletedSession``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.errors import UsageError
from actors.runtime import status
from actors.runtime.coord.ownership import SessionLock
from actors.runtime.engine import Engine, session_dir, task_wals
from actors.runtime.status import SessionInfo, Stop
from eventlog.ids import validate_session_id

if TYPE_CHECKING:
    from actors.models.chains import ModelArg
    from actors.models.tools import Tool
    from actors.orchestration.approvals import Decision, PendingApproval
    from actors.orchestration.brain import RunKind
    from actors.orchestration.main_run import RunOutcome
    from actors.orchestration.team import Team
    from actors.recording.inputs import RunSettings
    from actors.replay.calls import ModelCall
    from actors.replay.report import ReplayReport
    from actors.runtime.branching import RerunReport
    from actors.runtime.recovery import CancelReport, ResumePlan
    from actors.runtime.start import RunHandle, StreamItem
    from actors.runtime.upkeep import VerifyReport
    from actors.runtime.waiting import WaitState
    from actors.tasks.manager import TaskManagerProxy
    from eventlog.events import ApprovalDecided, ClarificationAnswered
    from eventlog.records import StoredEvent
    from eventlog.store import SessionDeletion
    from eventlog.wals import TaskWals


class Session:
    """One session of an open clew home (``rt.new_session()``, ``rt.session(id)``)."""

    def __init__(self, engine: Engine, session_id: str) -> None:
        self._engine = engine
        #: The session's id.
        self.id = session_id

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    def info(self) -> SessionInfo:
        """Return this session's summary line (its status derived from its runs)."""
        return status.info(self._engine, self._engine.store.read_session(self.id))

    # --- a new main run -------------------------------------------------------------------

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
        from actors.runtime import start
        from actors.runtime.config import RunConfig

        config = RunConfig(model=model, tools=tools, settings=settings, team=team)
        return start.start_run(self._engine, self.id, prompt, config, watch=False).result()

    def start(
        self,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
        watch: bool = True,
    ) -> RunHandle:
        """Start one main run and return its :class:`RunHandle` at once: ``stream()`` its
        events and text, ``result()`` to await the :class:`RunOutcome`, ``cancel()``.

        Takes the same arguments as :meth:`run` and raises the same errors, at once,
        before anything is written. ``watch=False``: no ``stream()`` (what ``run`` uses).
        """
        from actors.runtime import start
        from actors.runtime.config import RunConfig

        config = RunConfig(model=model, tools=tools, settings=settings, team=team)
        return start.start_run(self._engine, self.id, prompt, config, watch=watch)

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
        from actors.runtime import start
        from actors.runtime.config import RunConfig

        config = RunConfig(model=model, tools=tools, settings=settings, team=team)
        return await start.arun(self._engine, self.id, prompt, config)

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
        from actors.runtime import start
        from actors.runtime.config import RunConfig

        config = RunConfig(model=model, tools=tools, settings=settings, team=team)
        return start.astream_run(self._engine, self.id, prompt, config)

    # --- recovery -------------------------------------------------------------------------

    def resume_ready(self) -> ResumePlan:
        """Do everything a resume needs before re-executing: check, read, replay the WAL.

        Raises:
            NothingToResume: no interrupted run.
            SessionBusy: a live process owns the session.
            ReadOnlyStore: the runtime was opened read-only.
        """
        from actors.runtime import recovery

        return recovery.resume_ready(self._engine, self.id)

    def resume(
        self,
        *,
        model: ModelArg | None = None,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        plan: ResumePlan | None = None,
        team: Team | None = None,
        from_divergence: bool = False,
        agent: RunKind | None = None,
    ) -> RunOutcome:
        """Finish the session's interrupted main run: re-execute it to the end of its log,
        then go on live (a recorded model reply is never requested again).

        ``team``: the run's team (without it the recorded team is rebuilt over ``tools``;
        a team with typed output must be given). ``plan``: what :meth:`resume_ready`
        returned (default: read now). ``from_divergence``: when today's code diverges
        from the recording, keep the recorded prefix up to that point, record
        ``resumed_past_divergence`` there and go on live (else the resume is refused).
        ``agent``: the framework's agent of a run it made (``actors.pydantic_ai``); it
        brings its own model and tools. ``model`` is needed otherwise.

        Raises:
            UsageError: neither ``model`` nor ``agent``.
            NothingToResume: no interrupted run.
            SessionBusy: a live process owns the session.
            ReplayDivergence: today's code does not reproduce the recording.
        """
        from actors.runtime import recovery
        from actors.runtime.config import RunConfig

        if model is None and agent is None:
            raise UsageError("resume needs the run's model (model=…) or its agent (agent=…)")
        plan = plan or recovery.resume_ready(self._engine, self.id)
        config = RunConfig(
            model=() if model is None else model, tools=tools, settings=settings, team=team
        )
        return recovery.resume(
            self._engine, plan, config, from_divergence=from_divergence, kind=agent
        )

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
        return self.resume(model=model, tools=tools, settings=settings, team=team)

    def retry(
        self,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
        redrive: str | None = None,
    ) -> RunOutcome:
        """Retry the failed last run: a new attempt (``run_started.attempt`` + 1) that
        answers the same user message again, under it (docs/runtime.md, "Retry").

        ``model``/``tools``/``team`` as for :meth:`run` (no team: the recorded one).
        ``redrive``: the id of the re-drive retrying it, recorded in the new run's inputs
        (``clew redrive`` gives it; docs/ci.md).

        Raises:
            NothingToRetry: the last run did not fail (or there is none).
            NeedsResume: the session has an interrupted run.
            ArchivedSession: the session is archived.
            SessionBusy: a live process owns the session.
        """
        from actors.runtime import recovery
        from actors.runtime.config import RunConfig

        config = RunConfig(model=model, tools=tools, settings=settings, team=team, redrive=redrive)
        return recovery.retry_session(self._engine, self.id, config)

    def cancel(self, reason: str = "cancelled") -> CancelReport:
        """Cancel the session's run in progress — in this process, in the process that
        owns the session (it notices within a second), or left interrupted by a crash
        (then recorded as cancelled at once, without asking any model).

        Raises:
            InvalidSessionId, UnknownSession: bad or unknown session.
            NothingToCancel: no run of the session is in progress or interrupted.
            ReadOnlyStore: the runtime was opened read-only.
        """
        from actors.runtime import recovery

        return recovery.cancel_session(self._engine, self.id, reason)

    # --- waiting for a person -------------------------------------------------------------

    def waiting(self) -> WaitState | None:
        """Return what the session's waiting run waits for; None when it does not wait.

        Raises:
            InvalidSessionId, UnknownSession: bad or unknown session.
        """
        from actors.runtime import waiting

        return waiting.wait_state(self._engine, self.id)

    def pending(self) -> list[PendingApproval]:
        """Return the tool calls of the session waiting for a decision (none: [])."""
        from actors.runtime import waiting

        state = waiting.wait_state(self._engine, self.id)
        return list(state.pending) if state is not None else []

    def decide(self, call_id: str, decision: Decision) -> ApprovalDecided:
        """Record ``Approve()``, ``Deny(reason)`` or ``Edit(arguments=…)`` for a pending
        tool call (from any process); then :meth:`resume` the session.

        Raises:
            NotWaiting: the session's run is not waiting.
            UnknownApproval: no request ``call_id`` waits in this session.
            AlreadyDecided: it was decided already.
            SessionBusy: another process owns the session.
            ReadOnlyStore: the runtime was opened read-only.
        """
        from actors.runtime import waiting

        return waiting.decide(self._engine, self.id, call_id, decision)

    def answer(self, text: str) -> ClarificationAnswered:
        """Record the answer to the session's clarifying question; then :meth:`resume`.

        Raises:
            NotWaiting: the session's run does not wait for an answer.
            AlreadyDecided: it was answered already.
            UsageError: an empty answer.
        """
        from actors.runtime import waiting

        return waiting.answer(self._engine, self.id, text)

    # --- branching (docs/replay-and-recovery.md#fork-rerun-and-diff) ----------------------

    def fork(self, at: str | None = None, title: str | None = None) -> Session:
        """Create a session whose history is this one's path root → ``at`` (default: its
        active node), recorded with ``parent_session_id`` and ``fork_from_node_id``.

        Raises:
            InvalidSessionId, UnknownSession: bad or unknown session.
            UnknownNode: ``at`` is not a node of the session.
            ReadOnlyStore: the runtime was opened read-only.
        """
        from actors.runtime import branching

        sid = validate_session_id(self.id)
        node = at if at is not None else self._engine.store.read_session(sid).active_node_id
        return Session(self._engine, branching.fork_session(self._engine, sid, node, title=title))

    def rerun(
        self,
        *,
        run: str | None = None,
        models: Mapping[str, ModelArg | str] | None = None,
        tool_results: Mapping[str, Any] | None = None,
        instructions: Mapping[str, str] | None = None,
        prompt: str | None = None,
        model: ModelArg | None = None,
        tools: Sequence[Tool] | None = None,
        title: str | None = None,
        team: Team | None = None,
    ) -> RerunReport:
        """Fork the session where ``run`` (default: its last main run) started and
        re-execute the run there with the changes (docs/replay-and-recovery.md): a role's
        chain (``models``), tool results by call id, a role's ``instructions``, the
        ``prompt``. Unchanged model calls are served from the recording; the rest are
        asked live (``model`` supplies the recorded chain's models by name; ``tools`` the
        live tools; ``team`` the output models of a team with typed output).

        Raises:
            UsageError: no such run, an unknown role or tool call id, a bad prompt, a
                typed team and no ``team``.
        """
        from actors.runtime import branching
        from actors.runtime.branching import Changes

        changes = Changes(models=models or {}, tool_results=tool_results or {},
                          instructions=instructions or {}, prompt=prompt)  # fmt: skip
        return branching.rerun(self._engine, self.id, run=run, changes=changes,
                               model=model, tools=tools, title=title, team=team)  # fmt: skip

    def model_calls(self, run: str | None = None) -> list[ModelCall]:
        """Return the session's model calls in order (of ``run`` and its workers: a run id,
        full), each with the request as sent rebuilt from the recording, the reply, usage,
        latency, and whether its rebuilt request hashes to the recorded one
        (:mod:`actors.replay.calls`).
        """
        from actors.replay.calls import model_calls

        return model_calls(self._engine.store, validate_session_id(self.id), run)

    def switch_node(self, node_id: str) -> str | None:
        """Move the session's active node to ``node_id``; return the previous one.

        The next run's user message starts a new branch there (seed 004: a new branch
        starts only at a user message), so the node must be one of the session's own
        conversation where a user message may follow. Nothing is deleted.

        Raises:
            UnknownNode: no such node in the session.
            BranchRefused: a worker's node, or an assistant turn waiting for tool results.
            ArchivedSession: the session is archived.
            SessionBusy: a live process owns the session.
        """
        from actors.runtime import branching

        return branching.switch_node(self._engine, self.id, node_id)

    # --- upkeep ---------------------------------------------------------------------------

    def archive(self, reason: str = "") -> bool:
        """Archive the session: it stays readable and refuses every write from now on.

        Returns False when it was archived already (nothing written).

        Raises:
            NeedsResume: the session has an interrupted run.
            SessionBusy: a live process owns the session.
        """
        from actors.runtime import upkeep

        return upkeep.archive_session(self._engine, self.id, reason)

    def delete(self, force: bool = False) -> SessionDeletion:
        """Delete the session for good (docs/runtime.md, "Delete a session").

        Raises:
            DeleteRefused: it runs, waits or has forks, and not ``force``.
            DeletedSession, UnknownSession: deleted already, or no such session.
        """
        from actors.runtime import upkeep

        return upkeep.delete_session(self._engine, self.id, force=force)

    def verify(self, *, progress: Callable[[int, int], None] | None = None) -> VerifyReport:
        """Verify the session: rebuild its projections from its events and compare them
        with the stored rows, and replay every Task WAL of the session (read-only).

        Raises:
            InvalidSessionId, UnknownSession: a bad or unknown session.
        """
        from actors.runtime import upkeep

        return upkeep.verify(self._engine, self.id, progress=progress)

    def replay(
        self,
        *,
        model: ModelArg | None = None,
        tools: Sequence[Tool] | None = None,
        progress: Callable[[int, int], None] | None = None,
        team: Team | None = None,
        live_tools: bool = False,
        agent: RunKind | None = None,
    ) -> ReplayReport:
        """Re-execute every recorded main run of the session against its recording.

        Nothing is written to the recorded session: model replies and tool results
        come from the recording, the Task WAL is rebuilt in a scratch directory
        that is thrown away. ``model``/``tools``/``team`` default to stand-ins with the
        recorded ones (pass today's to check they still match). ``live_tools``: run the
        idempotent ``tools`` again and compare their outputs (docs/replay-and-recovery.md).
        ``agent``: the framework's agent that re-executes the runs it made.
        """
        from actors.runtime import replayer

        return replayer.replay_session(
            self._engine, self.id, model=model, tools=tools, team=team, progress=progress,
            live_tools=live_tools, kind=agent,
        )  # fmt: skip

    # --- what it is now -------------------------------------------------------------------

    def follow(
        self,
        since_seq: int = 0,
        *,
        poll_s: float = 0.2,
        stop: Stop | None = None,
        until_idle: bool = False,
    ) -> Iterator[StoredEvent]:
        """Yield the session's committed events with ``seq > since_seq`` as they land,
        whichever process writes them (this one, or another on the same home).

        Each poll is one indexed range read; while nothing is new it sleeps ``poll_s``.
        It ends once ``stop`` (a ``threading.Event``, or a function) says so, or with
        ``until_idle`` once the session has no run in progress — after yielding what was
        committed by then. Without either it follows until the caller stops iterating.

        Raises:
            InvalidSessionId, UnknownSession: at the call, not at the first event.
            UsageError: ``since_seq`` < 0 or ``poll_s`` <= 0.
        """
        return status.follow(
            self._engine, self.id, since_seq, poll_s=poll_s, stop=stop, until_idle=until_idle
        )

    def main_runs(self) -> list[str]:
        """Return the session's main (Brain) runs in start order."""
        return status.main_runs(self._engine, self.id)

    def wal_names(self) -> list[str]:
        """Return the Task WAL name of each main run, in run order (``<name>.wal.jsonl``
        under ``session_dir()/.clew/tasks/<id>/``)."""
        return status.wal_names(self._engine, self.id)

    def interrupted_runs(self) -> list[str]:
        """Runs the store says are running/pending while no live process owns the session."""
        return status.interrupted_runs(self._engine, self.id)

    def session_dir(self) -> Path:
        """Return the session's project directory (where its Task WALs live).

        The directory the session was created in, whatever this runtime's
        ``project_dir``: ``run``, ``resume``, ``verify`` and ``clew tasks`` all use it.

        Raises:
            UnknownSession: no such session.
            ProjectDirGone: that directory no longer exists.
        """
        return session_dir(self._engine, self.id)

    def task_wals(self) -> TaskWals:
        """Where the session's Task WALs live: the PostgreSQL store's ``task_wal`` table,
        or the files under :meth:`session_dir` (``ProjectDirGone`` if it is gone)."""
        return task_wals(self._engine, self.id)

    def task_manager(self) -> TaskManagerProxy:
        """Return the session's task manager actor (one per session, started lazily;
        stopped when the runtime releases the session — after each run — since another
        process may write its Task WALs next: ask for it again then)."""
        return self._engine.task_manager(self.id)

    # --- ownership ------------------------------------------------------------------------

    def lock(self) -> SessionLock:
        """Take the session's owner lock (``SessionBusy`` if another process holds it)."""
        return self._engine.own(self.id)

    def unlock(self) -> None:
        """Release the session's owner lock if this runtime holds it."""
        self._engine.release(self.id)

    def is_owned(self) -> bool:
        """True when a live process (this one included) holds the session's owner lock."""
        return self._engine.is_owned(self.id)
