"""``replay --all`` / ``verify --all`` in CI: a home without sessions (a typo in the path)
fails instead of passing, unless ``--allow-empty``; and ``--version``, shell completion."""

from __future__ import annotations

import pytest
import structlog
from _cli_helpers import Where, copy_where, invoke, main_wal, run_process

from actors.runtime.runtime import Runtime


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, list[str]]:
    base = tmp_path_factory.mktemp("all")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    sids = []
    for _ in range(2):
        result = invoke(where, "demo", "--workers", "1", "--json")
        assert 0 == result.code, result.err
        sids.append(result.json()["session_id"])
    structlog.reset_defaults()
    return where, sids


def test_replay_all_replays_every_session(two: tuple[Where, list[str]]) -> None:
    where, sids = two
    result = invoke(where, "replay", "--all")
    assert 0 == result.code, result.err
    lines = result.out.splitlines()
    assert "2 sessions replayed: identical" == lines[-1]
    assert [sid for sid in sids] == [line.split(":")[0] for line in lines[:-1]]
    doc = invoke(where, "replay", "--all", "--json").json()
    assert (True, sids) == (doc["identical"], [s["session_id"] for s in doc["sessions"]])


@pytest.mark.parametrize("command", ["replay", "verify"])
@pytest.mark.parametrize("home", ["missing", "empty"])
def test_all_on_a_home_without_sessions_fails_unless_allowed(
    empty: Where, command: str, home: str
) -> None:
    if home == "empty":
        Runtime(empty.home, empty.project).close()
    result = invoke(empty, command, "--all", "--json")
    what = "replay" if command == "replay" else "verify"
    assert (2, "") == (result.code, result.out)
    assert [
        f"error: no sessions in the clew home {empty.home}: nothing to {what} (is --home right?"
        " --allow-empty accepts an empty home)"
    ] == result.err_lines()
    allowed = invoke(empty, command, "--all", "--allow-empty")
    assert 0 == allowed.code, allowed.err
    assert allowed.out.startswith("0 sessions")
    assert (home == "empty") == (empty.home / "sessions.sqlite").exists()  # never created


def test_verify_fails_when_a_task_wal_is_missing(
    two: tuple[Where, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    where, (sid, _) = two
    where = copy_where(where, tmp_path_factory.mktemp("no-wal"))
    main_wal(where, sid).unlink()
    result = invoke(where, "verify", sid)
    assert 1 == result.code
    # Flow 2: the WAL is named after the plan's task (the demo's router names it).
    assert f"task WAL notes-app-plan: missing, though run {sid}:brain:r1 planned" in result.out


def test_version_prints_one_line(empty: Where) -> None:
    result = invoke(None, "--version")
    assert 0 == result.code
    [line] = result.out.splitlines()
    assert line.startswith("clew ")


def test_shell_completion_completes_commands_and_session_ids(two: tuple[Where, list[str]]) -> None:
    where, sids = two
    script = run_process(where, "--show-completion", "bash")
    assert "complete" in script.out and "_CLEW_COMPLETE" in script.out
    # the shell named is the one printed, whatever the parent process is (not detected)
    zsh = run_process(where, "--show-completion", "zsh")
    assert zsh.out.startswith("#compdef clew"), zsh.err
    words = f"clew show --home {where.home} "
    completed = run_process(where, _CLEW_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD="4")
    assert ["last", *reversed(sids)] == completed.out.split()
