"""Verify a session's materialised rows against a rebuild from its events.

``verify(store, session_id)`` rebuilds the session (:func:`projections.rebuild.rebuild`)
and compares the rows it yields with the rows the store materialised, listing every
difference as ``(table, key, column, expected, actual)`` — what ``clew verify`` prints.
The store is read only through :class:`eventlog.store.EventStore`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from eventlog.errors import ClewError
from eventlog.records import RunRow
from eventlog.store import EventStore
from projections.rebuild import rebuild
from projections.usage import Totals


class Difference(msgspec.Struct, frozen=True, kw_only=True):
    """One way the stored rows differ from the rebuild.

    ``column`` None means the whole row: ``actual`` None is a missing row, ``expected``
    None an extra one (both then hold the row as a dict).
    """

    table: str
    key: str
    column: str | None
    expected: Any
    actual: Any

    def __str__(self) -> str:
        where = f"{self.table}[{self.key}]"
        if self.column is None:
            return f"{where}: row missing" if self.actual is None else f"{where}: extra row"
        return f"{where}.{self.column}: expected {self.expected!r}, actual {self.actual!r}"


class ProjectionCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of :func:`verify`: how the stored projections compare with a rebuild."""

    session_id: str
    events: int
    differences: list[Difference]
    integrity_errors: list[str]
    #: The usage projection: the ``token_usage`` totals of each run (see
    #: :func:`usage_differences`, which the runtime's verify applies).
    usage_by_run: dict[str, Totals] = msgspec.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the stored rows equal the rebuild and the history is consistent."""
        return not self.differences and not self.integrity_errors

    def lines(self) -> list[str]:
        """Return the report as human-readable lines."""
        head = (
            f"session {self.session_id}: {self.events} events, "
            f"{len(self.differences)} differences, "
            f"{len(self.integrity_errors)} integrity errors"
        )
        return (
            [head]
            + [f"integrity: {p}" for p in self.integrity_errors]
            + [str(d) for d in self.differences]
        )


# Row fields that the store keeps as JSON text: reported under the SQL column name.
_COLUMN: Final = {
    "content": "content_json",
    "metadata": "metadata_json",
    "result": "result_json",
    "usage": "usage_json",
    "error": "error_json",
}


def diff_rows(
    table: str, key_field: str, expected: Iterable[msgspec.Struct], actual: Iterable[msgspec.Struct]
) -> list[Difference]:
    """Compare two row lists by key, column by column; report missing and extra rows."""
    want = {getattr(r, key_field): r for r in expected}
    have = {getattr(r, key_field): r for r in actual}
    out: list[Difference] = []
    for key, row in want.items():
        other = have.get(key)
        if other is None:
            out.append(
                Difference(
                    table=table,
                    key=key,
                    column=None,
                    expected=msgspec.to_builtins(row),
                    actual=None,
                )
            )
            continue
        if row == other:
            continue
        for field in row.__struct_fields__:
            a, b = getattr(row, field), getattr(other, field)
            if a != b:
                out.append(
                    Difference(
                        table=table,
                        key=key,
                        column=_COLUMN.get(field, field),
                        expected=msgspec.to_builtins(a),
                        actual=msgspec.to_builtins(b),
                    )
                )
    for key, row in have.items():
        if key not in want:
            out.append(
                Difference(
                    table=table,
                    key=key,
                    column=None,
                    expected=None,
                    actual=msgspec.to_builtins(row),
                )
            )
    return out


def verify(store: EventStore, session_id: str) -> ProjectionCheck:
    """Rebuild ``session_id`` from its events and compare with the store's rows.

    Integrity problems of the history (dangling parent, duplicate node, switch to an
    unknown node) are reported, not raised; the rows are still compared, rebuilt the
    way the store would have materialised them.

    Raises:
        ClewError: the session is unknown or its events cannot be read or decoded.
    """
    state = rebuild(store.iter_events(session_id), session_id, strict=False)
    diffs: list[Difference] = []
    expected_session = state.session
    actual_session = store.read_session(session_id)
    if expected_session is None:
        diffs.append(
            Difference(
                table="sessions",
                key=session_id,
                column=None,
                expected=None,
                actual=msgspec.to_builtins(actual_session),
            )
        )
    else:
        diffs += diff_rows("sessions", "session_id", [expected_session], [actual_session])
    try:
        stored_nodes = store.read_nodes(session_id)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise ClewError(f"nodes_{session_id} holds a row that cannot be decoded: {e}") from e
    diffs += diff_rows(f"nodes_{session_id}", "node_id", state.node_rows(), stored_nodes)
    diffs += diff_rows("agents", "agent_id", state.agent_rows(), store.read_agents(session_id))
    diffs += diff_rows("runs", "run_id", state.run_rows(), store.read_runs(session_id))
    diffs += diff_rows(
        "artifacts", "artifact_id", state.artifact_rows(), store.read_artifacts(session_id)
    )
    return ProjectionCheck(
        session_id=session_id,
        events=state.events,
        differences=diffs,
        integrity_errors=list(state.tree.problems),
        usage_by_run=dict(state.usage.by_run),
    )


_USAGE_FIELDS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


def usage_differences(
    runs: Iterable[RunRow], usage_by_run: dict[str, Totals], skip: Iterable[str] = ()
) -> list[Difference]:
    """Compare each ended run's ``usage_json`` with the sum of its ``token_usage`` events.

    A run's usage is every model call the run made (its router call included), so the
    two must agree. A run still running has no usage yet and is not compared; nor is a
    run in ``skip`` (the runtime skips runs recorded before the rule held).
    """
    skipped = set(skip)
    out: list[Difference] = []
    for row in runs:
        if row.usage is None or row.run_id in skipped:
            continue
        totals = usage_by_run.get(row.run_id, Totals())
        expected = {f: getattr(totals, f) for f in _USAGE_FIELDS}
        actual = {f: row.usage.get(f, 0) for f in _USAGE_FIELDS}
        if expected != actual:
            out.append(
                Difference(
                    table="runs",
                    key=row.run_id,
                    column="usage_json",
                    expected=expected,
                    actual=actual,
                )
            )
    return out
