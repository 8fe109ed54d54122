"""The run digest: one log line per run, worker, model call and tool call, from commits.

Nothing here is on the run path. The lines are derived from *committed* events: a commit
listener (:meth:`eventlog.writer.Writer.subscribe`) only puts each batch on a queue, and
a daemon thread folds the batches into lines (:class:`RunDigest`) and logs them at info
on the ``clew.run`` logger (see :mod:`eventlog.logs` for where they go). Durations are
computed from the events' recorded ``created_at`` (model requested → responded, tool
started → finished, run started → ended), so a line says what the log says. When info is
off for ``clew.run`` as an engine opens, no listener is subscribed and no thread started.

Every line is bound with ``session_id``, ``run_id`` and ``agent_id``:

==================  =====================================================================
``run_started``     a main run started: ``phase``
``run_ended``       ``status``, ``end_reason``, ``turns``, ``input_tokens``,
                    ``output_tokens``, ``ms``, ``error`` (a failed run's message)
``worker_started``  a worker's run started: ``role``, ``phase``
``worker_ended``    as ``run_ended``, with ``role``
``model_call``      one attempt: ``role``, ``model``, ``call_index``, ``attempt``,
                    ``input_tokens``, ``output_tokens``, ``stop_reason``, ``ms``, ``ok``;
                    a failed attempt: ``ok=False``, ``error_type``, ``error``,
                    ``will_fallback`` instead of the tokens
``tool_call``       ``tool``, ``tool_call_id``, ``ms``, ``ok`` (and ``error_type`` /
                    ``error`` when the tool raised)
==================  =====================================================================

``ms`` is None when the start was committed by an earlier process (a resumed run).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from eventlog.events import (
    AgentCreated,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    RunEnded,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
    ToolFailed,
)
from eventlog.ids import is_main_run, session_of
from eventlog.logs import get_logger, is_enabled
from eventlog.records import StoredEvent
from eventlog.writer import Writer

#: The logger of the digest's lines.
RUN_LOGGER = "clew.run"


class LogLine(NamedTuple):
    """One line of the digest: the record's name and its fields."""

    event: str
    fields: dict[str, Any]


def _ms(start: str | None, end: str) -> float | None:
    """Milliseconds from ``start`` to ``end`` (ISO-8601), None when the start is unknown."""
    if start is None:
        return None
    delta = dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)
    return round(delta.total_seconds() * 1000, 1)


def _ids(e: StoredEvent) -> dict[str, Any]:
    return {"session_id": session_of(e.event_id), "run_id": e.run_id, "agent_id": e.agent_id}


