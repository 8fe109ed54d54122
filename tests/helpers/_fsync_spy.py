"""Seeing what was made durable: record the path of every fd passed to ``os.fsync``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def spy_fsync(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the path of every fd passed to ``os.fsync`` from now on (Linux: /proc/self/fd).

    The fsync still happens; ``monkeypatch.undo()`` stops the recording.
    """
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return synced
