"""How the ``clew`` CLI builds models: from spec strings, and again on resume from the
recipe a session was created with (its ``session_created`` metadata).

Nothing here prints; errors are :class:`~actors.errors.UsageError` with one sentence
for the user.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import msgspec

from actors.cli.output import clipped, quoted
from actors.cli.team_file import load_team
from actors.demo import demo_model, demo_tools
from actors.errors import ProviderConfigError, ScriptError, UsageError
from actors.models.protocol import Model
from actors.models.providers import anthropic as anthropic_provider
from actors.models.providers import model_from_spec, parse_spec
from actors.models.providers import openai as openai_provider
from actors.models.scripted import ScriptedModel
from actors.models.tools import Tool
from actors.orchestration.team import Team
from eventlog.records import SessionRow

if TYPE_CHECKING:
    from actors.orchestration.brain import RunKind

#: Seconds the pre-flight TCP probe of a provider waits before calling it unreachable.
PROBE_TIMEOUT = 3.0
SPEC_FORMS = "scripted:PATH, openai:<model> or anthropic:<model>"


# --- models ------------------------------------------------------------------------------


class ModelRecipe(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How a session's models were built: stored in its ``session_created`` metadata so
    ``clew resume`` can build them again (see docs/cli.md, "Which model resumes")."""

    scenario: str  # "demo" | "run"
    workers: int | None = None  # demo
    model: str | None = None  # run: the --model spec
    fallback: list[str] = msgspec.field(default_factory=list)  # run: --fallback specs
    base_url: str | None = None  # run: --base-url
    team: str | None = None  # run: the --team file (absolute)


def build_model(
    spec: str, *, env: Mapping[str, str], base_url: str | None, delay_ms: int | None = None
) -> Model:
    """Return the model named by ``spec``: ``scripted:PATH`` or a provider spec.

    Raises:
        UsageError: an unreadable or invalid script, or a bad provider spec / config.
    """
    if spec.startswith("scripted:"):
        path = spec.removeprefix("scripted:")
        if not path:
            raise UsageError(f"model spec {quoted(spec)} names no script file; use scripted:PATH.")
        try:
            return ScriptedModel(Path(path), name=spec, delay_ms=delay_ms)
        except ScriptError as e:
            raise UsageError(str(e)) from e
    scheme = spec.partition(":")[0]
    if ":" not in spec or scheme not in ("openai", "anthropic"):
        raise UsageError(f"unknown model spec {quoted(spec)}; expected {SPEC_FORMS}")
    try:
        return model_from_spec(spec, env=env, base_url=base_url)
    except ProviderConfigError as e:
        raise UsageError(str(e).strip().rstrip(".")) from e


def team_from_file(path: str, tools: Sequence[Tool], base_url: str | None) -> Team:
    """Load a team file (``--team FILE``); its model specs are built like ``--model``'s.

    Raises:
        UsageError: the file is not a valid team (see :func:`load_team`), or a bad spec.
    """

    def model_of(spec: str) -> Model:
        return build_model(spec, env=os.environ, base_url=base_url)

    return load_team(path, tools={t.name: t for t in tools}, build_model=model_of)


def provider_url(spec: str, env: Mapping[str, str], base_url: str | None) -> str | None:
    """Return the base URL a provider spec talks to; None for a scripted model."""
    if spec.startswith("scripted:"):
        return None
    scheme, _ = parse_spec(spec)
    if scheme == "openai":
        return base_url or env.get("OPENAI_BASE_URL") or openai_provider.DEFAULT_BASE_URL
    return base_url or env.get("ANTHROPIC_BASE_URL") or anthropic_provider.DEFAULT_BASE_URL


def probe(url: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """Open (and close) a TCP connection to ``url``'s host; return why it failed, or None."""
    parsed = httpx.URL(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.host, port), timeout=timeout):
            return None
    except OSError as e:
        return e.strerror or str(e) or type(e).__name__
    except UnicodeError:  # the host name cannot be encoded (IDNA: a label over 63 characters)
        return "invalid host name"


