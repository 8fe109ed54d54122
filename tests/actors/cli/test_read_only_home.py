"""The read commands work on a home on a read-only mount, and change nothing anywhere.

The commands run in a real process that sees the home (and the project) bind-mounted
read-only in a private mount namespace (tests/helpers/_read_only.py); one process runs
all the commands of a test (tests/helpers/_clew_many.py), as ``main`` would one by one.
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from _cli_helpers import Where, invoke
from _processes import run_crash_demo
from _read_only import make_read_only, run_read_only, snapshot, why_no_read_only_mount

from actors.cli.options import READ_COMMANDS

pytestmark = pytest.mark.skipif(
    why_no_read_only_mount() is not None, reason=str(why_no_read_only_mount())
)

GOLDEN_DEMO = Path(__file__).resolve().parents[2] / "golden" / "sessions" / "demo"
GOLDEN_SID = "sess_20261130_231819_679c"


def read_commands(sid: str) -> list[list[str]]:
    commands = [["sessions"], ["verify", "--all"]]
    commands += [[c, sid] for c in sorted(READ_COMMANDS - {"sessions"})]
    return commands


CLEW_MANY = Path(__file__).resolve().parents[2] / "helpers" / "_clew_many.py"
Result = tuple[int, str, str]


def clew_read_only(where: Where, *commands: list[str]) -> list[Result]:
    """Run each ``clew COMMAND`` in one real process that sees the home and the project
    mounted read-only; return ``(code, stdout, stderr)`` of each."""
    argvs = [[*c, *where.flags()] for c in commands]
    done = run_read_only(
        [where.home, where.project],
        [sys.executable, str(CLEW_MANY), json.dumps(argvs)],
        cwd=where.project,
    )
    assert 0 == done.returncode, done.stderr
    return [(code, out, err) for code, out, err in json.loads(done.stdout)]


@pytest.fixture(scope="module")
def killed_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    """A home whose writer was SIGKILLed after 25 commits: its -wal and -shm are left."""
    root = tmp_path_factory.mktemp("killed")
    where = Where(root / "home", root / "project")
    where.project.mkdir()
    killed = run_crash_demo(
        where.home, where.project, "run", "2", env={"CLEW_FAULT_KILL_AFTER_EVENTS": "25"}
    )
    assert -9 == killed.returncode
    assert (where.home / "sessions.sqlite-wal").stat().st_size > 0  # the last commits
    return where, killed.stdout.split()[0]


def copy_of(where: Where, dest: Path) -> Where:
    shutil.copytree(where.home, dest / "home")
    shutil.copytree(where.project, dest / "project")
    return Where(dest / "home", dest / "project")


def test_every_read_command_on_a_read_only_home_prints_what_it_prints_on_a_writable_one(
    tmp_path: Path,
) -> None:
    where = Where(tmp_path / "home", tmp_path / "project")
    where.project.mkdir()
    sid = invoke(where, "demo", "--workers", "2", "--json").json()["session_id"]
    make_read_only(where.home)
    # Root writes through the modes: these may leave SQLite's -wal/-shm (see the docs).
    expected = [(0, invoke(where, *c).out, "") for c in read_commands(sid)]
    before = snapshot(tmp_path)
    assert expected == clew_read_only(where, *read_commands(sid))
    assert before == snapshot(tmp_path)


def test_a_home_left_by_a_killed_writer_is_read_on_a_read_only_mount(
    tmp_path: Path, killed_home: tuple[Where, str]
) -> None:
    where, sid = copy_of(killed_home[0], tmp_path), killed_home[1]
    before = snapshot(tmp_path)
    commands = [["sessions"], ["timeline", sid], ["verify", sid], ["replay", sid]]
    results = clew_read_only(where, *commands)
    assert [(0, "")] * len(commands) == [(code, err) for code, _, err in results]
    # Killed after the commit holding the 25th event: its group may hold a few more.
    verified = re.match(rf"{sid}: ok \((\d+) events", results[2][1])
    assert verified is not None, results[2][1]
    assert 25 <= int(verified[1]) <= 32
    assert before == snapshot(tmp_path)


def test_a_write_ahead_log_without_its_shm_on_a_read_only_mount_is_refused_in_one_line(
    tmp_path: Path, killed_home: tuple[Where, str]
) -> None:
    where, sid = copy_of(killed_home[0], tmp_path), killed_home[1]
    (where.home / "sessions.sqlite-shm").unlink()
    [(code, out, err)] = clew_read_only(where, ["timeline", sid])
    [line] = err.splitlines()
    assert (2, "") == (code, out)
    assert line.startswith("error: cannot open the clew home")
    assert "sessions.sqlite-wal holds changes that are not in the main file yet" in line


def test_a_home_from_an_older_clew_is_read_on_a_read_only_mount_without_migrating_it(
    tmp_path: Path,
) -> None:
    root = shutil.copytree(GOLDEN_DEMO, tmp_path / "demo")
    where = Where(root / "home", root / "project")
    make_read_only(where.home)
    before = snapshot(root)
    results = clew_read_only(where, *read_commands(GOLDEN_SID))
    assert [(0, "")] * len(results) == [(code, err) for code, _, err in results]
    verified = dict(zip(map(tuple, read_commands(GOLDEN_SID)), results, strict=True))
    assert verified[("verify", GOLDEN_SID)][1].startswith(
        f"{GOLDEN_SID}: ok (102 events, 102 unchained"
    )
    assert before == snapshot(root)


def test_a_write_command_on_a_read_only_home_exits_2_with_one_line(
    tmp_path: Path, killed_home: tuple[Where, str]
) -> None:
    where, sid = copy_of(killed_home[0], tmp_path), killed_home[1]
    before = snapshot(tmp_path)
    results = clew_read_only(where, ["resume", sid], ["switch-node", sid, "brain:r1:n1"], ["demo"])
    assert [2, 2, 2] == [code for code, _, _ in results]
    assert all(err.startswith("error: cannot open the clew home") for _, _, err in results)
    assert [1, 1, 1] == [len(err.splitlines()) for _, _, err in results]
    assert before == snapshot(tmp_path)
