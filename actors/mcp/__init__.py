"""MCP servers' tools as clew tools (the ``mcp`` extra): ``mcp_tools(server)``.

``from actors.mcp import mcp_tools`` does not import the ``mcp`` SDK; calling it does
(importing ``actors`` never does). ``server`` is a :class:`StdioServer` (a command
clew starts and talks to over stdin/stdout) or a streamable HTTP URL. Modules: ``servers``
(where a server is), ``tools`` (the tool set and its background event loop). See docs/mcp.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.errors import McpUnavailable
from actors.mcp.servers import StdioServer, server_name

if TYPE_CHECKING:
    from actors.mcp.tools import McpTool, McpTools

__all__ = ["McpTool", "McpTools", "StdioServer", "mcp_tools"]


def mcp_tools(
    server: StdioServer | str,
    *,
    start_timeout_s: float = 30.0,
    call_timeout_s: float | None = 120.0,
    prefix: str = "",
) -> McpTools:
    """Connect to ``server``, list its tools once, and return them as clew tools.

    The returned :class:`McpTools` is a sequence of tools (pass it as ``tools=``) that
    owns the connection: close it with ``close()`` or use it as a context manager.

    Args:
        server: a :class:`StdioServer`, or the URL of a streamable HTTP server.
        start_timeout_s: seconds to start, connect, initialize and list the tools.
        call_timeout_s: seconds one call may take (the tools' ``timeout_s``).
        prefix: put before every tool's name (two servers with the same tool names).

    Raises:
        McpUnavailable: the extra is not installed, or the server cannot be started,
            reached or listed within ``start_timeout_s``.
        UsageError: ``server`` is neither a ``StdioServer`` nor an http(s) URL.
    """
    server_name(server)  # refuses anything else before importing the SDK
    try:
        from actors.mcp.tools import McpTools  # noqa: PLC0415 - the SDK on demand
    except ImportError as e:
        raise McpUnavailable(
            f"MCP tools need the mcp extra ({e}): pip install 'clew[mcp]'"
        ) from None
    return McpTools(
        server, start_timeout_s=start_timeout_s, call_timeout_s=call_timeout_s, prefix=prefix
    )


def __getattr__(name: str) -> Any:
    if name in ("McpTool", "McpTools"):
        from actors.mcp import tools  # noqa: PLC0415 - the SDK on demand

        return getattr(tools, name)
    raise AttributeError(f"module 'actors.mcp' has no attribute {name!r}")