def check_reachable(specs: Sequence[str], env: Mapping[str, str], base_url: str | None) -> None:
    """Refuse the run when no candidate model can be reached (scripted ones always can).

    Raises:
        UsageError: naming the first candidate and why it could not be reached.
    """
    failures: list[str] = []
    for spec in specs:
        url = provider_url(spec, env, base_url)
        if url is None:
            return
        why = probe(url)
        if why is None:
            return
        failures.append(f"cannot reach {clipped(spec)} at {clipped(url)} ({why})")
    if failures:
        more = f" (and {len(failures) - 1} fallback(s) failed too)" if len(failures) > 1 else ""
        raise UsageError(f"{failures[0]}{more}; is the server running, or is --base-url right?")


def recipe_of(row: SessionRow) -> ModelRecipe | None:
    """Return how the CLI created the session (its ``session_created`` metadata), if it did."""
    try:
        return msgspec.convert(row.metadata, ModelRecipe)
    except msgspec.ValidationError:
        return None


def models_for_resume(
    row: SessionRow,
    *,
    env: Mapping[str, str],
    project_dir: Path,
    slow_ms: int | None,
    override: Sequence[str],
    base_url: str | None,
) -> tuple[list[Model], list[Tool]]:
    """Rebuild the model chain and tools a session was created with (or ``override``).

    Raises:
        UsageError: the session was not created by the CLI and no ``--model`` was given.
    """
    recipe = recipe_of(row)
    if override:
        models = [build_model(s, env=env, base_url=base_url, delay_ms=slow_ms) for s in override]
        tools = demo_tools(project_dir) if recipe and recipe.scenario == "demo" else []
        return models, tools
    if recipe is not None and recipe.scenario == "demo":
        return [demo_model(recipe.workers or 3, slow_ms or 0)], demo_tools(project_dir)
    if recipe is not None and recipe.scenario == "run" and recipe.model:
        url = base_url or recipe.base_url
        specs = [recipe.model, *recipe.fallback]
        return [build_model(s, env=env, base_url=url, delay_ms=slow_ms) for s in specs], []
    raise UsageError(
        f"session {row.session_id} was not created by clew demo or clew run, so its model is"
        " unknown; pass --model SPEC (or resume it in the application that made it)"
    )


def load_agent(ref: str) -> RunKind:
    """Import ``module:callable`` and call it: the framework agent a run was made by
    (``actors.pydantic_ai.DurableAgent``, ``actors.openai_agents.DurableRunner``), for
    ``clew resume --agent``.

    Raises:
        UsageError: a malformed reference, or a module or callable that cannot be found.
    """
    from actors.runtime.serving import call_factory  # noqa: PLC0415 - only for --agent

    agent: RunKind = call_factory(ref, "--agent")
    return agent


def resume_line(row: SessionRow) -> str:
    """Return the command that resumes the session: ``clew resume SESSION`` when the CLI
    made it (its recipe is recorded), else what ``clew resume`` needs to know."""
    sid = row.session_id
    recipe = recipe_of(row)
    if recipe is not None and (recipe.scenario == "demo" or recipe.model):
        return f"clew resume {sid}"
    return (
        f"clew resume {sid} --model SPEC [--team FILE] (an application made it, not clew"
        " run or demo, so its model is not recorded), or resume it in the application"
        " (Runtime.resume)"
    )


def replay_tools(row: SessionRow, project_dir: Path) -> list[Tool]:
    """Return the real tools of a session the CLI created (the demo's), for ``--live-tools``."""
    recipe = recipe_of(row)
    return demo_tools(project_dir) if recipe is not None and recipe.scenario == "demo" else []


# --- runs ----------------------------------------------------------------------------------


# --- Task WALs (read-only) -------------------------------------------------------------


# --- verify ----------------------------------------------------------------------------


# --- export ----------------------------------------------------------------------------
