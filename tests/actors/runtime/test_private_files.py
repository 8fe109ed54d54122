"""The files of a home are private whatever the umask: directories 0700, files 0600.

Under the common umask 022 they used to be 0755 / 0644, so any local user could read
every prompt and tool output. (Task WALs and notes live in the project and are checked
with the task manager.)
"""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.runtime.runtime import Runtime
from eventlog.blocks import JsonBlock
from eventlog.events import Node, NodeAppended
from eventlog.records import AppendRequest


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def modes(root: Path) -> dict[str, str]:
    """Return the permission bits of everything under ``root`` (and ``root``), in octal."""
    return {
        str(p.relative_to(root.parent)): oct(stat.S_IMODE(p.stat().st_mode))
        for p in [root, *sorted(root.rglob("*"))]
    }


@pytest.mark.usefixtures("umask_022")
def test_a_new_home_its_database_wal_shm_artifacts_and_locks_are_private(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path / "project") as rt:
        sid = rt.new_session().id
        big = JsonBlock(data={"rows": ["x" * 100] * 400})  # over the 16 KiB threshold
        node = Node(node_id="n1", parent_id=None, agent_id="a1", role="tool", content=[big])
        rt.writer.append(
            AppendRequest(session_id=sid, event=NodeAppended(node=node), created_at="t")
        )
        rt.lock(sid)
        [artifact] = rt.store.read_artifacts(sid)
        while_open = modes(tmp_path / "home")  # the -wal and -shm exist only while open
    expected_files = {
        "home/sessions.sqlite",
        "home/sessions.sqlite-wal",
        "home/sessions.sqlite-shm",
        f"home/artifacts/{artifact.path}",
        f"home/locks/{sid}.lock",
    }
    expected_dirs = {"home", "home/artifacts", f"home/artifacts/{sid}", "home/locks"}
    assert {**dict.fromkeys(expected_files, "0o600"), **dict.fromkeys(expected_dirs, "0o700")} == (
        while_open
    )
