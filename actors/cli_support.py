"""What the ``clew`` CLI does besides printing: models from spec strings, session recipes,
read-only Task WAL inspection, verification, export rows.

Kept apart from ``actors/cli.py`` (typer commands) and ``actors/cli_render.py`` (rich
output) so each stays one idea. Nothing here prints; errors are :class:`CliError` with
one sentence for the user.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import msgspec

from actors.demo import demo_model, demo_tools
from actors.model import Model
from actors.providers import ProviderConfigError, model_from_spec, parse_spec
from actors.providers import anthropic as anthropic_provider
from actors.providers import openai as openai_provider
from actors.scripted import ScriptedModel, ScriptError
from actors.tools import Tool
from eventlog.blocks import ContentBlock
from eventlog.errors import ClewError, TaskGraphError, TaskWalError
from eventlog.events import RunStarted
from eventlog.records import SessionRow, StoredEvent
from eventlog.sqlite_store import SQLiteStore
from eventlog.taskwal import replay_wal, wal_dir
from projections.rebuild import verify as verify_projections
from projections.taskdag import Task, TaskDag
from projections.tree import NodeTree

#: Seconds the pre-flight TCP probe of a provider waits before calling it unreachable.
PROBE_TIMEOUT = 3.0
SPEC_FORMS = "scripted:PATH, openai:<model> or anthropic:<model>"


class CliError(ClewError):
    """Bad input or a refused request: one sentence on stderr, exit 2, nothing written."""


# --- models ------------------------------------------------------------------------------


class ModelRecipe(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How a session's models were built: stored in its ``session_created`` metadata so
    ``clew resume`` can build them again (see docs/cli.md, "Which model resumes")."""

    scenario: str  # "demo" | "run"
    workers: int | None = None  # demo
    model: str | None = None  # run: the --model spec
    fallback: list[str] = msgspec.field(default_factory=list)  # run: --fallback specs
    base_url: str | None = None  # run: --base-url


def build_model(
    spec: str, *, env: Mapping[str, str], base_url: str | None, delay_ms: int | None = None
) -> Model:
    """Return the model named by ``spec``: ``scripted:PATH`` or a provider spec.

    Raises:
        CliError: an unreadable or invalid script, or a bad provider spec / config.
    """
    if spec.startswith("scripted:"):
        path = spec.removeprefix("scripted:")
        if not path:
            raise CliError(f"model spec {spec!r} names no script file; use scripted:PATH.")
        try:
            return ScriptedModel(Path(path), name=spec, delay_ms=delay_ms)
        except ScriptError as e:
            raise CliError(str(e)) from e
    scheme = spec.partition(":")[0]
    if ":" not in spec or scheme not in ("openai", "anthropic"):
        raise CliError(f"unknown model spec {spec!r}; expected {SPEC_FORMS}")
    try:
        return model_from_spec(spec, env=env, base_url=base_url)
    except ProviderConfigError as e:
        raise CliError(str(e).strip().rstrip(".")) from e


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


def check_reachable(specs: Sequence[str], env: Mapping[str, str], base_url: str | None) -> None:
    """Refuse the run when no candidate model can be reached (scripted ones always can).

    Raises:
        CliError: naming the first candidate and why it could not be reached.
    """
    failures: list[str] = []
    for spec in specs:
        url = provider_url(spec, env, base_url)
        if url is None:
            return
        why = probe(url)
        if why is None:
            return
        failures.append(f"cannot reach {spec} at {url} ({why})")
    if failures:
        more = f" (and {len(failures) - 1} fallback(s) failed too)" if len(failures) > 1 else ""
        raise CliError(f"{failures[0]}{more}; is the server running, or is --base-url right?")


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
        CliError: the session was not created by the CLI and no ``--model`` was given.
    """
    try:
        recipe = msgspec.convert(row.metadata, ModelRecipe)
    except msgspec.ValidationError:
        recipe = None
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
    raise CliError(
        f"session {row.session_id} was not created by clew demo or clew run, so its model is"
        " unknown; pass --model SPEC"
    )


# --- runs ----------------------------------------------------------------------------------


def main_run_ids(store: SQLiteStore, sid: str) -> list[str]:
    """Return the session's main (Brain) runs in start order."""
    brain = f"{sid}:brain"
    return [r.run_id for r in store.read_runs(sid) if r.agent_id == brain]


def resolve_run(store: SQLiteStore, sid: str, run: str) -> str:
    """Accept a full run id or one relative to the session (``brain:r1``).

    Raises:
        CliError: the session has no such run.
    """
    known = {r.run_id for r in store.read_runs(sid)}
    for candidate in (run, f"{sid}:{run}"):
        if candidate in known:
            return candidate
    raise CliError(f"session {sid} has no run {run!r}")


def run_inputs(events: Sequence[StoredEvent], run_id: str) -> dict[str, Any]:
    """Return the recorded inputs of a main run (its ``run_started`` metadata)."""
    for e in events:
        if e.run_id == run_id and isinstance(e.event, RunStarted):
            return dict(e.event.metadata)
    return {}


# --- Task WALs (read-only) -------------------------------------------------------------


def wal_name(run_id: str) -> str:
    """Return the Task WAL name of a main run: ``sess_x:brain:r1`` → ``sess_x_brain_r1``."""
    return run_id.replace(":", "_").replace("/", "_")


class WalStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One Task WAL, replayed without touching the file (a torn tail is reported, not cut)."""

    name: str
    path: str
    exists: bool
    lines: int = 0
    truncated_tail: bool = False
    truncated_bytes: int = 0
    available: bool = True
    error: str | None = None


def inspect_wals(
    project_dir: Path, sid: str, run_ids: Sequence[str]
) -> list[tuple[WalStatus, list[Task]]]:
    """Replay every Task WAL of the session read-only: the main runs' first, then any other.

    Same rules as ``TaskManager.open`` (a DAG-refused line makes the WAL unavailable),
    but ``repair=False``: a read-only command never changes a file.
    """
    directory = wal_dir(project_dir, sid)
    names = [wal_name(r) for r in run_ids]
    if directory.is_dir():
        suffix = ".wal.jsonl"
        found = sorted(p.name[: -len(suffix)] for p in directory.glob(f"*{suffix}"))
        names += [n for n in found if n not in names]
    # The latest main run's WAL is listed even before its first line is written.
    latest = wal_name(run_ids[-1]) if run_ids else None
    out: list[tuple[WalStatus, list[Task]]] = []
    for name in names:
        path = directory / f"{name}.wal.jsonl"
        if not path.exists():
            if name == latest:
                out.append((WalStatus(name=name, path=str(path), exists=False), []))
            continue
        try:
            result = replay_wal(path, repair=False)
            dag = TaskDag.rebuild(r.event for r in result.records)
        except (TaskWalError, TaskGraphError) as e:
            out.append((WalStatus(name=name, path=str(path), exists=True, available=False,
                                  error=str(e)), []))
            continue
        status = WalStatus(
            name=name,
            path=str(path),
            exists=True,
            lines=result.lines,
            truncated_tail=result.truncated_tail,
            truncated_bytes=result.truncated_bytes,
        )
        out.append((status, dag.tasks()))
    return out


def tasks_doc(project_dir: Path, store: SQLiteStore, sid: str) -> dict[str, Any]:
    """Return ``clew tasks --json``: every task of every WAL, the latest WAL, all WALs."""
    runs = main_run_ids(store, sid)
    wals = inspect_wals(project_dir, sid, runs)
    latest = wal_name(runs[-1]) if runs else None
    current = next((w for w, _ in wals if w.name == latest), wals[-1][0] if wals else None)
    return {
        "session_id": sid,
        "tasks": [
            {"id": t.task_id, "status": t.status, "deps": list(t.deps), "title": t.title,
             "owner": t.owner, "result_summary": t.result_summary, "wal": w.name}
            for w, tasks in wals for t in tasks
        ],
        "wal": None if current is None else msgspec.to_builtins(current),
        "wals": [msgspec.to_builtins(w) for w, _ in wals],
    }


def tree_doc(
    sid: str, tree: NodeTree, excerpt: Callable[[list[ContentBlock]], str]
) -> dict[str, Any]:
    """Return ``clew show --json``: every node (flat, node_seq order) and the active path."""
    active = tree.active_path_ids()
    on_path = set(active)
    nodes = [
        {
            "node_id": n.node_id,
            "parent_id": n.parent_id,
            "node_seq": n.node_seq,
            "agent_id": n.agent_id,
            "run_id": n.run_id,
            "role": n.role,
            "node_type": n.node_type,
            "created_at": n.created_at,
            "text": excerpt(n.content),
            "children": tree.children(n.node_id),
            "on_active_path": n.node_id in on_path,
        }
        for n in tree.rows()
    ]
    return {"session_id": sid, "active_node_id": tree.active_node_id, "active_path": active,
            "roots": tree.roots(), "branch_points": tree.branch_points(), "nodes": nodes}


# --- verify ----------------------------------------------------------------------------


class SessionCheck(msgspec.Struct, frozen=True, kw_only=True):
    """``clew verify`` for one session."""

    session_id: str
    ok: bool
    events: int
    problems: list[str]
    wals: list[WalStatus]


def check_session(store: SQLiteStore, project_dir: Path, sid: str) -> SessionCheck:
    """Rebuild the session's projections from its events, compare them with the stored
    rows, and replay every Task WAL of the session; collect every problem found."""
    problems: list[str] = []
    events = 0
    try:
        report = verify_projections(store, sid)
        events = report.events
        problems += [f"integrity: {p}" for p in report.integrity_errors]
        problems += [str(d) for d in report.differences]
    except ClewError as e:
        problems.append(f"cannot rebuild the session from its events: {e}")
    wals = [w for w, _ in inspect_wals(project_dir, sid, main_run_ids(store, sid))]
    problems += [f"task WAL {w.name}: {w.error}" for w in wals if not w.available]
    return SessionCheck(
        session_id=sid, ok=not problems, events=events, problems=problems, wals=wals
    )


# --- export ----------------------------------------------------------------------------


def event_row(e: StoredEvent) -> dict[str, Any]:
    """Return one event as ``clew export`` / ``timeline --json`` print it."""
    return {
        "seq": e.seq,
        "run_id": e.run_id,
        "run_seq": e.run_seq,
        "event_type": e.event_type,
        "node_id": e.node_id,
        "agent_id": e.agent_id,
        "level": e.level,
        "tool_call_id": e.tool_call_id,
        "event_id": e.event_id,
        "created_at": e.created_at,
        "payload": msgspec.to_builtins(e.event),
    }


def default_home(env: Mapping[str, str], home: str | None) -> Path:
    """Return ``--home`` / ``$CLEW_HOME`` / ``~/.clew``."""
    return Path(home or env.get("CLEW_HOME") or os.path.expanduser("~/.clew")).expanduser()
