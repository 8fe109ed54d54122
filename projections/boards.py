"""Status boards: the session, agent, run and artifact rows, folded from events.

The board mirrors exactly what the store materialises in the global tables (see
:mod:`eventlog.sqlite.materialise`), so :mod:`projections.verify` can compare it
with them. The rules, one per event type:

- ``session_created``: status ``active``, no active node, created_at = updated_at.
- every event: ``sessions.updated_at`` = created_at of the session's last event.
- ``node_appended`` with ``activate`` / ``active_node_switched``: the active node.
- ``session_archived``: status ``archived``.
- ``agent_created``: status ``idle``, metadata ``{"role", "purpose", **metadata}``;
  a second one for the same id is ignored (the store refuses the insert).
- ``agent_status_changed``: status and updated_at; ``result`` replaces the previous
  one only when it is not None (``COALESCE``). Unknown agents are ignored.
- ``run_started``: status ``running``, turn_count 0, usage/error/end_* NULL, metadata
  ``{"phase", "attempt", "rng_seed", **metadata}``.
- ``run_ended``: status, end_reason, end_node_id, turn_count, usage, error, updated_at.
- ``run_waiting`` / ``run_resumed``: status ``waiting`` / ``running``, updated_at.
- ``token_usage`` of a run not ended (``running``, ``waiting``): usage becomes its usage
  so far plus the call's (NULL counts as zero); updated_at unchanged. So a parked run's
  row shows what it has cost so far; ``run_ended`` then sets the run's own usage.
- ``artifact_created``: the first one per artifact_id wins (``INSERT OR IGNORE``);
  agent_id / run_id come from the event's envelope; metadata ``{"sha256"}``.

Liveness is not a fold's business: a run that is ``running`` or ``pending`` is shown
``interrupted`` only when the caller says its owner is not alive
(:meth:`Boards.interrupted_runs`, :meth:`Boards.run_status`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any, Final, TypeVar

import msgspec

from eventlog.events import (
    ActiveNodeSwitched,
    AgentCreated,
    AgentStatusChanged,
    ArtifactCreated,
    NodeAppended,
    RunEnded,
    RunResumed,
    RunStarted,
    RunWaiting,
    SessionCreated,
    TokenUsage,
    Usage,
)
from eventlog.records import AgentRow, ArtifactRow, RunRow, SessionRow, StoredEvent
from projections.folding import ComparedByValue, fold, fold_all

#: ``fold`` is :func:`projections.folding.fold`, exported here like every projection's.
__all__ = ["INTERRUPTED", "LIVE_RUN_STATUSES", "Boards", "Liveness", "fold", "rebuild"]

#: Statuses of a run not ended, whose usage so far each ``token_usage`` adds to.
_ACCRUING: Final = frozenset({"running", "waiting"})
#: Run statuses that mean "an owner is working on it" — interrupted if the owner is gone.
LIVE_RUN_STATUSES: Final = frozenset({"running", "pending"})
INTERRUPTED: Final = "interrupted"

R = TypeVar("R", AgentRow, RunRow)

Liveness = bool | Collection[str]
"""``True``: every owner is alive; ``False``: none is (e.g. a fresh process opening the
store); a collection: the ids of the runs whose owner is alive."""


def _is_live(run_id: str, live: Liveness) -> bool:
    if isinstance(live, bool):
        return live
    return run_id in live


class Boards(ComparedByValue):
    """The session / agent / run / artifact board of one session (mutable, owned by its folder)."""

    __slots__ = (
        "_session",
        "active_node_id",
        "agents",
        "archived",
        "artifacts",
        "runs",
        "session_id",
        "updated_at",
    )

    def __init__(self, session_id: str | None = None) -> None:
        self.session_id = session_id
        self._session: SessionRow | None = None
        self.active_node_id: str | None = None
        self.archived = False
        self.updated_at: str | None = None
        self.agents: dict[str, AgentRow] = {}
        self.runs: dict[str, RunRow] = {}
        self.artifacts: dict[str, ArtifactRow] = {}

    _COMPARED = ("session", "agents", "runs", "artifacts")

    def __repr__(self) -> str:
        return (
            f"Boards({self.session_id!r}, {len(self.agents)} agents, "
            f"{len(self.runs)} runs, {len(self.artifacts)} artifacts)"
        )

    # --- folding -------------------------------------------------------------------------

    def apply(self, stored: StoredEvent) -> None:
        """Fold one stored event into the board."""
        self.updated_at = stored.created_at
        handler = self._HANDLERS.get(stored.event_type)
        if handler is not None:
            handler(self, stored)

    def _session_created(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, SessionCreated)
        if self._session is not None:
            return  # the store refuses a second insert of the session row
        self.session_id = e.session_id
        self._session = SessionRow(
            session_id=e.session_id,
            cwd=e.cwd,
            root_agent_id=e.root_agent_id,
            active_node_id=None,
            parent_session_id=e.parent_session_id,
            status="active",
            metadata=e.metadata,
            created_at=stored.created_at,
            updated_at=stored.created_at,
        )

    def _node_appended(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, NodeAppended)
        if e.activate:
            self.active_node_id = e.node.node_id

    def _active_node_switched(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, ActiveNodeSwitched)
        self.active_node_id = e.to_node_id

    def _session_archived(self, stored: StoredEvent) -> None:
        self.archived = True

    def _agent_created(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, AgentCreated)
        if e.agent_id in self.agents:
            return
        at = stored.created_at
        self.agents[e.agent_id] = AgentRow(
            agent_id=e.agent_id,
            session_id=self.session_id or "",
            parent_agent_id=e.parent_agent_id,
            agent_type=e.agent_type,
            created_by_run_id=e.created_by_run_id,
            fork_from_node_id=e.fork_from_node_id,
            status="idle",
            result=None,
            metadata={"role": e.role, "purpose": e.purpose, **e.metadata},
            created_at=at,
            updated_at=at,
        )

    def _agent_status_changed(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, AgentStatusChanged)
        changes: dict[str, Any] = {"status": e.status}
        if e.result is not None:  # COALESCE(?, result): None keeps the previous result
            changes["result"] = e.result
        _update(self.agents, e.agent_id, stored.created_at, **changes)

    def _run_started(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, RunStarted)
        if e.run_id in self.runs:
            return
        at = stored.created_at
        self.runs[e.run_id] = RunRow(
            run_id=e.run_id,
            session_id=self.session_id or "",
            agent_id=e.agent_id,
            status="running",
            start_node_id=e.start_node_id,
            end_node_id=None,
            end_reason=None,
            turn_count=0,
            usage=None,
            error=None,
            metadata={"phase": e.phase, "attempt": e.attempt, "rng_seed": e.rng_seed, **e.metadata},
            created_at=at,
            updated_at=at,
        )

    def _run_ended(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, RunEnded)
        _update(
            self.runs,
            e.run_id,
            stored.created_at,
            status=e.status,
            end_reason=e.end_reason,
            end_node_id=e.end_node_id,
            turn_count=e.turn_count,
            usage=msgspec.structs.asdict(e.usage),
            error=e.error,
        )

    def _run_waiting(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, RunWaiting)
        _update(self.runs, e.run_id, stored.created_at, status="waiting")

    def _run_resumed(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, RunResumed)
        _update(self.runs, e.run_id, stored.created_at, status="running")

    def _token_usage(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, TokenUsage)
        row = self.runs.get(stored.run_id or "")
        if row is None or row.status not in _ACCRUING:
            return
        so_far = Usage() if row.usage is None else msgspec.convert(row.usage, Usage)
        usage = msgspec.structs.asdict(so_far.plus(e.usage))
        self.runs[row.run_id] = msgspec.structs.replace(row, usage=usage)

    def _artifact_created(self, stored: StoredEvent) -> None:
        e = stored.event
        assert isinstance(e, ArtifactCreated)
        if e.artifact_id in self.artifacts:
            return
        self.artifacts[e.artifact_id] = ArtifactRow(
            artifact_id=e.artifact_id,
            session_id=self.session_id or "",
            agent_id=stored.agent_id,
            run_id=stored.run_id,
            node_id=e.node_id,
            tool_call_id=e.tool_call_id,
            path=e.path,
            filename=e.filename,
            mime_type=e.mime_type,
            size_bytes=e.size_bytes,
            summary=e.summary,
            metadata={"sha256": e.sha256},
            created_at=stored.created_at,
        )

    # --- the rows ------------------------------------------------------------------------

    @property
    def session(self) -> SessionRow | None:
        """The ``sessions`` row, or None before ``session_created``."""
        base = self._session
        if base is None:
            return None
        return msgspec.structs.replace(
            base,
            active_node_id=self.active_node_id,
            status="archived" if self.archived else "active",
            updated_at=self.updated_at or base.updated_at,
        )

    def agent_rows(self) -> list[AgentRow]:
        """The ``agents`` rows, in the store's read order (created_at, agent_id)."""
        return sorted(self.agents.values(), key=lambda r: (r.created_at, r.agent_id))

    def run_rows(self) -> list[RunRow]:
        """The ``runs`` rows, in the store's read order (created_at, run_id)."""
        return sorted(self.runs.values(), key=lambda r: (r.created_at, r.run_id))

    def artifact_rows(self) -> list[ArtifactRow]:
        """The ``artifacts`` rows, in the store's read order (created_at, artifact_id)."""
        return sorted(self.artifacts.values(), key=lambda r: (r.created_at, r.artifact_id))

    # --- status views --------------------------------------------------------------------

    def run_status(self, run_id: str, live: Liveness = True) -> str:
        """Return the run's status, ``interrupted`` for a live status with no live owner.

        Raises:
            KeyError: no such run.
        """
        status = self.runs[run_id].status
        if status in LIVE_RUN_STATUSES and not _is_live(run_id, live):
            return INTERRUPTED
        return status

    def interrupted_runs(self, live: Liveness = False) -> list[RunRow]:
        """Return the runs still ``running``/``pending`` whose owner is not alive.

        Args:
            live: ``False`` (default) when no owner is alive, as on opening a store after
                a crash; ``True`` when all are; or the ids of the runs with a live owner.
        """
        return [
            r
            for r in self.run_rows()
            if r.status in LIVE_RUN_STATUSES and not _is_live(r.run_id, live)
        ]

    def agents_by_status(self) -> dict[str, list[str]]:
        """Return agent ids grouped by status."""
        out: dict[str, list[str]] = {}
        for row in self.agent_rows():
            out.setdefault(row.status, []).append(row.agent_id)
        return out

    def runs_by_status(self, live: Liveness = True) -> dict[str, list[str]]:
        """Return run ids grouped by displayed status (see :meth:`run_status`)."""
        out: dict[str, list[str]] = {}
        for row in self.run_rows():
            out.setdefault(self.run_status(row.run_id, live), []).append(row.run_id)
        return out

    #: The fold's dispatch table: event type → handler (the event types that change a board).
    _HANDLERS: Final[dict[str, Callable[[Boards, StoredEvent], None]]] = {
        "session_created": _session_created,
        "node_appended": _node_appended,
        "active_node_switched": _active_node_switched,
        "session_archived": _session_archived,
        "agent_created": _agent_created,
        "agent_status_changed": _agent_status_changed,
        "run_started": _run_started,
        "run_ended": _run_ended,
        "run_waiting": _run_waiting,
        "run_resumed": _run_resumed,
        "token_usage": _token_usage,
        "artifact_created": _artifact_created,
    }


def _update(rows: dict[str, R], key: str, at: str, **changes: Any) -> None:
    """Replace row ``key`` by a copy with ``changes`` and ``updated_at=at``.

    An unknown key is ignored, as the store's ``UPDATE … WHERE id = ?`` matches no row.
    """
    row = rows.get(key)
    if row is not None:
        rows[key] = msgspec.structs.replace(row, updated_at=at, **changes)


def rebuild(events: Iterable[StoredEvent], session_id: str | None = None) -> Boards:
    """Fold ``events`` (in seq order) into a new board."""
    return fold_all(Boards(session_id), events)
