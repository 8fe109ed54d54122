"""``clew delete`` (issue 23): confirmation, exit codes, one-line errors, and what a
deleted id reads as afterwards."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import io

import pytest
from _cli_helpers import Where, invoke


class _Terminal(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _demos(where: Where, n: int = 2) -> list[str]:
    return [invoke(where, "demo", "--json").json()["session_id"] for _ in range(n)]


def test_clew_delete_needs_yes_off_a_terminal_then_deletes_and_audits(empty: Where) -> None:
    gone, kept = _demos(empty)

    refused = invoke(empty, "delete", gone)
    assert (2, [f"error: deleting {gone} needs --yes (stdin is not a terminal to confirm on);"
                " nothing deleted"]) == (refused.code, refused.err_lines())  # fmt: skip
    assert 0 == invoke(empty, "show", gone).code

    deleted = invoke(empty, "delete", gone, "--yes", "--json")

    assert 0 == deleted.code, deleted.err
    doc = deleted.json()
    assert (True, gone, 1) == (doc["deleted"], doc["session_id"], doc["task_wals"])
    assert doc["events"] > 0
    assert [kept] == [r["session_id"] for r in invoke(empty, "sessions", "--json").json()]
    assert 0 == invoke(empty, "verify", "--all").code
    assert not (empty.project / ".clew" / "tasks" / gone).exists()
    for command in ("show", "timeline", "verify", "delete"):
        again = invoke(empty, command, gone, *(["--yes"] if command == "delete" else []))
        assert (2, [f"error: session {gone} was deleted at {doc['deleted_at']}"]) == (
            again.code,
            again.err_lines(),
        ), command


def test_clew_delete_asks_on_a_terminal(empty: Where, monkeypatch: pytest.MonkeyPatch) -> None:
    [sid] = _demos(empty, 1)
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    kept = invoke(empty, "delete", sid)
    assert (1, f"{sid}: not deleted") == (kept.code, kept.err_lines()[-1])
    assert 0 == invoke(empty, "show", sid).code

    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    deleted = invoke(empty, "delete", sid)
    assert 0 == deleted.code
    assert deleted.out.strip().endswith("1 task WALs)")
    assert f"{sid}: deleted at " in deleted.out


def test_clew_delete_refuses_a_forked_session_without_force(empty: Where) -> None:
    [sid] = _demos(empty, 1)
    child = invoke(empty, "fork", sid, "--json").json()["session_id"]

    refused = invoke(empty, "delete", sid, "--yes")

    assert (2, [f"error: session {sid} has forked sessions ({child}): not deleted"
                " (--force deletes it anyway)"]) == (refused.code, refused.err_lines())  # fmt: skip
    assert 0 == invoke(empty, "delete", sid, "--yes", "--force").code
    assert 0 == invoke(empty, "verify", "--all").code


def test_clew_delete_of_an_unknown_session_exits_2(empty: Where) -> None:
    _demos(empty, 1)
    unknown = invoke(empty, "delete", "sess_20260101_000000_beef", "--yes")
    assert (2, ["error: unknown session sess_20260101_000000_beef"]) == (
        unknown.code,
        unknown.err_lines(),
    )
    bad = invoke(empty, "delete", "../etc", "--yes")
    assert 2 == bad.code
    assert 1 == len(bad.err_lines())
