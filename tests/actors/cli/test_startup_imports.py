"""The CLI imports what a command runs (issue 34): ``clew --version`` and ``clew --help``
load no runtime, ``clew sessions`` and ``clew show`` no orchestration, no provider and no
httpx. Each case runs ``clew`` in a fresh interpreter and lists the modules it imported,
so an import that creeps back into ``actors/cli/main.py`` (or into what opening a home
needs) fails here, not as a slower start nobody notices.

The table of commands in :mod:`actors.cli.app` names each command's module and help
line; the last tests keep it equal to what the modules register.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from _cli_helpers import Where, invoke

import actors.cli
from actors.cli.app import COMMANDS, app

ROOT = Path(__file__).resolve().parents[3]

#: Runs ``clew ARGV…`` as ``python -m actors`` does, then prints the imported modules.
LIST_IMPORTS = (
    "import json, runpy, sys\n"
    "sys.argv = ['clew', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('actors', run_name='__main__')\n"
    "except SystemExit as e:\n"
    "    code = e.code\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
)

#: What no start of the CLI should import before a command needs it; structlog (with the
#: rich and attrs its dev renderer loads) comes at the first log record.
RUNTIME = ("actors.orchestration", "actors.models.providers", "httpx", "structlog")
#: ``--version`` and ``--help`` open no home: none of these either.
NO_HOME = (*RUNTIME, "actors.runtime", "pydantic", "apsw", "actors.cli.read_commands")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Where, str]:
    """One finished demo session, recorded once for the module (read only)."""
    base = tmp_path_factory.mktemp("startup")
    where = Where(base / "home", base / "project")
    where.project.mkdir()
    result = invoke(where, "demo", "--json")
    assert 0 == result.code, result.err
    return where, result.json()["session_id"]


def imported(*argv: str) -> tuple[int, list[str]]:
    """Run ``clew ARGV`` in a fresh interpreter; return its exit code and its modules."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", LIST_IMPORTS, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    report = json.loads(result.stderr.splitlines()[-1])
    return report["code"], report["modules"]


def under(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    """The packages of ``packages`` that ``modules`` holds (a package or anything in it)."""
    return [p for p in packages if any(m == p or m.startswith(p + ".") for m in modules)]


# A bare ``clew`` prints the help page and exits 2, as click's groups do.
@pytest.mark.parametrize(("argv", "exit_code"), [(["--version"], 0), (["--help"], 0), ([], 2)])
def test_version_and_help_open_no_home_and_load_no_runtime(argv: list[str], exit_code: int) -> None:
    code, modules = imported(*argv)

    assert (exit_code, []) == (code, under(modules, NO_HOME))


@pytest.mark.parametrize("command", ["sessions", "show"])
def test_sessions_and_show_load_no_orchestration_no_provider_no_httpx_no_structlog(
    demo: tuple[Where, str], command: str
) -> None:
    where, sid = demo
    args = ["--home", str(where.home), "--project", str(where.project)]
    argv = [command, *args] if command == "sessions" else [command, sid, *args]

    code, modules = imported(*argv)

    assert (0, []) == (code, under(modules, RUNTIME))


@pytest.mark.parametrize("argv", [["call", "last", "--json"], ["call", "1"], ["calls"]])
def test_call_and_calls_load_no_orchestration_no_provider_no_httpx(
    demo: tuple[Where, str], argv: list[str]
) -> None:
    # (the providers' request bodies only for ``clew call --as``)
    where, sid = demo
    args = ["--home", str(where.home), "--project", str(where.project), "--no-pager"]
    args = args if argv[0] == "call" else args[:-1]

    code, modules = imported(argv[0], sid, *argv[1:], *args)

    assert (0, []) == (code, under(modules, RUNTIME))


#: What ``clew sessions`` reads without (issue 34): no runtime — the engine, its writer and
#: actors (``actors.runtime.status.StatusReader`` reads the store) — no pydantic (typer's
#: coercion: actors/cli/plain_values.py) and, off a terminal, no rich
#: (actors/cli/plain_table.py). ``clew show`` draws with rich, and needs none of the rest.
NOT_FOR_SESSIONS = (
    "actors.runtime.engine",
    "actors.runtime.runtime",
    "actors.runtime.session",
    "eventlog.writer",
    "pykka",
    "pydantic",
    "pydantic_core",
)


@pytest.mark.parametrize(
    ("command", "heavy"), [("sessions", (*NOT_FOR_SESSIONS, "rich")), ("show", NOT_FOR_SESSIONS)]
)
def test_sessions_and_show_open_no_runtime_and_load_no_pydantic(
    demo: tuple[Where, str], command: str, heavy: tuple[str, ...]
) -> None:
    where, sid = demo
    args = ["--home", str(where.home), "--project", str(where.project)]
    head, page = ([command], ["--limit", "50"]) if command == "sessions" else ([command, sid], [])
    for extra in ([], ["--json"], page):
        argv = [*head, *args, *extra]

        code, modules = imported(*argv)

        assert (0, []) == (code, under(modules, heavy)), argv


def test_sessions_imports_only_its_own_command_module(demo: tuple[Where, str]) -> None:
    where, _ = demo

    code, modules = imported("sessions", "--home", str(where.home), "--project", str(where.project))

    commands = sorted({f"actors.cli.{c.module}" for c in COMMANDS})
    assert (0, ["actors.cli.read_commands"]) == (code, [m for m in commands if m in modules])


def _import_every_cli_module() -> None:
    """Import every module of ``actors/cli``: a command registered by a module the table
    does not name would otherwise never be imported, and never be seen missing."""
    for module in pkgutil.iter_modules(actors.cli.__path__):
        importlib.import_module(f"actors.cli.{module.name}")


def _registered() -> dict[str, str]:
    """Every command the modules of ``actors/cli`` register: name → its docstring's first
    paragraph, on one line (as the table holds it)."""
    _import_every_cli_module()
    found = {}
    for info in app.registered_commands:
        assert info.callback is not None
        name = info.name or typer.main.get_command_name(info.callback.__name__)
        first = (inspect.getdoc(info.callback) or "").split("\n\n")[0]
        found[name] = " ".join(first.split())
    return found


def test_the_table_lists_every_registered_command_once_with_its_own_help_line() -> None:
    table = {c.name: c.help for c in COMMANDS}

    assert len(COMMANDS) == len(table)
    assert _registered() == table


def test_each_command_is_registered_by_the_module_the_table_names() -> None:
    _import_every_cli_module()
    modules = {
        (info.name or typer.main.get_command_name(info.callback.__name__)): (
            info.callback.__module__
        )
        for info in app.registered_commands
        if info.callback is not None
    }

    assert {c.name: f"actors.cli.{c.module}" for c in COMMANDS} == modules
