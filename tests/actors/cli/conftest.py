"""Fixtures of the CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from _cli_helpers import Where


@pytest.fixture(autouse=True)
def _no_global_logging_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``main`` configures structlog (its job as the CLI); undo it for the other tests."""
    for var in ("CLEW_HOME", "CLEW_FAULT_KILL_AFTER_EVENTS", "CLEW_FAULT_KILL_BEFORE_TOOL"):
        monkeypatch.delenv(var, raising=False)
    yield
    structlog.reset_defaults()


@pytest.fixture
def empty(tmp_path: Path) -> Where:
    """A home that does not exist yet and an empty project directory."""
    where = Where(tmp_path / "home", tmp_path / "project")
    where.project.mkdir()
    return where
