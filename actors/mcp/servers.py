"""Where an MCP server is: a command to start (:class:`StdioServer`) or a URL."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from actors.errors import UsageError


@dataclass(frozen=True)
class StdioServer:
    """An MCP server clew starts as a child process and talks to over stdio.

    ``env`` is added to a minimal default environment (the SDK's: ``HOME``, ``PATH``, …),
    not to this process's whole environment.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    #: Shown in errors; the command line by default.
    label: str = field(default="", compare=False)

    def describe(self) -> str:
        """The server as errors name it."""
        return self.label or " ".join([self.command, *self.args])


def server_name(server: StdioServer | str) -> str:
    """``server`` as errors name it; refuses anything but a ``StdioServer`` or an http(s) URL."""
    if isinstance(server, StdioServer):
        return f"the MCP server {server.describe()!r}"
    if isinstance(server, str) and server.startswith(("http://", "https://")):
        return f"the MCP server at {server}"
    raise UsageError(
        f"an MCP server is a StdioServer(command, args) or an http(s):// URL, not {server!r}"
    )
