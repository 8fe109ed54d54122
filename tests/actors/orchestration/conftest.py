"""Fixtures for the orchestration tests: a fresh runtime in a temporary home and project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.runtime.runtime import Runtime


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = Runtime(tmp_path / "home", tmp_path / "project")
    yield runtime
    runtime.close()
