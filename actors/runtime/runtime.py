"""The ``Runtime`` facade: open a home, create sessions, run, replay, resume, verify.

Environment variables are read here, once (``Runtime.from_env``), never deeper. The
operations live in their own modules (``runs``, ``replayer``, ``resume``, ``verify``)
as functions over the home's :class:`~actors.runtime.engine.Engine`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from actors.errors import Unencodable, UsageError
from actors.models.chains import ModelArg
from actors.models.storable import check_storable
from actors.models.tools import Tool
from actors.orchestration.main_run import RunOutcome
from actors.orchestration.team import Team
from actors.replay.inputs import RunSettings
from actors.replay.report import ReplayReport
from actors.runtime import replayer, retry, runs
from actors.runtime import resume as resuming
from actors.runtime import verify as verifying
from actors.runtime.archive import archive_session, refuse_if_archived
from actors.runtime.engine import Engine
from actors.runtime.faults import FaultPlan
from actors.runtime.locks import SessionLock
from actors.runtime.resume import ResumePlan
from actors.runtime.verify import VerifyReport
from actors.tasks.manager import TaskManagerProxy
from eventlog.clock import Clock
from eventlog.events import ActiveNodeSwitched, SessionCreated
from eventlog.ids import IdSource, brain_agent_id, validate_session_id
from eventlog.records import AppendRequest, SessionRow
from eventlog.sqlite import Durability
from eventlog.store import EventStore
from eventlog.writer import Writer
from projections.tree import NodeTree, check_branch_target

#: Fresh session ids to try before giving up: 20 collisions of a 16-bit suffix in one
#: second do not happen by chance.
_SESSION_ID_TRIES = 20


def home_from_env(env: Mapping[str, str], home: str | os.PathLike[str] | None = None) -> Path:
    """Return ``home`` if given, else ``$CLEW_HOME``, else ``~/.clew``."""
    return Path(home or env.get("CLEW_HOME") or "~/.clew").expanduser()


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One line of ``Runtime.sessions()``."""

    session_id: str
    status: str
    created_at: str
    updated_at: str
    interrupted: bool
    runs: int
    events: int
    active_node_id: str | None


