"""Artifact files: content-addressed, and durable with every directory leading to them."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _fsync_spy import spy_fsync

from eventlog.artifacts import ArtifactFiles

SID = "sess_20260101_000000_a1b2"

needs_proc = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="names fsynced fds through /proc/self/fd"
)


@needs_proc
def test_every_directory_created_for_an_artifact_is_fsynced_into_its_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "home" / "artifacts"
    files = ArtifactFiles(root)
    synced = spy_fsync(monkeypatch)
    rel, _, size = files.write(SID, b'{"k": 1}')
    monkeypatch.undo()
    assert (f"{SID}/", 8) == (rel[: len(SID) + 1], size)
    # home/ and artifacts/ and artifacts/<sid>/ are new: each one's entry lives in its parent.
    resolved = tmp_path.resolve()
    expected = {
        str(resolved),
        str(resolved / "home"),
        str(resolved / "home" / "artifacts"),
        str(resolved / "home" / "artifacts" / SID),
    }
    assert expected <= set(synced)


def test_an_artifact_reads_back_and_a_second_write_is_a_no_op(tmp_path: Path) -> None:
    files = ArtifactFiles(tmp_path / "artifacts")
    first = files.write(SID, b"[1, 2, 3]")
    assert first == files.write(SID, b"[1, 2, 3]")
    assert b"[1, 2, 3]" == files.read(first[0])
