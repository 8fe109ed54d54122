"""The mcp extra is optional: importing ``actors`` (or ``actors.mcp``) never imports the
SDK, and ``mcp_tools`` without it is one clear refusal. These run without the extra."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _processes import child_env

from actors.errors import UsageError
from actors.mcp import mcp_tools


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True
    )


def test_importing_actors_and_the_cli_does_not_import_mcp() -> None:
    done = run(
        "import sys, actors, actors.cli, actors.mcp\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'mcp')\n"
        "assert not loaded, loaded\n"
    )

    assert 0 == done.returncode, done.stderr


def test_without_the_extra_mcp_tools_is_refused_in_one_line() -> None:
    done = run(
        "import sys\n"
        "sys.modules['mcp'] = None  # as if the extra were not installed\n"
        "from actors.errors import McpUnavailable\n"
        "from actors.mcp import StdioServer, mcp_tools\n"
        "try:\n"
        "    mcp_tools(StdioServer('some-server'))\n"
        "except McpUnavailable as e:\n"
        "    print(e)\n"
    )

    assert 0 == done.returncode, done.stderr
    assert "pip install 'clew[mcp]'" in done.stdout
    assert 1 == len(done.stdout.splitlines())


def test_anything_but_a_stdio_server_or_an_http_url_is_a_usage_error() -> None:
    for bad in ("ftp://example.invalid/mcp", "server.py", 42):
        with pytest.raises(UsageError, match="StdioServer"):
            mcp_tools(bad)  # type: ignore[arg-type]
