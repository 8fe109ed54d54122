"""Team files: a team defined in TOML for ``clew run --team`` and ``clew demo``.

The file is validated with pydantic (unknown keys refused) and turned into a
:class:`~actors.orchestration.team.Team`. A tool is named either by a tool the command
provides (``clew demo``: ``lookup``, ``save_note``) or by an import reference
``module:attribute`` (a module beside the team file, or on ``sys.path``); a role's
typed ``output`` is an import reference to a pydantic model; a ``model`` is a model
spec (``openai:…``, ``anthropic:…``, ``scripted:PATH``) or a list of them. Every problem
is one :class:`~actors.errors.UsageError` sentence naming the file (exit 2), raised
before anything is written. The format: docs/runtime.md, "Define your team".
"""

from __future__ import annotations

import importlib
import sys
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pydantic

from actors.errors import TeamError, UsageError
from actors.models.protocol import Model, ModelSettings
from actors.models.tools import Tool
from actors.orchestration.checks import Check
from actors.orchestration.team import Role, Team, resolve
from actors.recording.recorded import RecordedModel

#: The team of ``clew demo``, shipped with the package.
DEMO_TEAM = Path(__file__).resolve().parents[1] / "demo_team.toml"

_FORBID = pydantic.ConfigDict(extra="forbid")
Specs = str | list[str]


class SettingsFile(pydantic.BaseModel):
    model_config = _FORBID
    max_tokens: int | None = pydantic.Field(default=None, ge=1)
    temperature: float | None = pydantic.Field(default=None, ge=0)


class RouterFile(pydantic.BaseModel):
    model_config = _FORBID
    instructions: str = ""
    model: Specs | None = None
    settings: SettingsFile | None = None


class RoleFile(pydantic.BaseModel):
    model_config = _FORBID
    name: str
    description: str = ""
    instructions: str = ""
    tools: list[str] | None = None
    model: Specs | None = None
    settings: SettingsFile | None = None
    output: str | None = None
    extends: str | None = None


class CheckFile(pydantic.BaseModel):
    model_config = _FORBID
    name: str
    command: str
    timeout_s: float | None = pydantic.Field(default=300.0, gt=0)


class TeamFile(pydantic.BaseModel):
    model_config = _FORBID
    instructions: str = ""
    primary: str | None = None
    reviewer: str | None = None
    #: Tools every role may call.
    tools: list[str] = []
    router: RouterFile | None = None
    roles: list[RoleFile] = []
    #: Commands run on each answer (a failure starts a fix): ``[[checks]]``.
    checks: list[CheckFile] = []


class _Loader:
    """Turns one parsed team file into a ``Team``; every refusal names the file."""

    def __init__(
        self, path: Path, tools: Mapping[str, Tool], build_model: Callable[[str], Model]
    ) -> None:
        self.path = path
        self.tools = tools
        self.build_model = build_model

    def refuse(self, why: str) -> UsageError:
        return UsageError(f"team file {self.path}: {why}")

    def team(self, spec: TeamFile) -> Team:
        return Team(
            instructions=spec.instructions,
            roles=[self.role(r) for r in spec.roles],
            primary=spec.primary,
            reviewer=spec.reviewer,
            router=self.router(spec.router) if spec.router is not None else None,
            tools=[self.tool(n) for n in spec.tools],
            checks=[self.check(c) for c in spec.checks],
        )

    def check(self, c: CheckFile) -> Check:
        try:
            return Check(c.name, command=c.command, timeout_s=c.timeout_s)
        except TeamError as e:
            raise self.refuse(str(e).removeprefix("team: ")) from e

    def role(self, r: RoleFile) -> Role:
        return Role(
            r.name,
            description=r.description,
            instructions=r.instructions,
            tools=[self.tool(n) for n in r.tools] if r.tools is not None else None,
            model=self.models(r.model),
            settings=_settings(r.settings),
            output=self.output(r.output) if r.output is not None else None,
            extends=r.extends,
        )

    def router(self, r: RouterFile) -> Role:
        return Role(
            "router",
            instructions=r.instructions,
            model=self.models(r.model),
            settings=_settings(r.settings),
        )

    def models(self, specs: Specs | None) -> list[Model] | None:
        if specs is None:
            return None
        return [self.build_model(s) for s in ([specs] if isinstance(specs, str) else specs)]

    def tool(self, ref: str) -> Tool:
        if ref in self.tools:
            return self.tools[ref]
        if ":" not in ref:
            known = ", ".join(sorted(self.tools)) or "none"
            raise self.refuse(
                f"unknown tool {ref!r} (tools here: {known}; or name one as module:attribute)"
            )
        found = self.imported(ref)
        if not isinstance(found, Tool):
            raise self.refuse(f"{ref} is not a tool (a name, description, args_model and call)")
        return found

    def output(self, ref: str) -> type[pydantic.BaseModel]:
        found = self.imported(ref)
        if not (isinstance(found, type) and issubclass(found, pydantic.BaseModel)):
            raise self.refuse(f"output {ref} is not a pydantic model class")
        return found

    def imported(self, ref: str) -> Any:
        module, _, attribute = ref.partition(":")
        # Modules beside the team file come first, as a script's neighbours do.
        sys.path.insert(0, str(self.path.parent))
        try:
            return getattr(importlib.import_module(module), attribute)
        except ImportError as e:
            raise self.refuse(f"cannot import {module}: {e}") from e
        except AttributeError as e:
            raise self.refuse(f"{module} has no attribute {attribute!r}") from e
        finally:
            sys.path.remove(str(self.path.parent))


def _settings(s: SettingsFile | None) -> ModelSettings | None:
    if s is None:
        return None
    return ModelSettings(max_tokens=s.max_tokens, temperature=s.temperature)


def read_team_file(path: Path) -> TeamFile:
    """Read and validate a team file.

    Raises:
        UsageError: unreadable, not TOML, or not a valid team (the first problem).
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UsageError(f"cannot read team file {path}: {e.strerror or e}") from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"team file {path} is not valid TOML: {e}") from e
    try:
        return TeamFile.model_validate(data)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(file)"
        raise UsageError(f"team file {path}: invalid at {loc}: {first['msg']}") from e


def load_team(
    path: Path | str, *, tools: Mapping[str, Tool], build_model: Callable[[str], Model]
) -> Team:
    """Load the team file at ``path``, checked as a run would check it.

    Args:
        tools: the tools the command provides, by name.
        build_model: turns a model spec into a model (the CLI's ``build_model``).

    Raises:
        UsageError: the file is unreadable, invalid, names an unknown tool or an
            unimportable reference, or defines an unusable team (an ``extends`` cycle …).
    """
    path = Path(path)
    loader = _Loader(path, tools, build_model)
    team = loader.team(read_team_file(path))
    try:
        resolve(team, (), RecordedModel)
    except TeamError as e:
        raise loader.refuse(str(e).removeprefix("team: ")) from e
    return team
