"""``clew ui``: serve the web inspector (``actors/ui``; needs ``clew[ui]``) on a home.

It binds 127.0.0.1 unless told otherwise; any other address needs a token (``--token``,
else one is made and printed once). Approving the last pending call of a session resumes
it here, with the models and tools the CLI built it with (what ``clew resume`` does).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
from typing import TYPE_CHECKING, Annotated

import msgspec
import typer

from actors.cli.app import app
from actors.cli.options import Home, Project, Where, home_exists, open_runtime, where_from
from actors.cli.recipes import build_model, models_for_resume, recipe_of
from actors.cli.team_file import load_team
from actors.errors import UsageError
from actors.models.protocol import Model
from actors.runtime.runtime import Runtime

if TYPE_CHECKING:
    from actors.ui.server import UiServer

_log = logging.getLogger("clew.ui")


def is_loopback(host: str) -> bool:
    """True when ``host`` is only reachable from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resume_from_recipe(rt: Runtime, sid: str) -> None:
    """Continue ``sid`` as ``clew resume`` would: the models and tools of its recipe."""
    row = rt.store.read_session(sid)
    models, tools = models_for_resume(
        row,
        env=os.environ,
        project_dir=rt.session_dir(sid),
        slow_ms=None,
        override=[],
        base_url=None,
    )
    recipe = recipe_of(row)
    team = None
    if recipe is not None and recipe.team is not None:

        def model_of(spec: str) -> Model:
            return build_model(spec, env=os.environ, base_url=recipe.base_url)

        team = load_team(recipe.team, tools={t.name: t for t in tools}, build_model=model_of)
    try:
        outcome = rt.resume(sid, model=models, tools=tools, team=team)
    except Exception:
        _log.exception("resuming %s from the web inspector failed", sid)
        return
    _log.info("session %s resumed from the web inspector: %s", sid, outcome.status)


def _server(rt: Runtime, host: str, port: int, token: str | None, read_only: bool) -> UiServer:
    try:
        from actors.ui.server import UiServer  # noqa: PLC0415 - the optional extra
    except ImportError as e:
        raise UsageError(f"clew ui needs the ui extra: pip install 'clew[ui]' ({e})") from None
    resumer = None if read_only else resume_from_recipe
    return UiServer(rt, host=host, port=port, token=token, resumer=resumer)


@app.command()
def ui(
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="address to bind")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", metavar="PORT", min=0, max=65535, help="port (0: any)")
    ] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            help="required on every request (default: none on 127.0.0.1, else generated)",
            show_default=False,
        ),
    ] = None,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            help="open the home read-only (a read-only mount): every action is refused",
        ),
    ] = False,
    home: Home = None,
    project: Project = None,
) -> None:
    """Serve the web inspector: sessions, node tree, timeline, task DAG, usage, actions."""
    where = where_from(home, project)
    if read_only:
        where = msgspec.structs.replace(where, read_only=True)
    if token is not None and len(token) < 16:
        raise UsageError("--token must be at least 16 characters")
    if not home_exists(where):
        raise UsageError(f"{where.home} holds no sessions (clew demo makes one)")
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
    with open_runtime(where) as rt:
        server = _server(rt, host, port, token, where.read_only)
        print(f"clew ui: serving {_served(where)} at {server.url}", flush=True)
        if token is not None:
            print("open that address once: it sets the token's cookie", flush=True)
        print("Ctrl-C stops it", flush=True)
        server.run()
        print("clew ui: stopped", flush=True)


def _served(where: Where) -> str:
    """What the inspector shows: the home, or the PostgreSQL store without its password."""
    if where.store is None:
        return str(where.home)
    from eventlog.postgres.connections import redact  # noqa: PLC0415 - only on PostgreSQL

    return redact(where.store)
