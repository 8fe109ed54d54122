"""Moved modules: every import path an earlier release documented keeps working, loudly.

When a module moves, its old dotted name goes in :data:`MOVED` (old → new). Importing
the old name (``import actors.providers``, ``from actors.providers import X``) gives an
alias module that forwards every attribute to the new one and raises a
``DeprecationWarning`` naming the new path (house style 34). A prefix covers what is
below it: ``actors.providers.openai`` is ``actors.models.providers.openai``.

The finder is appended to ``sys.meta_path`` by ``import actors``, so it is asked only
when no real module of that name exists: a module that still lives at its old path is
never shadowed. An alias lives no shorter than the release after next (docs/compatibility.md).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

#: Old dotted module name → the module that holds it now (since: the release it moved in).
MOVED: dict[str, str] = {
    # 0.1 docs/providers.md: ``from actors.providers import OpenAIChatModel, …``
    "actors.providers": "actors.models.providers",  # since 0.2.0
    # 0.1 docs/runtime.md names ``actors.plan.normalise_worker_reply``
    "actors.plan": "actors.orchestration.plan",  # since 0.2.0
    # 0.1 docs/tasks.md: ``from actors.task_manager import CreateTask, SetStatus, …``
    "actors.task_manager": "actors.tasks.manager",  # since 0.2.0
    # Issue 30: the live recording path left replay/ for its own room; fixes joined main_run.
    "actors.replay.recorder": "actors.recording.recorder",  # since 0.2.0
    "actors.replay.commits": "actors.recording.commits",  # since 0.2.0
    "actors.replay.inputs": "actors.recording.inputs",  # since 0.2.0
    "actors.replay.outcomes": "actors.recording.outcomes",  # since 0.2.0
    "actors.replay.recording": "actors.recording.recorded",  # since 0.2.0
    "actors.orchestration.fixes": "actors.orchestration.main_run",  # since 0.2.0
    # actors/runtime/ grouped by concept (issue 30); the paths docs/ once named:
    "actors.runtime.fork": "actors.runtime.branching",  # since 0.2.0
    "actors.runtime.handle": "actors.runtime.start",  # since 0.2.0
    "actors.runtime.recipes": "actors.runtime.serving",  # since 0.2.0
    "actors.runtime.rerun": "actors.runtime.branching",  # since 0.2.0
    "actors.runtime.resume": "actors.runtime.recovery",  # since 0.2.0
    "actors.runtime.served": "actors.runtime.branching",  # since 0.2.0
    "actors.runtime.verify": "actors.runtime.upkeep",  # since 0.2.0
    # the summaries both front ends print moved to the read model (issue 30)
    "actors.cli.summaries": "actors.documents.summaries",  # since 0.2.0
    # issue 36: the framework bridge is shared by both framework integrations
    "actors.pydantic_ai.run": "actors.recording.bridge",  # since 0.3.0
}


def new_name(old: str) -> str | None:
    """Return where the module once named ``old`` lives now, or None if it never moved."""
    for prefix, target in MOVED.items():
        if old == prefix or old.startswith(prefix + "."):
            return target + old[len(prefix) :]
    return None


class _Alias(ModuleType):
    """An old module name: every attribute is read from the module that holds it now."""

    def __init__(self, name: str, target: ModuleType) -> None:
        super().__init__(name, f"Deprecated alias of {target.__name__}.")
        self._clew_target = target
        if hasattr(target, "__path__"):
            self.__path__: list[str] = []  # a package: its old submodule names resolve too
        self.__all__ = list(getattr(target, "__all__", ()))

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._clew_target, attr)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._clew_target)))


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # stacklevel 2: warnings itself skips importlib's frames, so this names the importer
        warnings.warn(
            f"{spec.name} moved to {self.target}; import it from there "
            f"({spec.name} goes away no sooner than the release after next)",
            DeprecationWarning,
            stacklevel=2,
        )
        return _Alias(spec.name, importlib.import_module(self.target))

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the alias reads the new module."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        moved_to = new_name(fullname)
        if moved_to is None:
            return None
        if importlib.util.find_spec(moved_to) is None:  # the target itself is gone
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(moved_to))


_FINDER = _MovedFinder()


def install() -> None:
    """Let the old names of :data:`MOVED` import (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