class RunDigest:
    """The fold from committed events to log lines: pairs each start with its end.

    It holds only what is open (runs, model calls and tool calls not finished yet) and
    the role of each agent it saw created; a run's open calls are dropped when it ends.
    """

    def __init__(self) -> None:
        self._roles: dict[str, str] = {}
        self._runs: dict[str, str] = {}
        self._models: dict[tuple[str | None, int, int], tuple[str, str]] = {}
        self._tools: dict[tuple[str | None, str], str] = {}

    def lines(self, events: Iterable[StoredEvent]) -> list[LogLine]:
        """Return the lines that ``events`` (committed, in seq order per session) complete."""
        out: list[LogLine] = []
        for e in events:
            line = self._line(e)
            if line is not None:
                out.append(line)
        return out

    def _line(self, e: StoredEvent) -> LogLine | None:
        match e.event:
            case AgentCreated(agent_id=agent_id, role=role):
                self._roles[agent_id] = role
            case RunStarted(run_id=run_id, phase=phase):
                self._runs[run_id] = e.created_at
                worker = self._worker(e)
                extra = {"role": self._roles.get(e.agent_id or "")} if worker else {}
                name = "worker_started" if worker else "run_started"
                return LogLine(name, {**_ids(e), **extra, "phase": phase})
            case RunEnded() as ended:
                return self._run_ended(e, ended)
            case ModelRequested(call_index=n, attempt=attempt, role=role):
                self._models[(e.run_id, n, attempt)] = (e.created_at, role)
            case ModelResponded() | ModelFailed() as done:
                return self._model_call(e, done)
            case ToolCallStarted(tool_call_id=call_id):
                self._tools[(e.run_id, call_id)] = e.created_at
            case ToolCallFinished() | ToolFailed() as done:
                return self._tool_call(e, done)
        return None

    def _worker(self, e: StoredEvent) -> bool:
        return not is_main_run(session_of(e.event_id), e.agent_id)

    def _run_ended(self, e: StoredEvent, ended: RunEnded) -> LogLine:
        run_id = ended.run_id
        started = self._runs.pop(run_id, None)
        self._models = {k: v for k, v in self._models.items() if k[0] != run_id}
        self._tools = {k: v for k, v in self._tools.items() if k[0] != run_id}
        worker = self._worker(e)
        fields: dict[str, Any] = _ids(e)
        if worker:
            fields["role"] = self._roles.get(e.agent_id or "")
        fields.update(
            status=ended.status,
            end_reason=ended.end_reason,
            turns=ended.turn_count,
            input_tokens=ended.usage.input_tokens,
            output_tokens=ended.usage.output_tokens,
            ms=_ms(started, e.created_at),
        )
        if ended.error:
            fields["error"] = ended.error.get("message", ended.error)
        return LogLine("worker_ended" if worker else "run_ended", fields)

    def _model_call(self, e: StoredEvent, done: ModelResponded | ModelFailed) -> LogLine:
        started, role = self._models.pop((e.run_id, done.call_index, done.attempt), (None, None))
        fields: dict[str, Any] = {
            **_ids(e),
            "role": role,
            "model": done.model,
            "call_index": done.call_index,
            "attempt": done.attempt,
        }
        if isinstance(done, ModelResponded):
            fields.update(
                input_tokens=done.usage.input_tokens,
                output_tokens=done.usage.output_tokens,
                stop_reason=done.stop_reason,
            )
        else:
            fields.update(
                error_type=done.error_type, error=done.message, will_fallback=done.will_fallback
            )
        fields.update(ms=_ms(started, e.created_at), ok=isinstance(done, ModelResponded))
        return LogLine("model_call", fields)

    def _tool_call(self, e: StoredEvent, done: ToolCallFinished | ToolFailed) -> LogLine:
        started = self._tools.pop((e.run_id, done.tool_call_id), None)
        fields: dict[str, Any] = {
            **_ids(e),
            "tool": done.tool_name,
            "tool_call_id": done.tool_call_id,
            "ms": _ms(started, e.created_at),
        }
        if isinstance(done, ToolFailed):
            fields.update(ok=False, error_type=done.error_type, error=done.message)
        else:
            fields["ok"] = not done.is_error
        return LogLine("tool_call", fields)


class RunLogs:
    """Logs the digest of every batch one writer commits, on a thread of its own."""

    def __init__(self, writer: Writer) -> None:
        self._queue: queue.SimpleQueue[list[StoredEvent] | None] = queue.SimpleQueue()
        self._digest = RunDigest()
        self._log = get_logger(RUN_LOGGER)
        self._thread = threading.Thread(target=self._work, name="clew-run-logs", daemon=True)
        self._thread.start()
        # The listener runs on the writer's thread: it only queues (never blocks).
        self._unsubscribe: Callable[[], None] = writer.subscribe(self._queue.put)

    @classmethod
    def attach(cls, writer: Writer) -> RunLogs | None:
        """Start logging ``writer``'s commits if ``clew.run`` logs at info now; else None."""
        if not is_enabled(RUN_LOGGER, logging.INFO):
            return None
        return cls(writer)

    def _work(self) -> None:
        while (batch := self._queue.get()) is not None:
            # A broken log sink (or a timestamp it cannot read) must not stop the digest.
            with contextlib.suppress(Exception):
                for line in self._digest.lines(batch):
                    self._log.info(line.event, **line.fields)

    def close(self, timeout: float = 10.0) -> None:
        """Log what is queued (the writer is stopped first: its last commits are in), stop."""
        self._unsubscribe()
        self._queue.put(None)
        self._thread.join(timeout)
