"""Reading a model script file: only a regular file, at most 16 MiB, refused in one line."""

# The house style asserts `expected == actual`; ruff's SIM300 (Yoda) says the opposite.

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from actors.errors import ScriptError
from actors.models.scripted import MAX_SCRIPT_BYTES, load_script
from eventlog.errors import Refused

SCRIPT = {"rules": [{"replies": [{"text": "hi"}]}]}


def _refusal(source: Path) -> str:
    with pytest.raises(ScriptError) as caught:
        load_script(source)
    assert isinstance(caught.value, Refused)  # the CLI exits 2
    return str(caught.value)


def test_a_script_reached_through_a_symlink_is_read(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text(json.dumps(SCRIPT))
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")

    assert "hi" == load_script(tmp_path / "link.json").rules[0].replies[0].text


def test_dev_zero_is_refused_without_being_read() -> None:
    expected = "cannot read script /dev/zero: is a character device, not a regular file"
    assert expected == _refusal(Path("/dev/zero"))


def test_a_symlink_to_dev_zero_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.json").symlink_to("/dev/zero")

    refusal = _refusal(tmp_path / "s.json")

    assert refusal.endswith("s.json: is a character device, not a regular file")


def test_a_fifo_is_refused_at_once_instead_of_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "s.json")

    assert _refusal(tmp_path / "s.json").endswith("s.json: is a FIFO, not a regular file")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert _refusal(tmp_path).endswith(": is a directory, not a regular file")


def test_a_script_over_16_mib_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(MAX_SCRIPT_BYTES + 1)  # sparse

    expected = "big.json: 16,777,217 bytes is over the 16 MiB limit of a model script"
    assert _refusal(big).endswith(expected)
