"""The seed's schema, asserted on every backend: part of :class:`StoreConformance`.

The seed's design (``../shared/seeds/004``) lists each table's columns and the status
enums. Every backend's tables carry the seed's columns in the seed's order (extra
columns only after them), a node row holds its content, and every stored status and end
reason is one of the seed's, over a session with a completed, a failed, a cancelled, a
refused and a parked run, and an archived session. The API still reads ``waiting``,
``refused`` and ``cancelled`` (derived, not stored), and ``verify`` catches a row
changed by hand.

A backend's test class implements :meth:`SeedConformance.raw` and
:meth:`SeedConformance.columns`, the only SQL this suite needs.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import itertools
import json
from typing import Any

from eventlog.blocks import TextBlock
from eventlog.errors import ClewError
from eventlog.events import (
    AgentCreated,
    AgentStatusChanged,
    Event,
    Node,
    NodeAppended,
    RunEnded,
    RunResumed,
    RunStarted,
    RunWaiting,
    SessionArchived,
    SessionCreated,
    TokenUsage,
    Usage,
)
from eventlog.records import AppendRequest
from eventlog.store import EventStore
from projections import verify

SEED_COLUMNS: dict[str, list[str]] = {
    "sessions": [
        "session_id",
        "cwd",
        "root_agent_id",
        "active_node_id",
        "parent_session_id",
        "status",
        "metadata_json",
        "created_at",
        "updated_at",
    ],
    "agents": [
        "agent_id",
        "session_id",
        "parent_agent_id",
        "agent_type",
        "created_by_run_id",
        "fork_from_node_id",
        "status",
        "result_json",
        "metadata_json",
        "created_at",
        "updated_at",
    ],
    "runs": [
        "run_id",
        "session_id",
        "agent_id",
        "status",
        "start_node_id",
        "end_node_id",
        "end_reason",
        "turn_count",
        "usage_json",
        "error_json",
        "metadata_json",
        "created_at",
        "updated_at",
    ],
    "artifacts": [
        "artifact_id",
        "session_id",
        "agent_id",
        "run_id",
        "node_id",
        "tool_call_id",
        "path",
        "filename",
        "mime_type",
        "size_bytes",
        "summary",
        "metadata_json",
        "created_at",
    ],
    "nodes": [
        "node_id",
        "node_seq",
        "parent_id",
        "agent_id",
        "run_id",
        "role",
        "node_type",
        "content_json",
        "metadata_json",
        "token_count",
        "created_at",
    ],
    "events": [
        "event_id",
        "seq",
        "run_seq",
        "agent_id",
        "run_id",
        "level",
        "event_type",
        "node_id",
        "tool_call_id",
        "payload_json",
        "created_at",
    ],
}
SEED_ENUMS: dict[tuple[str, str], set[str | None]] = {
    ("sessions", "status"): {"active", "archived"},
    ("agents", "status"): {"idle", "running", "completed", "failed", "cancelled"},
    ("agents", "agent_type"): {"main", "orchestrator", "sub", "fork"},
    ("runs", "status"): {
        "queued",
        "pending",
        "running",
        "completed",
        "failed",
        "aborted",
        "cancelled",
    },
    ("runs", "end_reason"): {
        None,
        "completed",
        "max_turns",
        "aborted_streaming",
        "aborted_tools",
        "prompt_too_long",
        "max_output_tokens_recovery",
        "failed",
    },
}

SID = "sess_20260101_000000_a1b2"
ARCHIVED = "sess_20260101_000001_c3d4"
#: The parked run's calls so far: the router's and the lead's.
ROUTER = Usage(input_tokens=30, output_tokens=5, cache_read_tokens=2)
LEAD = Usage(input_tokens=200, output_tokens=40, cache_write_tokens=7)
_CLOCK = itertools.count(1)


def req(event: Event, sid: str = SID, *, run_id: str | None = None) -> AppendRequest:
    return AppendRequest(
        session_id=sid, event=event, created_at=f"2026-01-01T00:00:{next(_CLOCK):06d}Z",
        agent_id="a1", run_id=run_id,
    )  # fmt: skip


def created(sid: str) -> AppendRequest:
    return req(SessionCreated(session_id=sid, cwd="/work", root_agent_id="a1"), sid)


def appended(node_id: str, parent: str | None, text: str, run_id: str | None) -> AppendRequest:
    node = Node(
        node_id=node_id,
        parent_id=parent,
        agent_id="a1",
        run_id=run_id,
        role="user",
        content=[TextBlock(text=text)],
    )
    return req(NodeAppended(node=node, activate=True), run_id=run_id)


def append(store: EventStore, *requests: AppendRequest) -> None:
    for result in store.append_batch(requests):
        if isinstance(result, ClewError):
            raise result


def _usage_json(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


class SeedConformance:
    """The seed's columns and enums in the tables (see the module docstring)."""

    def raw(self, store: EventStore, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Run ``sql`` on the backend's tables: ``?`` marks its parameters, ``{nodes}``
        and ``{events}`` name the node and event table of :data:`SID`."""
        raise NotImplementedError

    def columns(self, store: EventStore, table: str) -> list[str]:
        """Return the columns of the backend's ``table`` (``sessions``, ``agents``,
        ``runs``, ``artifacts``, ``nodes``, ``events``: :data:`SID`'s), in order."""
        raise NotImplementedError

    def seeded(self, store: EventStore) -> EventStore:
        """Write :data:`SID` with a completed, failed, cancelled, refused and parked run
        (two calls so far), and :data:`ARCHIVED`, archived; return ``store``."""
        runs: list[Any] = [
            ("r1", "completed", "completed"),
            ("r2", "failed", "failed"),
            ("r3", "cancelled", "cancelled"),
            ("r4", "refused", "failed"),
        ]
        requests = [
            created(SID),
            req(AgentCreated(agent_id="a1", agent_type="orchestrator", role="lead")),
            req(AgentCreated(agent_id="w1", agent_type="sub", parent_agent_id="a1")),
            req(AgentStatusChanged(agent_id="w1", status="completed", result={"ok": True})),
            appended("n1", None, "hello", None),
        ]
        for run_id, status, reason in runs:
            requests += [
                req(RunStarted(run_id=run_id, agent_id="a1"), run_id=run_id),
                req(TokenUsage(model="m", role="router", usage=ROUTER), run_id=run_id),
                req(
                    RunEnded(run_id=run_id, status=status, end_reason=reason, usage=ROUTER),
                    run_id=run_id,
                ),
            ]
        requests += [
            req(RunStarted(run_id="r5", agent_id="a1"), run_id="r5"),
            req(TokenUsage(model="m", role="router", usage=ROUTER), run_id="r5"),
            appended("n2", "n1", "the reply so far", "r5"),
            req(TokenUsage(model="m", role="lead", usage=LEAD), run_id="r5"),
            req(RunWaiting(run_id="r5", reason="approval", pending=["c1"]), run_id="r5"),
            created(ARCHIVED),
            req(SessionArchived(reason="done"), ARCHIVED),
        ]
        append(store, *requests)
        return store

    def test_every_table_has_the_seeds_columns_in_the_seeds_order_extras_after(
        self, store: EventStore
    ) -> None:
        self.seeded(store)
        for table, seed in SEED_COLUMNS.items():
            have = self.columns(store, table)
            assert seed == have[: len(seed)], table

    def test_every_stored_status_and_end_reason_is_one_of_the_seeds(
        self, store: EventStore
    ) -> None:
        self.seeded(store)
        for (table, column), allowed in SEED_ENUMS.items():
            stored = {r[0] for r in self.raw(store, f"SELECT DISTINCT {column} FROM {table}")}
            assert stored <= allowed, (table, column, stored - allowed)
        stored_runs = self.raw(
            store, "SELECT run_id, status, end_reason FROM runs WHERE session_id = ?", (SID,)
        )
        assert [
            ("r1", "completed", "completed"),
            ("r2", "failed", "failed"),
            ("r3", "cancelled", None),
            ("r4", "failed", "failed"),
            ("r5", "pending", None),
        ] == sorted(tuple(r) for r in stored_runs)

    def test_the_api_reads_the_statuses_the_seed_folds(self, store: EventStore) -> None:
        self.seeded(store)
        assert [
            ("r1", "completed", "completed"),
            ("r2", "failed", "failed"),
            ("r3", "cancelled", "cancelled"),
            ("r4", "refused", "failed"),
            ("r5", "waiting", None),
        ] == sorted((r.run_id, r.status, r.end_reason) for r in store.read_runs(SID))
        assert ["completed", "failed", "cancelled", "refused", "waiting"] == [
            status for _, _, status in sorted(store.read_run_statuses(SID))
        ]
        assert "archived" == store.read_session(ARCHIVED).status

    def test_a_parked_run_stores_its_usage_so_far_and_verify_agrees(
        self, store: EventStore
    ) -> None:
        self.seeded(store)
        [(usage_json,)] = self.raw(
            store, "SELECT usage_json FROM runs WHERE session_id = ? AND run_id = 'r5'", (SID,)
        )
        assert _usage_json(ROUTER.plus(LEAD)) == json.loads(usage_json)
        assert verify(store, SID).ok, verify(store, SID).lines()
        # Resumed, it goes on adding; its run_ended sets its own usage.
        third = Usage(input_tokens=1, output_tokens=1)
        append(
            store,
            req(RunResumed(run_id="r5"), run_id="r5"),
            req(TokenUsage(model="m", role="lead", usage=third), run_id="r5"),
        )
        [run] = [r for r in store.read_runs(SID) if r.run_id == "r5"]
        assert ("running", _usage_json(ROUTER.plus(LEAD).plus(third))) == (run.status, run.usage)
        assert verify(store, SID).ok, verify(store, SID).lines()
        total = ROUTER.plus(LEAD).plus(third)
        append(
            store,
            req(
                RunEnded(run_id="r5", status="completed", end_reason="completed", usage=total),
                run_id="r5",
            ),
        )
        assert verify(store, SID).ok, verify(store, SID).lines()

    def test_a_node_row_holds_its_content_and_verify_catches_it_changed(
        self, store: EventStore
    ) -> None:
        self.seeded(store)
        rows = self.raw(
            store,
            "SELECT node_id, run_id, content_json, metadata_json, token_count FROM {nodes}"
            " ORDER BY node_seq",
        )
        assert [
            ("n1", None, [{"type": "text", "text": "hello"}], {}, None),
            ("n2", "r5", [{"type": "text", "text": "the reply so far"}], {}, None),
        ] == [(r[0], r[1], json.loads(r[2]), json.loads(r[3]), r[4]) for r in rows]
        self.raw(
            store,
            "UPDATE {nodes} SET content_json = ? WHERE node_id = 'n2'",
            ('[{"type":"text","text":"forged"}]',),
        )
        [diff] = verify(store, SID).differences
        assert ("n2", "content_json") == (diff.key, diff.column)

    def test_verify_catches_a_deleted_node_row(self, store: EventStore) -> None:
        self.seeded(store)
        self.raw(store, "DELETE FROM {nodes} WHERE node_id = 'n2'")
        [diff] = verify(store, SID).differences
        assert ("n2", None, None) == (diff.key, diff.column, diff.actual)

    def test_verify_catches_a_changed_usage_so_far(self, store: EventStore) -> None:
        self.seeded(store)
        self.raw(store, "UPDATE runs SET usage_json = NULL WHERE run_id = 'r5'")
        [diff] = verify(store, SID).differences
        assert ("runs", "r5", "usage_json") == (diff.table, diff.key, diff.column)
