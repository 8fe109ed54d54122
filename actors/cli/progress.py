"""Live progress of a run on the terminal: one short line per step as its events land."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from eventlog.events import (
    AgentCreated,
    ModelResponded,
    RunCancelling,
    RunEnded,
    RunStarted,
    ToolCallStarted,
)
from eventlog.ids import task_of
from eventlog.records import StoredEvent


class Progress:
    """Turns a run's stream into short lines: who started, which tool, how each ended."""

    def __init__(self, session_id: str, write: Callable[[str], None]) -> None:
        self._sid = session_id
        self._write = write
        self._roles: dict[str, str] = {}

    def follow(self, items: Iterable[object]) -> None:
        """Write a line for each event of ``items`` worth one (text pieces are skipped)."""
        for item in items:
            if isinstance(item, StoredEvent):
                line = self.line(item)
                if line is not None:
                    self._write(line)

    def _who(self, agent_id: str | None) -> str:
        """``brain``, or a worker's task id and role (``w1 (researcher)``)."""
        agent = agent_id or ""
        if "/" not in agent:
            return "brain"
        role = self._roles.get(agent)
        return f"{task_of(agent)} ({role})" if role else task_of(agent)

    def line(self, stored: StoredEvent) -> str | None:
        """Return the progress line of one event, or None."""
        ev = stored.event
        if isinstance(ev, AgentCreated):
            self._roles[ev.agent_id] = ev.role
            return None
        who = self._who(stored.agent_id)
        text: str | None = None
        match ev:
            case RunStarted():
                text = f"  ▸ {who} started"
            case ModelResponded():
                u = ev.usage
                text = f"    {who}: model {ev.model} ({u.input_tokens}→{u.output_tokens} tokens)"
            case ToolCallStarted():
                text = f"    {who}: tool {ev.tool_name}"
            case RunCancelling():
                text = f"  ■ {who}: stopping ({ev.reason})"
            case RunEnded():
                mark = {"completed": "✓", "cancelled": "■"}.get(ev.status, "✗")
                text = f"  {mark} {who} {ev.status}"
        return text
