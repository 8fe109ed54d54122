"""The tree stays linted, formatted and typed: ruff and mypy run as part of the suite.

CI runs exactly the README's test command, so this is how "``ruff format`` checked in
CI" and "``mypy --strict`` clean" hold (house style 11 and 27). The rules and the reason
for each ignore are in ``pyproject.toml``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_finds_nothing() -> None:
    result = run("ruff", "check", "--no-cache", ".")
    assert 0 == result.returncode, result.stdout + result.stderr


def test_ruff_format_changes_nothing() -> None:
    result = run("ruff", "format", "--no-cache", "--check", ".")
    assert 0 == result.returncode, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_strict_finds_nothing_in_the_three_packages() -> None:
    # The packages and strictness come from [tool.mypy] in pyproject.toml.
    result = run("mypy", "--no-incremental")
    assert 0 == result.returncode, result.stdout + result.stderr


def test_every_test_module_has_a_basename_of_its_own() -> None:
    # The suite imports each test file as a top-level module (no __init__.py under tests/):
    # two files of one name in two folders stop the whole collection.
    names: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {} == {name: paths for name, paths in names.items() if len(paths) > 1}
