"""The ``clew`` command line (typer + rich); ``main`` is the console script.

``app`` (the typer app) · ``run_commands`` / ``read_commands`` / ``check_commands`` /
``session_commands`` (the commands) · ``options`` (home, project, opening) · ``output``
(JSON, errors, exit codes) · ``recipes`` (models from spec strings) · ``team_file`` (team
files, TOML) · ``docs`` (JSON documents) · ``render`` (rich output) · ``logs`` (structlog
configuration).
"""

from actors.cli.main import main

__all__ = ["main"]
