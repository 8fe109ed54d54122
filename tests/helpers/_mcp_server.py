"""A real MCP server for the tests, written with the ``mcp`` SDK (FastMCP / MCPServer).

``python _mcp_server.py`` serves over stdio; ``python _mcp_server.py http PORT`` serves
streamable HTTP on ``127.0.0.1:PORT`` at ``/mcp``. Two tools: ``lookup`` (annotated
``readOnlyHint``) and ``append_note`` (not annotated: it appends a line to the file named
by ``NOTES_FILE``, so a test sees each real call).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]
from mcp.types import ToolAnnotations

server = Server("clew-test")

FACTS = {"clew": "an event-sourced actor runtime", "mcp": "the model context protocol"}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(topic: str) -> str:
    """Look a topic up in a tiny encyclopedia."""
    if topic not in FACTS:
        raise ToolError(f"no entry for {topic!r}")
    return f"{topic}: {FACTS[topic]}"


@server.tool()
def append_note(text: str, times: int = 1) -> str:
    """Append a note to the notebook; returns how many lines it now has."""
    path = Path(os.environ.get("NOTES_FILE", os.devnull))
    with path.open("a", encoding="utf-8") as f:
        f.writelines(f"{text}\n" for _ in range(times))
    lines = 0 if path == Path(os.devnull) else len(path.read_text().splitlines())
    return f"{lines} notes"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
