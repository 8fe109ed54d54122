"""Reading the global tables (``sessions``, ``agents``, ``runs``, ``artifacts``): one SQL
for every backend.

Both backends hold these tables with the seed's columns in the seed's order and select
them by name (:mod:`eventlog.row_decoding` turns a row into its record), so the reads
differ only in the parameter mark and in where a session's ``token_usage`` events are;
each backend's readers subclass :class:`GlobalTableReads`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from eventlog.errors import UnknownSession
from eventlog.ids import validate_session_id
from eventlog.records import AgentRow, ArtifactRow, NewRunCheck, RunRow, SessionRow
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

#: The most sessions one page of :meth:`GlobalTableReads.list_sessions_page` returns.
MAX_PAGE = 1000
#: Run statuses of a run not ended (stored): the sessions the owner lock decides.
_OPEN_STORED = "('running', 'pending')"
#: The most sessions one text search looks at (see ``search_sessions_page``).
SEARCH_WINDOW = 2000
#: Text that can be the start of a session id: searched as an id prefix.
_ID_TEXT = re.compile(r"sess_[a-z0-9_]*")

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


#: The stored statuses of a run not finished: ``running``, ``pending`` (``waiting`` is
#: stored as ``pending`` with its detail; an older read-only file may hold it as is).
UNFINISHED_STORED = "('running', 'pending', 'waiting')"


class GlobalTableReads:
    """The global tables' reads, shared by both backends' readers (which subclass it).

    A subclass supplies its query (errors translated), the error for a session not
    stored, and where a run's ``token_usage`` payloads are.
    """

    def __init__(self, *, mark: str, seed_columns: bool) -> None:
        """Args:
        mark: the backend's parameter mark.
        seed_columns: ``runs`` has ``status_detail`` and a run not ended its usage so
            far (SQLite schema 5+, PostgreSQL 4+); False only for a read-only store on
            an older file, whose such runs are given the usage their migration gives.
        """
        self._seed_columns = seed_columns
        self._mark = mark
        detail = "status_detail" if seed_columns else "NULL"
        by_session = "WHERE session_id = ? ORDER BY created_at"
        self._global_sql = {
            name: text.replace("?", mark)
            for name, text in {
                "exists": "SELECT 1 FROM sessions WHERE session_id = ?",
                "session": f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?",
                "sessions": f"SELECT {SESSION_COLUMNS} FROM sessions"
                " ORDER BY created_at, session_id",
                "agents": f"SELECT {AGENT_COLUMNS} FROM agents {by_session}, agent_id",
                "runs": f"SELECT {RUN_COLUMNS}, {detail} FROM runs {by_session}, run_id",
                "statuses": f"SELECT run_id, agent_id, status, {detail} FROM runs"
                f" {by_session}, run_id",
                "unfinished": f"SELECT run_id, agent_id, status, {detail} FROM runs"
                f" WHERE session_id = ? AND status IN {UNFINISHED_STORED}"
                " ORDER BY created_at, run_id",
                "owned": "SELECT COUNT(*) FROM runs WHERE session_id = ? AND agent_id = ?",
                "artifacts": f"SELECT {ARTIFACT_COLUMNS} FROM artifacts {by_session}, artifact_id",
                # The sessions list's keyset pages: an index range scan each
                # (``sessions_by_created`` / ``sessions_by_updated``), whatever the number
                # of sessions; the cursor is the last session id of the previous page.
                "page_oldest": f"SELECT {SESSION_COLUMNS} FROM sessions"
                " WHERE (created_at, session_id) > (SELECT created_at, session_id FROM sessions"
                " WHERE session_id = ?) ORDER BY created_at, session_id LIMIT ?",
                "first_oldest": f"SELECT {SESSION_COLUMNS} FROM sessions"
                " ORDER BY created_at, session_id LIMIT ?",
                "page_newest": f"SELECT {SESSION_COLUMNS} FROM sessions"
                " WHERE (updated_at, session_id) < (SELECT updated_at, session_id FROM sessions"
                " WHERE session_id = ?) ORDER BY updated_at DESC, session_id DESC LIMIT ?",
                "first_newest": f"SELECT {SESSION_COLUMNS} FROM sessions"
                " ORDER BY updated_at DESC, session_id DESC LIMIT ?",
                # A parked run is stored ``pending`` too (status_detail ``waiting``): no
                # owner decides it, so it is left out.
                "open_sessions": "SELECT DISTINCT session_id FROM runs"
                f" WHERE status IN {_OPEN_STORED}"
                f"{' AND status_detail IS NULL' if seed_columns else ''} ORDER BY session_id",
                "mark": "SELECT COUNT(*), MAX(updated_at) FROM sessions",
            }.items()
        }

    # --- what a backend supplies -------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _unknown(self, sid: str) -> UnknownSession:
        """The error for a session that is not stored (``DeletedSession`` if deleted)."""
        raise NotImplementedError

    def _usage_payloads(self, sid: str, run_id: str) -> list[str]:
        """The ``payload_json`` of the run's ``token_usage`` events, in seq order."""
        raise NotImplementedError

    # --- the reads -----------------------------------------------------------------------

    def session_exists(self, session_id: str) -> bool:
        """Return whether ``session_id`` (validated) is a stored session."""
        sid = validate_session_id(session_id)
        return bool(self._query(self._global_sql["exists"], (sid,)))

    def _require(self, session_id: str) -> str:
        """Return the validated id of a stored session; raise ``UnknownSession`` else."""
        sid = validate_session_id(session_id)
        if not self.session_exists(sid):
            raise self._unknown(sid)
        return sid

    def read_session(self, session_id: str) -> SessionRow:
        """Return the session's row; raise ``UnknownSession`` if there is none."""
        sid = validate_session_id(session_id)
        rows = self._query(self._global_sql["session"], (sid,))
        if not rows:
            raise self._unknown(sid)
        return session_row(rows[0])

    def list_sessions(self) -> list[SessionRow]:
        """Return every session, oldest first."""
        return [session_row(r) for r in self._query(self._global_sql["sessions"])]

    def list_sessions_page(
        self, *, after: str | None = None, limit: int = 50, newest_first: bool = False
    ) -> list[SessionRow]:
        """Return one keyset page of sessions: at most ``limit`` (≤ :data:`MAX_PAGE`) after
        the session ``after`` (the last id of the previous page; None: the first page).

        Oldest first by ``(created_at, session_id)``: a session created while a reader
        pages is after every page already read, so each session comes exactly once.
        ``newest_first`` orders by last activity, ``(updated_at, session_id)`` descending
        (the inspector's list): a session active meanwhile moves to the front, so a later
        page may miss it (the first page shows it). ``after`` naming no stored session
        gives an empty page. Reads only ``sessions``, through its index: no session's
        own tables, whatever their number.
        """
        n = max(0, min(int(limit), MAX_PAGE))
        order = "newest" if newest_first else "oldest"
        if after is None:
            rows = self._query(self._global_sql[f"first_{order}"], (n,))
        else:
            rows = self._query(self._global_sql[f"page_{order}"], (validate_session_id(after), n))
        return [session_row(r) for r in rows]

    def search_sessions_page(
        self, text: str, *, after: str | None = None, limit: int = 50
    ) -> tuple[list[SessionRow], str | None]:
        """Search the sessions, newest activity first: the candidates of the inspector's
        search (which tests the title itself), and the cursor to search on from.

        Text that can be a session id's start (``[a-z0-9_]+``, e.g. ``sess_2026``) is
        looked up as a prefix of every id: a range of the primary key. Other text is
        searched, case-insensitive, in the metadata of the sessions and of their runs
        (a run's prompt) — a scan, so one call looks at no more than
        :data:`SEARCH_WINDOW` sessions after ``after``, by last activity, and returns the
        last one it looked at as the cursor (None once nothing older is left): a search
        at 10^5 sessions costs a window, not the whole history (4 s → a few ms).
        """
        n = max(0, min(int(limit), MAX_PAGE))
        low = text.lower()
        m = self._mark
        escaped = low.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        if _ID_TEXT.fullmatch(low):
            return self._search_ids(escaped, after, n)
        like = f"%{escaped}%"
        keyset = ""
        window_params: list[Any] = []
        if after is not None:
            keyset = (
                "WHERE (updated_at, session_id) < (SELECT updated_at, session_id FROM"
                f" sessions WHERE session_id = {m})"
            )
            window_params.append(validate_session_id(after))
        window = (
            f"SELECT session_id, updated_at FROM sessions {keyset}"
            f" ORDER BY updated_at DESC, session_id DESC LIMIT {m}"
        )
        last = self._query(
            f"SELECT session_id FROM ({window}) w ORDER BY updated_at, session_id LIMIT 1",
            [*window_params, SEARCH_WINDOW],
        )
        sql = (
            f"SELECT {', '.join('s.' + c.strip() for c in SESSION_COLUMNS.split(','))}"
            f" FROM sessions s JOIN ({window}) w ON w.session_id = s.session_id"
            f" WHERE lower(s.metadata_json) LIKE {m} ESCAPE '\\' OR EXISTS (SELECT 1 FROM"
            f" runs r WHERE r.session_id = s.session_id AND lower(r.metadata_json) LIKE {m}"
            " ESCAPE '\\') ORDER BY s.updated_at DESC, s.session_id DESC"
        )
        rows = self._query(sql, [*window_params, SEARCH_WINDOW, like, like])
        found = [session_row(r) for r in rows]
        more = (
            self._query(
                f"SELECT 1 FROM sessions WHERE (updated_at, session_id) < (SELECT updated_at,"
                f" session_id FROM sessions WHERE session_id = {m}) LIMIT 1",
                [last[0][0]],
            )
            if last
            else []
        )
        if len(found) > n:  # more matches than a page: go on after the last one shown
            return found[:n], found[n - 1].session_id
        return found, (last[0][0] if more else None)

    def _search_ids(
        self, escaped: str, after: str | None, n: int
    ) -> tuple[list[SessionRow], str | None]:
        """The sessions whose id starts with ``escaped`` (a LIKE pattern's start), by id."""
        m = self._mark
        # LIKE, not a range: a range's upper bound depends on the database's collation.
        cursor = f" AND session_id > {m}" if after is not None else ""
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id LIKE {m} ESCAPE '\\'"
            f"{cursor} ORDER BY session_id LIMIT {m}"
        )
        params: list[Any] = [escaped + "%", *([validate_session_id(after)] if after else [])]
        found = [session_row(r) for r in self._query(sql, [*params, n])]
        return found, found[-1].session_id if len(found) == n else None

    def read_runs_of(self, session_ids: Sequence[str]) -> dict[str, list[RunRow]]:
        """Return the runs of each of ``session_ids`` (validated), by creation time: one
        query for a page of sessions (``runs_by_session``), not one per session; a session
        with no run (or not stored) maps to ``[]``."""
        sids = [validate_session_id(s) for s in session_ids]
        out: dict[str, list[RunRow]] = {sid: [] for sid in sids}
        if not sids:
            return out
        detail = "status_detail" if self._seed_columns else "NULL"
        sql = (
            f"SELECT {RUN_COLUMNS}, {detail} FROM runs WHERE session_id IN"
            f" ({', '.join(self._mark for _ in sids)}) ORDER BY session_id, created_at, run_id"
        )
        for r in self._query(sql, sids):
            run = run_row(r)
            out[run.session_id].append(
                run if self._seed_columns else self._usage_so_far(run.session_id, run)
            )
        return out

    def open_run_sessions(self, newest: int | None = None) -> list[str]:
        """Return the sessions with a run not ended in the store (``running``/``pending``):
        the only ones whose status the owner lock decides (``runs_open``); with ``newest``,
        only among the ``newest`` sessions by last activity (a list's first page)."""
        if newest is None:
            return [str(r[0]) for r in self._query(self._global_sql["open_sessions"])]
        sql = self._global_sql["open_sessions"].replace(
            " ORDER BY session_id",
            " AND session_id IN (SELECT session_id FROM sessions"
            f" ORDER BY updated_at DESC, session_id DESC LIMIT {self._mark})"
            " ORDER BY session_id",
        )
        return [str(r[0]) for r in self._query(sql, (max(0, int(newest)),))]

    def sessions_mark(self) -> tuple[int, str | None]:
        """Return ``(number of sessions, latest updated_at)``: it changes whenever a session
        is added, deleted or appended to (a change feed's cheap look; ``sessions_by_updated``
        gives the maximum without a scan of the rows)."""
        count, latest = self._query(self._global_sql["mark"])[0]
        return int(count), None if latest is None else str(latest)

    def read_agents(self, session_id: str) -> list[AgentRow]:
        """Return the session's agents, by creation time."""
        rows = self._query(self._global_sql["agents"], (self._require(session_id),))
        return [agent_row(r) for r in rows]

    def read_runs(self, session_id: str) -> list[RunRow]:
        """Return the session's runs, by creation time."""
        sid = self._require(session_id)
        runs = [run_row(r) for r in self._query(self._global_sql["runs"], (sid,))]
        if self._seed_columns:
            return runs
        return [self._usage_so_far(sid, r) for r in runs]

    def _usage_so_far(self, sid: str, run: RunRow) -> RunRow:
        """A run not ended, on a file older than the usage so far, with the usage its
        migration gives it: the sum of its ``token_usage`` events."""
        if run.usage is not None or run.status not in ("running", "waiting"):
            return run
        return run_with_usage(run, usage_of(self._usage_payloads(sid, run.run_id)))

    def read_run_statuses(self, session_id: str) -> list[tuple[str, str | None, str]]:
        """Return ``(run_id, agent_id, status)`` of the session's runs, by creation time."""
        rows = self._query(self._global_sql["statuses"], (self._require(session_id),))
        return [(r[0], r[1], api_run_status(r[2], r[3])) for r in rows]

    def read_new_run_check(self, session_id: str, agent_id: str) -> NewRunCheck:
        """Return what a new run of ``agent_id`` checks: the session's runs not finished
        and how many runs ``agent_id`` owns (two indexed reads, no row per ended run)."""
        sid = self._require(session_id)
        rows = self._query(self._global_sql["unfinished"], (sid,))
        (owned,) = self._query(self._global_sql["owned"], (sid, agent_id))[0]
        return NewRunCheck(
            unfinished=[(r[0], r[1], api_run_status(r[2], r[3])) for r in rows], owned=int(owned)
        )

    def read_artifacts(self, session_id: str) -> list[ArtifactRow]:
        """Return the session's artifacts."""
        rows = self._query(self._global_sql["artifacts"], (self._require(session_id),))
        return [artifact_row(r) for r in rows]
