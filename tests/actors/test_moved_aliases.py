"""Every old module name in ``actors.moved.MOVED`` still imports, loudly (house style 34)."""

from __future__ import annotations

import importlib
import sys

import pytest

from actors.moved import MOVED  # importing actors installs the finder of moved modules
from actors.runtime import engine, status


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_name_warns_with_its_new_path_and_reads_the_new_module(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        alias = importlib.import_module(old)
    target = importlib.import_module(new)
    public = [n for n in vars(target) if not n.startswith("_")]
    assert public
    assert all(getattr(alias, n) is getattr(target, n) for n in public)
    sys.modules.pop(old, None)


def test_names_documented_at_a_module_that_no_longer_defines_them_still_import() -> None:
    # docs/events.md of 0.2 names `OPEN_RUN_STATUSES` (actors/runtime/engine.py); 0.3
    # defines it in actors.runtime.status (what `clew sessions` imports without an engine)
    assert engine.OPEN_RUN_STATUSES is status.OPEN_RUN_STATUSES
