"""Reading the global tables (``sessions``, ``agents``, ``runs``, ``artifacts``): one SQL
for every backend.

Both backends hold these tables with the seed's columns in the seed's order and select
them by name (:mod:`eventlog.row_decoding` turns a row into its record), so the reads
differ only in the parameter mark and in where a session's ``token_usage`` events are;
each backend's readers hold a :class:`GlobalReads` and answer through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from eventlog.records import AgentRow, ArtifactRow, RunRow, SessionRow
from eventlog.row_decoding import (
    SESSION_COLUMNS,
    agent_row,
    artifact_row,
    run_row,
    run_with_usage,
    session_row,
)
from eventlog.row_encoding import usage_of
from eventlog.seed_enums import api_run_status

#: Run a query, return its rows.
Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
#: The ``payload_json`` of a run's ``token_usage`` events in seq order (session, run).
UsagePayloads = Callable[[str, str], list[str]]

AGENT_COLUMNS = (
    "agent_id, session_id, parent_agent_id, agent_type, created_by_run_id,"
    " fork_from_node_id, status, result_json, metadata_json, created_at, updated_at"
)
#: The seed's columns of ``runs``; ``status_detail`` follows them.
RUN_COLUMNS = (
    "run_id, session_id, agent_id, status, start_node_id, end_node_id, end_reason,"
    " turn_count, usage_json, error_json, metadata_json, created_at, updated_at"
)
ARTIFACT_COLUMNS = (
    "artifact_id, session_id, agent_id, run_id, node_id, tool_call_id, path, filename,"
    " mime_type, size_bytes, summary, metadata_json, created_at"
)


class GlobalReads:
    """The global tables' reads of one backend (session ids validated by the caller)."""

    __slots__ = ("_detail", "_query", "_seed_columns", "_sql", "_usage_payloads")

    def __init__(
        self, query: Query, usage_payloads: UsagePayloads, *, mark: str, seed_columns: bool
    ) -> None:
        """Args:
        query: the backend's query (its errors translated).
        usage_payloads: the payloads of a run's ``token_usage`` events.
        mark: the backend's parameter mark.
        seed_columns: ``runs`` has ``status_detail`` and a run not ended its usage so
            far (SQLite schema 5+, PostgreSQL 4+); False only for a read-only store on
            an older file, whose such runs are given the usage their migration gives.
        """
        self._query = query
        self._usage_payloads = usage_payloads
        self._seed_columns = seed_columns
        detail = "status_detail" if seed_columns else "NULL"
        by_session = "WHERE session_id = ? ORDER BY created_at"
        self._sql = {
            name: text.replace("?", mark)
            for name, text in {
                "session": f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?",
                "sessions": f"SELECT {SESSION_COLUMNS} FROM sessions"
                " ORDER BY created_at, session_id",
                "agents": f"SELECT {AGENT_COLUMNS} FROM agents {by_session}, agent_id",
                "runs": f"SELECT {RUN_COLUMNS}, {detail} FROM runs {by_session}, run_id",
                "statuses": f"SELECT run_id, agent_id, status, {detail} FROM runs"
                f" {by_session}, run_id",
                "artifacts": f"SELECT {ARTIFACT_COLUMNS} FROM artifacts {by_session}, artifact_id",
            }.items()
        }

    def read_session(self, sid: str) -> SessionRow | None:
        """Return the session's row, or None."""
        rows = self._query(self._sql["session"], (sid,))
        return session_row(rows[0]) if rows else None

    def list_sessions(self) -> list[SessionRow]:
        """Return every session, oldest first."""
        return [session_row(r) for r in self._query(self._sql["sessions"], ())]

    def read_agents(self, sid: str) -> list[AgentRow]:
        """Return the session's agents, by creation time."""
        return [agent_row(r) for r in self._query(self._sql["agents"], (sid,))]

    def read_runs(self, sid: str) -> list[RunRow]:
        """Return the session's runs, by creation time."""
        runs = [run_row(r) for r in self._query(self._sql["runs"], (sid,))]
        if self._seed_columns:
            return runs
        return [self._usage_so_far(sid, r) for r in runs]

    def _usage_so_far(self, sid: str, run: RunRow) -> RunRow:
        """A run not ended, on a file older than the usage so far, with the usage its
        migration gives it: the sum of its ``token_usage`` events."""
        if run.usage is not None or run.status not in ("running", "waiting"):
            return run
        return run_with_usage(run, usage_of(self._usage_payloads(sid, run.run_id)))

    def read_run_statuses(self, sid: str) -> list[tuple[str, str | None, str]]:
        """Return ``(run_id, agent_id, status)`` of the session's runs, by creation time."""
        rows = self._query(self._sql["statuses"], (sid,))
        return [(r[0], r[1], api_run_status(r[2], r[3])) for r in rows]

    def read_artifacts(self, sid: str) -> list[ArtifactRow]:
        """Return the session's artifacts."""
        return [artifact_row(r) for r in self._query(self._sql["artifacts"], (sid,))]
