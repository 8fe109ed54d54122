"""The demo's notes file: private, and never written behind a symlink."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from actors.demo import NoteArgs, demo_tools
from eventlog.errors import UnsafeFile


def _save_note(project: Path, text: str) -> object:
    save = next(t for t in demo_tools(project) if t.name == "save_note")
    return save.call(NoteArgs(text=text))


def test_the_notes_file_is_0600_in_a_0700_clew_dir_under_umask_022(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        _save_note(tmp_path, "one")
        _save_note(tmp_path, "two")
    finally:
        os.umask(old)
    notes = tmp_path / ".clew" / "demo-notes.txt"

    assert "one\ntwo\n" == notes.read_text()
    modes = [stat.S_IMODE(p.stat().st_mode) for p in (notes.parent, notes)]
    assert [0o700, 0o600] == modes


def test_a_symlinked_notes_file_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    (tmp_path / "project" / ".clew").mkdir(parents=True)
    (tmp_path / "project" / ".clew" / "demo-notes.txt").symlink_to(target)

    with pytest.raises(UnsafeFile, match=r"demo-notes\.txt: is a symbolic link"):
        _save_note(tmp_path / "project", "intruder")

    assert "keep\n" == target.read_text()
