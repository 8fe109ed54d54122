"""Recipes: the names a queued run records so any serving process can build its model,
tools and team — to run it, and to resume it after its first process died.

An application registers them once (``clew serve --app module:callable``, or
``Runtime.serve(recipes=…)``): each recipe is a function of a :class:`RecipeContext`
returning a fresh model (chain), tool list or team. A fresh one per run: a scripted or
stateful model is never shared between sessions. The built-in ``demo`` model and tools
recipes (the scripted demo scenario) are always there unless the app replaces them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from actors.demo import demo_model, demo_tools
from actors.errors import UsageError
from actors.models.chains import ModelArg
from actors.models.tools import Tool
from actors.orchestration.team import Team
from actors.runtime.coord.protocol import RunSpec
from eventlog.errors import quoted


@dataclass(frozen=True, kw_only=True)
class RecipeContext:
    """What a recipe may use: the session and its project directory (its Task WALs and
    the demo's notes file live there) and the environment provider keys come from."""

    session_id: str
    project_dir: Path
    environ: Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class Built:
    """A run's model, tools and team, built from its recipe names."""

    model: ModelArg
    tools: list[Tool]
    team: Team | None


def _demo_model(_: RecipeContext) -> ModelArg:
    return demo_model(3)


def _demo_tools(ctx: RecipeContext) -> list[Tool]:
    return demo_tools(ctx.project_dir)


@dataclass(frozen=True, kw_only=True)
class Recipes:
    """The model, tools and team recipes of an application, by name."""

    models: Mapping[str, Callable[[RecipeContext], ModelArg]] = field(default_factory=dict)
    tools: Mapping[str, Callable[[RecipeContext], Sequence[Tool]]] = field(default_factory=dict)
    teams: Mapping[str, Callable[[RecipeContext, Sequence[Tool]], Team]] = field(
        default_factory=dict
    )

    def with_demo(self) -> Recipes:
        """Return these recipes plus the built-in ``demo`` ones (the app's win)."""
        return Recipes(
            models={"demo": _demo_model, **self.models},
            tools={"demo": _demo_tools, **self.tools},
            teams=dict(self.teams),
        )

    def check(self, spec: RunSpec) -> None:
        """Refuse a run naming a recipe that is not registered.

        Raises:
            UsageError: naming the missing recipe and the registered ones.
        """
        for kind, name, known in (
            ("model", spec.model, self.models),
            ("tools", spec.tools, self.tools),
            ("team", spec.team, self.teams),
        ):
            if name is not None and name not in known:
                names = ", ".join(sorted(known)) or "none"
                raise UsageError(
                    f"no {kind} recipe named {quoted(name)} is registered (known: {names});"
                    " register it in the app given to clew serve --app"
                )

    def build(self, spec: RunSpec, ctx: RecipeContext) -> Built:
        """Build the model, tools and team ``spec`` names (``check`` first)."""
        self.check(spec)
        tools = list(self.tools[spec.tools](ctx)) if spec.tools is not None else []
        team = self.teams[spec.team](ctx, tools) if spec.team is not None else None
        return Built(model=self.models[spec.model](ctx), tools=tools, team=team)


def load_app(ref: str) -> Recipes:
    """Import ``module:callable`` and call it; it returns the app's :class:`Recipes`.

    Raises:
        UsageError: a malformed reference, a module or callable that cannot be found, or
            a callable that does not return ``Recipes``.
    """
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--app {quoted(ref)} is not of the form module:callable")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(f"--app {quoted(ref)}: cannot import {quoted(module_name)}: {e}") from e
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise UsageError(f"--app {quoted(ref)}: {quoted(attr)} is not a callable of the module")
    recipes = factory()
    if not isinstance(recipes, Recipes):
        raise UsageError(f"--app {quoted(ref)} returned {type(recipes).__name__}, not Recipes")
    return recipes
