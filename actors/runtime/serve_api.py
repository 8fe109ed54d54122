"""What a :class:`~actors.runtime.runtime.Runtime` offers to serve: ``submit``, ``queue``,
``serve`` (docs/serve.md). The loop itself is :class:`~actors.runtime.serving.Server`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, cast

from actors.errors import UsageError
from actors.runtime.coord.protocol import Coordinator, QueuedRun, RunSpec
from actors.runtime.recipes import Recipes
from actors.runtime.runs import check_prompt
from actors.runtime.serving import Server, ServeReport
from eventlog.ids import validate_session_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from actors.runtime.engine import Engine
    from actors.runtime.runtime import Runtime


class RuntimeServe:
    """The run queue and the serving loop of a runtime."""

    _engine: Engine

    def coordinator(self) -> Coordinator:
        """Return where this runtime's leases and run queue live (opened, or created in
        the home, on first use).

        Raises:
            ReadOnlyStore: the runtime was opened read-only.
        """
        self._engine.refuse_if_read_only("opening the run queue")
        coord = self._engine.leases.coordinator(create=True)
        assert coord is not None  # a writable runtime always has one once created
        return coord

    def submit(
        self,
        prompt: str,
        *,
        model: str,
        tools: str | None = None,
        team: str | None = None,
        session: str | None = None,
    ) -> QueuedRun:
        """Enqueue a run durably for a serving process (``clew serve``); return its row.

        ``model``/``tools``/``team`` are recipe *names* the serving app registers
        (:class:`~actors.runtime.recipes.Recipes`; ``demo`` is built in); they are
        recorded with the run, so whichever process resumes it builds the same.
        ``session``: run in that session (after the runs queued before it); None: a
        new session.

        Raises:
            UsageError: an empty prompt.
            InvalidSessionId, UnknownSession: a bad or unknown ``session``.
        """
        check_prompt(prompt)
        if not model:
            raise UsageError("a queued run needs a model recipe name")
        if session is not None:
            session = validate_session_id(session)
            self._engine.store.read_session(session)
        spec = RunSpec(prompt=prompt, session_id=session, model=model, tools=tools, team=team)
        return self.coordinator().submit(spec)

    def queue(self, limit: int = 100) -> list[QueuedRun]:
        """Return the newest ``limit`` queued runs (any status), oldest first."""
        return self.coordinator().list_runs(limit)

    def serve(
        self,
        *,
        recipes: Recipes | None = None,
        concurrency: int = 1,
        stop: threading.Event | None = None,
        poll_s: float = 0.2,
        drain_s: float = 30.0,
        on_event: Callable[[str], None] | None = None,
    ) -> ServeReport:
        """Take queued runs and recover dead peers' runs until ``stop`` is set.

        Runs up to ``concurrency`` runs at once, each in its session under a lease; on
        start and every third of the lease ttl it adopts the runs of processes whose
        leases expired and resumes them. Once ``stop`` is set it takes nothing more and
        waits up to ``drain_s`` for the runs in progress (the report lists any left).

        Raises:
            UsageError: ``concurrency`` < 1.
        """
        if concurrency < 1:
            raise UsageError("concurrency must be at least 1")
        rt = cast("Runtime", self)  # the mixin's only host
        server = Server(
            rt,
            self._engine,
            recipes or Recipes(),
            concurrency=concurrency,
            poll_s=poll_s,
            drain_s=drain_s,
            on_event=on_event,
        )
        return server.serve(stop or threading.Event())
