"""Every name ``actors.__all__`` promises is importable (``SessionCheck`` and
``VerifyReport`` once were listed but not imported: ``from actors import *`` failed)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import actors


def test_every_name_of_all_is_an_attribute_of_the_package() -> None:
    assert [] == [name for name in actors.__all__ if not hasattr(actors, name)]


def test_star_import_works() -> None:
    namespace: dict[str, object] = {}
    exec("from actors import *", namespace)  # the statement under test
    assert set(actors.__all__) <= set(namespace)


def test_the_lazy_table_the_type_checkers_imports_and_all_name_the_same_names() -> None:
    # ``import actors`` imports a name's module at first use (``actors._EXPORTS``); type
    # checkers read the ``if TYPE_CHECKING:`` imports instead: the three must agree.
    tree = ast.parse(Path(actors.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If))
    for_checkers = {
        (node.module, alias.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    lazy = {(module, name) for module, names in actors._EXPORTS.items() for name in names}

    assert for_checkers == lazy
    assert sorted(actors.__all__) == sorted(name for _, name in lazy)


def test_import_actors_imports_no_public_module_until_a_name_is_used() -> None:
    code = "import sys, actors; print(sorted(m for m in sys.modules if m.startswith('actors')))"
    env = {**os.environ, "PYTHONPATH": str(Path(actors.__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout

    assert "['actors', 'actors.moved']" == out.strip()
