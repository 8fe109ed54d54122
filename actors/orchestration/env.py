"""What a session's actors may use: the environment the Runtime builds, one per session."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.errors import UsageError
from actors.models.calls import CancelScope
from actors.models.protocol import Model, TextDelta
from actors.models.tools import ToolRegistry
from actors.orchestration.roster import Roster, default_roster
from actors.orchestration.session_memo import SessionMemo
from actors.recording.inputs import FLOW, ContextRecord, RunSettings
from actors.recording.recorder import RunRecorder
from actors.replay.log import ReplayLog
from actors.replay.options import ReplayOptions
from actors.replay.requests import ContentIndex
from eventlog.clock import Clock
from eventlog.ids import brain_agent_id
from eventlog.records import StoredEvent
from eventlog.store import EventStore
from eventlog.wals import TaskWals
from eventlog.writer import Writer


@dataclass
class SessionEnv:
    """Everything a session's actors may use. Built by the Runtime, one per session."""

    session_id: str
    store: EventStore
    writer: Writer | None
    clock: Clock
    models: Mapping[str, Sequence[Model]]
    #: Every tool of the run (the union of the roles' allow-lists).
    tools: ToolRegistry
    project_dir: Path
    settings: RunSettings = field(default_factory=RunSettings)
    #: Recorded events by run id; None for a plain live run.
    recording: Mapping[str, list[StoredEvent]] | None = None
    live_allowed: bool = True
    replay_log: ReplayLog | None = None
    before_tool: Callable[[], None] | None = None
    artifact_threshold: int = 16 * 1024
    #: The run's team; None: the default team over ``tools``.
    roster: Roster | None = None
    #: The main run's cancellation (each worker's scope is a child of it).
    cancel: CancelScope = field(default_factory=CancelScope)
    #: Who gets the text of streaming models as it arrives; None: nobody watches, and
    #: models are asked with ``complete`` (read at each call: a watcher may come late).
    on_delta: Callable[[TextDelta], None] | None = None
    #: The run's recorded context record (windows, budget, instruction file); None for a
    #: run recorded before clew managed context (docs/context.md). Set by the main run.
    context: ContextRecord | None = None
    #: The application's hooks (:class:`~actors.orchestration.hooks.Hooks`); None: none.
    #: Typed ``Any``: the hooks module builds on this one.
    hooks: Any = None
    #: Where the session's Task WALs live when not in files (a PostgreSQL store's table).
    task_wals: TaskWals | None = None
    #: The orchestration flow of the main run (its recorded ``RunInputs.flow``).
    flow: int = FLOW
    #: How a replay or resume treats the recording (live tools, past a divergence).
    replay_options: ReplayOptions | None = None
    #: Live runs commit their events in groups (RunRecorder); False: one commit per event.
    group_commits: bool = True
    #: What the session's main runs keep between runs (the Engine's, for a live run or
    #: a resume); None: a run builds its context and hashes from nothing.
    memo: SessionMemo | None = None

    def __post_init__(self) -> None:
        self.team: Roster = self.roster or default_roster(self.tools)
        #: The texts (system prompts, tool specs) the session's log already holds.
        self.contents = ContentIndex(self.store, self.session_id)

    def recorder(
        self, agent_id: str, run_id: str, cancel: CancelScope | None = None
    ) -> RunRecorder:
        """Return the recorder of ``run_id`` (fed with its recording, if any), obeying
        ``cancel`` (default: the main run's scope)."""
        recorded = self.recording.get(run_id) if self.recording is not None else None
        if self.replay_log is not None:
            self.replay_log.started(run_id)
        return RunRecorder(
            session_id=self.session_id,
            agent_id=agent_id,
            run_id=run_id,
            writer=self.writer,
            clock=self.clock,
            recorded=list(recorded) if recorded else None,
            live_allowed=self.live_allowed,
            artifact_threshold=self.artifact_threshold,
            before_tool=self.before_tool,
            abort=self.replay_log.abort if self.replay_log is not None else None,
            cancel=cancel or self.cancel,
            options=self.replay_options,
            group_commits=self.group_commits,
            shared_hash=(
                self.memo.request_hash
                if self.memo is not None and agent_id == brain_agent_id(self.session_id)
                else None
            ),
        )

    def chain(self, role: str) -> Sequence[Model]:
        """Return the fallback chain of models for ``role`` (else the ``default`` chain)."""
        chain = self.models.get(role) or self.models.get("default")
        if not chain:
            raise UsageError(f"no model configured for role {role!r} and no default model")
        return chain
