"""The modules of clew's three packages, by name, for tests that check every one of them."""

from __future__ import annotations

import importlib
from pathlib import Path

#: The layers, bottom first: each may import only the ones before it.
PACKAGES = ("eventlog", "projections", "actors")


def module_names(package: str) -> list[str]:
    """Every module of ``package``, the package itself included, sorted.

    Read from the files: ``pkgutil.walk_packages`` does not enter a directory without an
    ``__init__.py`` (a namespace package, like ``actors/orchestration/``), and would miss
    its modules. ``__main__`` modules are left out: importing one runs the CLI.
    """
    root = Path(importlib.import_module(package).__file__ or "").parent
    names = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts[-1] != "__main__":
            names.append(".".join(parts))
    return sorted(names)