class Runtime:
    """An open clew home: the store, the writer, task managers, and the session API."""

    def __init__(
        self,
        home: Path | str,
        project_dir: Path | str | None = None,
        *,
        durability: Durability = "normal",
        clock: Clock | None = None,
        ids: IdSource | None = None,
        settings: RunSettings | None = None,
        fault: FaultPlan | None = None,
        environ: Mapping[str, str] | None = None,
        read_only: bool = False,
    ) -> None:
        """Open (creating if needed) the clew home ``home``.

        Args:
            project_dir: where Task WALs live (``<project>/.clew/tasks``); default: cwd.
            durability: ``normal`` survives a process crash, ``full`` a power loss.
            fault: crash-test seam (see :class:`FaultPlan`).
            environ: where a role's model spec (``openai:…``) finds its provider keys;
                default: the process environment.
            read_only: open an existing home for reading only (it works on a read-only
                mount): no writer is started, nothing is created or migrated, and every
                write — a session, a run, a resume, a switch, a lock — raises
                ``ReadOnlyStore``. Reading, ``replay`` and ``verify`` work.

        Raises:
            StoreError: the home cannot be opened (read-only: there is no store in it,
                or its schema cannot be read without migrating it).
        """
        self._engine = Engine(
            Path(home).expanduser(),
            Path(project_dir) if project_dir is not None else Path.cwd(),
            durability=durability,
            clock=clock,
            ids=ids,
            settings=settings,
            fault=fault,
            environ=environ,
            read_only=read_only,
        )
        engine = self._engine
        #: The clew home directory.
        self.home: Path = engine.home
        #: Where the Task WALs live (``<project>/.clew/tasks``).
        self.project_dir: Path = engine.project_dir
        #: The event store: read it freely; write through :attr:`writer` only.
        self.store: EventStore = engine.store
        #: The single writer of the store.
        self.writer: Writer = engine.writer
        #: The clock every recorded timestamp comes from.
        self.clock: Clock = engine.clock
        #: The source of fresh session ids.
        self.ids: IdSource = engine.ids
        #: The default settings of a run.
        self.settings: RunSettings = engine.settings

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        home: str | None = None,
        project_dir: str | None = None,
        **kwargs: Any,
    ) -> Runtime:
        """Open the home named by ``home`` / ``$CLEW_HOME`` / ``~/.clew``; read fault env vars.

        Raises:
            UsageError: a fault variable is not a positive whole number.
        """
        env = os.environ if env is None else env
        fault = FaultPlan.from_env(env)
        kwargs.setdefault("environ", env)
        return cls(home_from_env(env, home), project_dir, fault=fault, **kwargs)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every actor, flush and close the writer, release session locks."""
        self._engine.close()

    # --- sessions ------------------------------------------------------------------------

    def new_session(
        self, *, cwd: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Session:
        """Create a session (``session_created``) and return it.

        Args:
            cwd: the session's project directory (default: this runtime's
                ``project_dir``); its Task WALs live there (see :meth:`session_dir`).

        Raises:
            UsageError: ``metadata`` or ``cwd`` cannot be stored (nothing is written).
        """
        cwd = str(Path(cwd).absolute()) if cwd else str(self.project_dir)
        try:
            check_storable({"cwd": cwd, "metadata": metadata or {}}, "the session's metadata")
        except Unencodable as e:
            raise UsageError(str(e)) from None
        self._engine.refuse_if_read_only("creating a session")
        now = self.clock.now()
        for _ in range(_SESSION_ID_TRIES):
            sid = self.ids.new_session_id(now)
            if not self.store.session_exists(sid):
                break
        else:  # pragma: no cover - see _SESSION_ID_TRIES
            raise UsageError("could not allocate a fresh session id")
        self.writer.append(
            AppendRequest(
                session_id=sid,
                event=SessionCreated(
                    session_id=sid,
                    cwd=cwd,
                    root_agent_id=brain_agent_id(sid),
                    metadata=metadata or {},
                ),
                created_at=now,
            )
        )
        return Session(self, sid)

    def session(self, session_id: str) -> Session:
        """Return an existing session (validated; ``UnknownSession`` if absent)."""
        sid = validate_session_id(session_id)
        self.store.read_session(sid)
        return Session(self, sid)

    def sessions(self) -> list[SessionInfo]:
        """Return every session with its run/event counts and interruption flag."""
        return [self.info(row) for row in self.store.list_sessions()]

    def info(self, row: SessionRow) -> SessionInfo:
        """Return the summary line of the session whose row is ``row``."""
        return SessionInfo(
            session_id=row.session_id,
            status=row.status,
            created_at=row.created_at,
            updated_at=row.updated_at,
            interrupted=bool(self.interrupted_runs(row.session_id)),
            runs=len(self.store.read_runs(row.session_id)),
            events=self.store.count_events(row.session_id),
            active_node_id=row.active_node_id,
        )

    def lock(self, session_id: str) -> SessionLock:
        """Take the session's owner lock (``SessionBusy`` if another process holds it)."""
        return self._engine.lock(session_id)

    def unlock(self, session_id: str) -> None:
        """Release the session's owner lock if this runtime holds it."""
        self._engine.unlock(session_id)

    def is_owned(self, session_id: str) -> bool:
        """True when a live process (this one included) holds the session's owner lock."""
        return self._engine.is_owned(session_id)

    def main_runs(self, session_id: str) -> list[str]:
        """Return the session's main (Brain) runs in start order."""
        return self._engine.main_runs(session_id)

    def wal_names(self, session_id: str) -> list[str]:
        """Return the Task WAL name of each main run, in run order (``<name>.wal.jsonl``
        under ``session_dir(id)/.clew/tasks/<id>/``)."""
        return self._engine.wal_names(session_id)

    def interrupted_runs(self, session_id: str) -> list[str]:
        """Runs the store says are running/pending while no live process owns the session."""
        return self._engine.interrupted_runs(session_id)

    def switch_node(self, session_id: str, node_id: str) -> str | None:
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
        sid = validate_session_id(session_id)
        self._engine.refuse_if_read_only(f"switching the active node of {sid}")
        row = self.store.read_session(sid)
        refuse_if_archived(row, "switching its active node")
        self.lock(sid)
        try:
            tree = NodeTree.from_rows(self.store.read_nodes(sid), row.active_node_id)
            check_branch_target(tree, node_id, row.root_agent_id)
            self.writer.append(
                AppendRequest(
                    session_id=sid,
                    event=ActiveNodeSwitched(from_node_id=row.active_node_id, to_node_id=node_id),
                    created_at=self.clock.now(),
                )
            )
        finally:
            self.unlock(sid)
        return row.active_node_id

    def archive(self, session_id: str, reason: str = "") -> bool:
        """Archive the session (``session_archived``); see :meth:`Session.archive`."""
        return archive_session(self._engine, session_id, reason)

    def session_dir(self, session_id: str) -> Path:
        """Return the session's project directory (where its Task WALs live).

        The directory the session was created in, whatever this runtime's
        ``project_dir``: ``run``, ``resume``, ``verify`` and ``clew tasks`` all use it.

        Raises:
            UnknownSession: no such session.
            ProjectDirGone: that directory no longer exists.
        """
        return self._engine.session_dir(session_id)

    def task_manager(self, session_id: str) -> TaskManagerProxy:
        """Return the session's task manager actor (one per session, started lazily)."""
        return self._engine.task_manager(session_id)

    # --- replay, resume, verify ------------------------------------------------------------

    def replay(
        self,
        session_id: str,
        *,
        model: ModelArg | None = None,
        tools: Sequence[Tool] | None = None,
        progress: Callable[[int, int], None] | None = None,
        team: Team | None = None,
    ) -> ReplayReport:
        """Re-execute every recorded main run of the session against its recording.

        Nothing is written to the recorded session: model replies and tool results
        come from the recording, the Task WAL is rebuilt in a scratch directory
        that is thrown away. ``model``/``tools``/``team`` default to stand-ins with the
        recorded names, specs and team (pass today's tools or team to check they still
        match: a changed role instruction diverges with a diff of the text).
        """
        return replayer.replay_session(
            self._engine, session_id, model=model, tools=tools, team=team, progress=progress
        )

    def resume_ready(self, session_id: str) -> ResumePlan:
        """Do everything a resume needs before re-executing: check, read, replay the WAL.

        Raises:
            NothingToResume: no interrupted run.
            SessionBusy: a live process owns the session.
            ReadOnlyStore: the runtime was opened read-only.
        """
        self._engine.refuse_if_read_only("resuming a session")
        return resuming.resume_ready(self._engine, session_id)

    def resume(
        self,
        session_id: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        plan: ResumePlan | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Finish the session's interrupted main run: re-execute it to the end of its log,
        then go on live (a recorded model reply is never requested again).

        ``team``: the run's team (without it the recorded team is rebuilt over ``tools``;
        a team with typed output must be given).

        Raises:
            NothingToResume: no interrupted run.
            SessionBusy: a live process owns the session.
            ReplayDivergence: today's code does not reproduce the recording.
        """
        plan = plan or self.resume_ready(session_id)
        return resuming.resume(
            self._engine, plan, model=model, tools=tools, settings=settings, team=team
        )

    def verify(
        self,
        session_id: str | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> VerifyReport:
        """Verify one session, or every session of the home when ``session_id`` is None.

        Rebuilds each session's projections from its events and compares them with the
        stored rows, and replays every Task WAL of the session (read-only).

        Raises:
            InvalidSessionId, UnknownSession: ``session_id`` is given and bad or unknown.
        """
        return verifying.verify(self._engine, session_id, progress=progress)

    def retry(
        self,
        session_id: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Retry the session's failed last run; see :meth:`Session.retry`."""
        return retry.retry_session(
            self._engine, session_id, model=model, tools=tools, settings=settings, team=team
        )

    def run(
        self,
        session_id: str,
        prompt: str,
        *,
        model: ModelArg,
        tools: Sequence[Tool] = (),
        settings: RunSettings | None = None,
        team: Team | None = None,
    ) -> RunOutcome:
        """Run one main run of ``session_id``; see :meth:`Session.run`."""
        self._engine.refuse_if_read_only("running a session")
        return runs.run_session(
            self._engine,
            session_id,
            prompt,
            model=model,
            tools=tools,
            settings=settings,
            team=team,
        )


class Session:
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
