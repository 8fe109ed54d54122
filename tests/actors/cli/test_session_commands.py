"""``clew retry`` and ``clew archive`` (issue 22, items 8 and 11)."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

from pathlib import Path

from _cli_helpers import Where, invoke, script_model
from _runtime_helpers import route, rule

PROMPT = "Summarise the incident report."


def recorded_run(where: Where, tmp_path: Path, *rules: dict[str, object]) -> tuple[str, int]:
    model = script_model(tmp_path / "model.json", *rules)
    ran = invoke(where, "run", PROMPT, "--model", model, "--json")
    return ran.json()["session_id"], ran.code


def test_the_cli_retries_a_failed_run_with_another_model(empty: Where, tmp_path: Path) -> None:
    sid, code = recorded_run(
        empty, tmp_path, route(), rule("lead", {"error": "down", "status": 503})
    )
    assert 2 == code  # every model candidate failed
    working = script_model(tmp_path / "working.json", route(), rule("lead", {"text": "Done."}))

    retried = invoke(empty, "retry", sid, "--model", working, "--json")

    assert (0, "completed", "Done.", f"{sid}:brain:r2") == (
        retried.code,
        retried.json()["status"],
        retried.json()["answer"],
        retried.json()["run_id"],
    )
    assert [0, 0] == [invoke(empty, c, sid).code for c in ("replay", "verify")]
    again = invoke(empty, "retry", sid, "--model", working)
    assert (
        2,
        [
            f"error: session {sid}: its last run {sid}:brain:r2 is completed; only a failed"
            " last run can be retried"
        ],
    ) == (again.code, again.err_lines())


def test_an_archived_session_reads_but_refuses_every_write(empty: Where, tmp_path: Path) -> None:
    sid, code = recorded_run(empty, tmp_path, route(), rule("lead", {"text": "Done."}))
    assert 0 == code

    archived = invoke(empty, "archive", sid, "--reason", "done with it", "--json")
    assert (0, {"session_id": sid, "status": "archived", "changed": True}) == (
        archived.code,
        archived.json(),
    )
    assert f"{sid}: already archived" == invoke(empty, "archive", sid).out.strip()
    [row] = invoke(empty, "sessions", "--json").json()
    assert "archived" == row["status"]
    for args in (
        [
            "run",
            "More, please.",
            "--model",
            f"scripted:{tmp_path / 'model.json'}",
            "--session",
            sid,
        ],
        ["switch-node", sid, "brain:r1:n1"],
    ):
        refused = invoke(empty, *args)
        assert (2, 1) == (refused.code, len(refused.err_lines())), refused.err
        assert f"session {sid} is archived" in refused.err
    assert [0, 0, 0, 0] == [
        invoke(empty, c, sid).code for c in ("show", "tasks", "replay", "verify")
    ]


def test_archive_of_an_unknown_session_is_refused(empty: Where) -> None:
    result = invoke(empty, "archive", "sess_nope")
    assert 2 == result.code
