"""The inspector's actions: each one calls the same ``Runtime`` method as the CLI command
that does it, so it is checked and recorded exactly the same way.

=================  =====================================  ================================
action             Runtime call                           CLI twin
=================  =====================================  ================================
``decide``         ``Runtime.decide(sid, call, Approve()  ``clew approve`` / ``clew deny``
                   | Deny(reason) | Edit(arguments))``
``answer``         ``Runtime.answer(sid, text)``          ``clew answer``
``cancel``         ``Runtime.cancel(sid, reason)``        ``clew cancel``
``switch``         ``Runtime.switch_node(sid, node)``     ``clew switch-node``
``replay``         ``Runtime.replay(sid)`` (writes        ``clew replay``
                   nothing)
``resume``         the server's resumer (``clew ui``:     ``clew resume``
                   the CLI's, from the session's recipe)
=================  =====================================  ================================
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import msgspec

from actors.errors import UsageError
from actors.orchestration.approvals import Approve, Decision, Deny, Edit
from actors.runtime.runtime import Runtime
from eventlog.logs import get_logger

_log = get_logger("clew.ui")

#: Continues a waiting session once everything is decided: ``(runtime, session id)``.
#: The server has no model of its own; the embedding application (or ``clew ui``, from
#: the session's recipe) gives it one.
Resumer = Callable[[Runtime, str], object]

#: How long an action waits for the resume it starts before answering: a resume that
#: is refused (busy, diverged, no model) fails within it, and the answer says so instead
#: of ``"resumed": true``; one still running then is reported as resumed.
RESUME_WAIT_S = 3.0


def _text(body: dict[str, Any], key: str, default: str | None = None) -> str:
    value = body.get(key, default)
    if not isinstance(value, str):
        raise UsageError(f"{key!r} must be a string")
    return value


def decision_of(body: dict[str, Any]) -> Decision:
    """Return the decision a request body asks for.

    Raises:
        UsageError: an unknown decision, an empty denial reason, edited arguments that are
            not a JSON object.
    """
    kind = _text(body, "decision")
    if kind == "approve":
        return Approve()
    if kind == "deny":
        reason = _text(body, "reason", "")
        if not reason.strip():
            raise UsageError("a denial needs a reason (the model is told it)")
        return Deny(reason=reason)
    if kind == "edit":
        arguments = body.get("arguments")
        if not isinstance(arguments, dict):
            raise UsageError("edited arguments must be a JSON object")
        return Edit(arguments=arguments)
    raise UsageError(f"unknown decision {kind!r} (approve, deny, edit)")


class Actions:
    """The actions of one server over one runtime (and its optional resumer)."""

    def __init__(self, rt: Runtime, resumer: Resumer | None) -> None:
        self.rt = rt
        self.resumer = resumer
        self._resuming: set[str] = set()
        self._lock = threading.Lock()

    def decide(self, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        """Record a decision on a pending tool call; resume once nothing is pending."""
        call = _text(body, "call_id")
        decision = decision_of(body)
        self.rt.decide(sid, call, decision)
        return {
            "session_id": sid,
            "tool_call_id": call,
            "decision": msgspec.to_builtins(decision),
            **self._after_decision(sid),
        }

    def answer(self, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        """Record the answer to the session's clarifying question."""
        self.rt.answer(sid, _text(body, "text"))
        return {"session_id": sid, "answered": True, **self._after_decision(sid)}

    def _after_decision(self, sid: str) -> dict[str, Any]:
        states = self.rt.waiting(sid)
        left = [p.tool_call_id for s in states for p in s.pending]
        ready = bool(states) and all(s.ready for s in states)
        resumed = self.start_resume(sid) if ready else {"resumed": False}
        return {"still_pending": left, **resumed}

    def start_resume(self, sid: str) -> dict[str, Any]:
        """Continue the session in a background thread; wait up to :data:`RESUME_WAIT_S`.

        Returns ``{"resumed": True}`` when the resume finished or is still running then;
        ``{"resumed": False}`` when no resumer is set or one already runs for it, with
        ``resume_error`` (one line) when the resume failed.
        """
        if self.resumer is None:
            return {"resumed": False}
        with self._lock:
            if sid in self._resuming:
                return {"resumed": False}
            self._resuming.add(sid)
        resumer = self.resumer
        failed: list[BaseException] = []
        ended = threading.Event()

        def run() -> None:
            try:
                resumer(self.rt, sid)
            except Exception as e:  # the answer (or, once it is sent, the log) says it
                failed.append(e)
                _log.warning("resume failed", session_id=sid, error=str(e))
            finally:
                with self._lock:
                    self._resuming.discard(sid)
                ended.set()

        threading.Thread(target=run, name=f"clew-ui-resume-{sid}", daemon=True).start()
        ended.wait(RESUME_WAIT_S)
        if failed:
            error = failed[0]
            line = str(error).splitlines()[0] if str(error) else type(error).__name__
            return {"resumed": False, "resume_error": line}
        return {"resumed": True}

    def resume(self, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        """Continue a waiting or interrupted session with the server's resumer."""
        if self.resumer is None:
            raise UsageError("this server cannot resume runs (it has no model): clew resume")
        if not self.rt.waiting(sid) and not self.rt.interrupted_runs(sid):
            raise UsageError(f"session {sid} has nothing to resume")
        return {"session_id": sid, **self.start_resume(sid)}

    def cancel(self, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        """Cancel the session's run in progress (the owning process stops within a second)."""
        reason = _text(body, "reason", "cancelled from the web inspector")
        if not reason.strip():
            raise UsageError("the reason is empty")
        report = self.rt.cancel(sid, reason)
        return {"session_id": sid, "run_id": report.run_id, "status": report.status}

    def switch(self, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        """Move the session's active node (no run may be in progress)."""
        node = _text(body, "node_id")
        full = node if node.startswith(f"{sid}:") else f"{sid}:{node}"
        previous = self.rt.switch_node(sid, full)
        return {"session_id": sid, "active_node_id": full, "previous": previous}

    def replay(self, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        """Replay the session against its recording; return the divergence report."""
        report = self.rt.replay(sid)
        return {**report.to_json(), "summary": report.summary()}
