"""Changing history from a runtime: ``fork`` and ``rerun`` (docs/replay-and-recovery.md,
"Fork, rerun and diff"), mixed into :class:`~actors.runtime.runtime.Runtime`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from actors.models.chains import ModelArg
from actors.models.tools import Tool
from actors.runtime import fork as forking
from actors.runtime import rerun as rerunning
from actors.runtime.rerun import Changes, RerunReport
from actors.runtime.session import Session
from eventlog.ids import validate_session_id

if TYPE_CHECKING:
    from actors.runtime.engine import Engine
    from actors.runtime.runtime import Runtime
    from eventlog.store import EventStore


class RuntimeHistory:
    """Forks and counterfactual reruns of a runtime's sessions."""

    _engine: Engine
    store: EventStore

    def fork(self, session_id: str, at: str | None = None, title: str | None = None) -> Session:
        """Create a session whose history is ``session_id``'s path root → ``at`` (default:
        its active node), recorded with ``parent_session_id`` and ``fork_from_node_id``.

        Raises:
            InvalidSessionId, UnknownSession: bad or unknown session.
            UnknownNode: ``at`` is not a node of the session.
            ReadOnlyStore: the runtime was opened read-only.
        """
        sid = validate_session_id(session_id)
        node = at if at is not None else self.store.read_session(sid).active_node_id
        runtime: Runtime = self  # type: ignore[assignment]
        return Session(runtime, forking.fork_session(self._engine, sid, node, title=title))

    def rerun(
        self,
        session_id: str,
        *,
        run: str | None = None,
        models: Mapping[str, ModelArg | str] | None = None,
        tool_results: Mapping[str, Any] | None = None,
        instructions: Mapping[str, str] | None = None,
        prompt: str | None = None,
        model: ModelArg | None = None,
        tools: Sequence[Tool] | None = None,
        title: str | None = None,
    ) -> RerunReport:
        """Fork the session where ``run`` (default: its last main run) started and
        re-execute the run there with the changes (docs/replay-and-recovery.md): a role's
        chain (``models``), tool results by call id, a role's ``instructions``, the
        ``prompt``. Unchanged model calls are served from the recording; the rest are
        asked live (``model`` supplies the recorded chain's models by name; ``tools`` the
        live tools).

        Raises:
            UsageError: no such run, an unknown role or tool call id, a bad prompt.
        """
        changes = Changes(models=models or {}, tool_results=tool_results or {},
                          instructions=instructions or {}, prompt=prompt)  # fmt: skip
        return rerunning.rerun(self._engine, session_id, run=run, changes=changes,
                               model=model, tools=tools, title=title)  # fmt: skip
