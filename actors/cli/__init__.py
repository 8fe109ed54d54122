"""The ``clew`` command line (typer + rich); ``main`` is the console script.

``app`` (the typer app) · ``run_commands`` / ``read_commands`` / ``check_commands`` /
``usage_command`` / ``session_commands`` (the commands) · ``tail`` (following a
session) · ``options`` (home, project, opening) · ``ids`` (ids, prefixes and
``last`` as typed) · ``output`` (JSON, errors, exit codes) · ``recipes`` (models from
spec strings) · ``team_file`` (team files, TOML) · ``render`` (rich output) · ``show``
(the folded node tree) · ``timeline_rows`` (the timeline's rows) · ``pager`` ($PAGER) ·
``logs`` (log level and format) · ``ui_command`` (``clew ui``: the web inspector,
``actors/ui``). The JSON documents and the one-line event summaries are
:mod:`actors.documents` (the read model the web inspector prints too).
"""

from actors.cli.main import main

__all__ = ["main"]
