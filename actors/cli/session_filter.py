"""The session filters ``clew sessions`` and ``clew redrive`` share: ``--status``,
``--error PATTERN``, ``--model``, ``--role``, ``--since`` (:class:`SessionFilter`)."""

from __future__ import annotations

from typing import Annotated

import typer

from actors.runtime.status import SessionFilter

Status = Annotated[
    str | None, typer.Option("--status", metavar="STATUS", help="failed, interrupted, …")
]
Error = Annotated[
    str | None,
    typer.Option("--error", metavar="PATTERN", help="a regex on the failure's type: message"),
]
UsedModel = Annotated[
    str | None, typer.Option("--model", metavar="NAME", help="a model its last run called")
]
Role = Annotated[str | None, typer.Option("--role", metavar="ROLE", help="a role it called")]
Since = Annotated[
    str | None, typer.Option("--since", metavar="TIME", help="last event at/after (ISO-8601)")
]


def session_filter(
    status: str | None, error: str | None, model: str | None, role: str | None, since: str | None
) -> SessionFilter:
    """The filter the options give (every one None: every session)."""
    return SessionFilter(status=status, error=error, model=model, role=role, since=since)
