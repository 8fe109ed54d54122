"""Every id format of clew, built and parsed here only.

Ids are *derived* (session id + agent path + a per-scope counter), never drawn from a
random generator at the point of use, so a replay reproduces them. The only random
part, the 4-hex suffix of a new session id, is recorded by the ``session_created``
event (the session id *is* the record). An f-string assembling an id anywhere else is a
bug waiting for a format change.

The formats (``<sid>`` a session id, ``<run>`` a run id, ``<task>`` a plan task id)::

    session            sess_20260612_153022_a1b2
    Brain agent        <sid>:brain
    main (Brain) run   <sid>:brain:r<n>
    worker agent       <run>/<task>            (also the worker's AgentTaskContext id)
    an agent's run     <agent>:r<n>            (a worker runs once: <run>/<task>:r1)
    handoff packet     <run>/handoff/<task>
    derived in a run   <run>:<kind><n>         (nodes: <run>:n<k>)
    event              <run>#<run_seq>, or <sid>#s<seq> for an event of no run
                       (every id above starts with <sid>: ``session_of`` reads it back)
    artifact           art_<sha256(<sid>:<content sha256>)[:24]>
    idempotency key    key_<sha256(<run>\0<tool call id>)[:32]>   (a tool call's, unique
                       across sessions and forks: its run id starts with the session id)
    review task        review, review-2, review-3 …
    dispatched task    dispatch-1, dispatch-2 …    (the primary's dispatch calls, in order)
    Task WAL name      the plan's task name: the router's, sanitised (``task_name``), made
                       unique with ``-2``, ``-3`` …; before flow 2, the main run id with
                       ':' and '/' turned into '_' (``wal_name_for``)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import secrets
import threading
from typing import Protocol

from eventlog.errors import InvalidSessionId, quoted

SESSION_ID_RE = re.compile(r"^[a-zA-Z0-9_]+$")
# Long enough for any id clew generates (~26 chars) plus user-chosen prefixes; short
# enough that ``events_<sid>`` stays a sane identifier.
MAX_SESSION_ID_LEN = 128
_SESSION_PREFIX = re.compile(r"[a-zA-Z0-9_]+")

_BRAIN = "brain"
_HANDOFF = "handoff"
_REVIEW = "review"
_DISPATCH = "dispatch"


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is safe to put into a table name, else raise.

    Raises:
        InvalidSessionId: not a str, empty, too long, or any char outside ``[a-zA-Z0-9_]``.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InvalidSessionId(
            f"invalid session id {quoted(session_id)}: must be a non-empty string"
        )
    if len(session_id) > MAX_SESSION_ID_LEN:
        raise InvalidSessionId(
            f"invalid session id {quoted(session_id, 40)}: longer than {MAX_SESSION_ID_LEN}"
            " characters"
        )
    if not SESSION_ID_RE.fullmatch(session_id):
        raise InvalidSessionId(
            f"invalid session id {session_id!r}: only letters, digits and '_' are allowed"
        )
    return session_id


def session_id_at(now: str, suffix: str) -> str:
    """Return the session id for time ``now`` (ISO-8601) and a 4-hex ``suffix``."""
    t = _dt.datetime.fromisoformat(now)
    return f"sess_{t:%Y%m%d_%H%M%S}_{suffix}"


def redrive_id_at(now: str, suffix: str) -> str:
    """Return the id of a re-drive (``clew redrive``) started at ``now`` (ISO-8601)."""
    t = _dt.datetime.fromisoformat(now)
    return f"redrive_{t:%Y%m%d_%H%M%S}_{suffix}"


# --- agents and runs ---------------------------------------------------------------------


def brain_agent_id(session_id: str) -> str:
    """Return the id of the session's Brain (orchestrator) agent."""
    return f"{session_id}:{_BRAIN}"


def main_run_id(session_id: str, n: int) -> str:
    """Return the id of the session's ``n``-th main (Brain) run, from 1."""
    return agent_run_id(brain_agent_id(session_id), n)


def agent_run_id(agent_id: str, n: int) -> str:
    """Return the id of the ``n``-th run of ``agent_id``, from 1."""
    return f"{agent_id}:r{n}"


def is_main_run(session_id: str, agent_id: str | None) -> bool:
    """True when a run owned by ``agent_id`` is a main run of ``session_id``."""
    return agent_id == brain_agent_id(session_id)


def worker_agent_id(run_id: str, task_id: str) -> str:
    """Return the agent (and task context) id of task ``task_id`` of main run ``run_id``."""
    return f"{run_id}/{task_id}"


def task_of(worker_agent: str) -> str:
    """Return the plan task id of a worker agent / context id (``<run>/<task>`` → task)."""
    return worker_agent.rsplit("/", 1)[-1]


def main_run_of(worker_agent: str) -> str | None:
    """Return the main run of a worker agent (``<run>/<task>`` → ``<run>``); None for an
    agent that is not a main run's worker."""
    run, sep, _ = worker_agent.rpartition("/")
    agent = run.rpartition(":")[0]
    return run if sep and is_main_run(session_of(run), agent) else None


def handoff_id(run_id: str, task_id: str) -> str:
    """Return the id of the handoff packet of task ``task_id`` of main run ``run_id``."""
    return f"{run_id}/{_HANDOFF}/{task_id}"


def review_task_id(iteration: int) -> str:
    """Return the task id of the review after ``iteration`` fixes (0: the first review)."""
    return _REVIEW if iteration == 0 else f"{_REVIEW}-{iteration + 1}"


def dispatch_task_id(n: int) -> str:
    """Return the task id of a main run's ``n``-th dispatched worker, from 1."""
    return f"{_DISPATCH}-{n}"


def is_dispatch_task_id(task_id: str) -> bool:
    """True when ``task_id`` has the form of a dispatched worker's task id."""
    head, sep, n = task_id.partition("-")
    return head == _DISPATCH and bool(sep) and n.isdigit()


def derived_id(scope: str, kind: str, n: int) -> str:
    """Return the ``n``-th id of ``kind`` inside ``scope`` (a run): ``<scope>:<kind><n>``."""
    return f"{scope}:{kind}{n}"


# --- events and files --------------------------------------------------------------------


def event_id(session_id: str, run_id: str | None, run_seq: int | None, seq: int) -> str:
    """Return an event's id: ``<run>#<run_seq>`` within a run, else ``<sid>#s<seq>``."""
    if run_id:
        return f"{run_id}#{run_seq}"
    return f"{session_id}#s{seq}"


def wal_name_for(run_id: str) -> str:
    """Return the Task WAL name of a main run recorded before flow 2 (named after its id;
    WAL names allow only ``[a-zA-Z0-9_-]``)."""
    return run_id.replace(":", "_").replace("/", "_")


#: The longest task name kept (a WAL name may be 100 characters: room for ``-NNN``).
MAX_TASK_NAME_LEN = 60
_NOT_NAME = re.compile(r"[^a-z0-9_]+")


def task_name(text: str, fallback: str = "plan") -> str:
    """Return ``text`` as a task name: lower case, runs of anything but ``[a-z0-9_]`` one
    ``-``, at most :data:`MAX_TASK_NAME_LEN` characters; ``fallback`` when nothing is left.

    ``"Fix the login bug!"`` → ``fix-the-login-bug``.
    """
    name = _NOT_NAME.sub("-", text.lower())[:MAX_TASK_NAME_LEN].strip("-")
    return name or fallback


def unique_task_name(name: str, taken: set[str]) -> str:
    """Return ``name``, or ``name-2``, ``name-3`` … — the first not in ``taken``."""
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


def owning_main_run(run_id: str) -> str:
    """Return the main run a run belongs to: itself, or the run whose worker it is
    (``<run>/<task>:r1`` → ``<run>``)."""
    return run_id.split("/", 1)[0]


# --- relative forms (what a person types and reads) --------------------------------------


def relative(session_id: str, ident: str) -> str:
    """Return ``ident`` without its session prefix (``sess_x:brain:r1`` → ``brain:r1``)."""
    return ident.removeprefix(f"{session_id}:")


def session_of(ident: str) -> str:
    """Return the session id that an id of the session begins with (an event, run, agent or
    node id: ``sess_x:brain:r1#4`` → ``sess_x``); a session id is returned as it is."""
    match = _SESSION_PREFIX.match(ident)
    return match.group(0) if match else ident


def qualified(session_id: str, ident: str) -> str:
    """Return the full form of an id given relative to its session (``brain:r1``)."""
    return f"{session_id}:{ident}"


# --- sources -----------------------------------------------------------------------------


class IdSource(Protocol):
    """Source of ids. ``next_id`` must be deterministic given the call sequence per scope."""

    def new_session_id(self, now: str) -> str:
        """Return a fresh session id like ``sess_20260612_153022_a1b2`` for time ``now``."""
        ...

    def next_id(self, scope: str, kind: str) -> str:
        """Return the next id of ``kind`` inside ``scope`` (e.g. scope=agent id, kind='n')."""
        ...


class DerivedIds:
    """Ids derived from a scope and a per-(scope, kind) counter: ``<scope>:<kind><n>``.

    A scope is owned by exactly one actor (an agent or a run), so the counter
    sequence is that actor's program order — identical in a replay. The lock
    only protects the dict against actors of *different* scopes.
    """

    def __init__(self, suffix: str | None = None) -> None:
        self._counters: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._suffix = suffix

    def new_session_id(self, now: str) -> str:
        suffix = self._suffix if self._suffix is not None else secrets.token_hex(2)
        return session_id_at(now, suffix)

    def next_id(self, scope: str, kind: str) -> str:
        with self._lock:
            n = self._counters.get((scope, kind), 0) + 1
            self._counters[(scope, kind)] = n
        return derived_id(scope, kind, n)


def artifact_id_for(session_id: str, sha256_hex: str) -> str:
    """Return the artifact id of content ``sha256_hex`` in ``session_id`` (unique per both)."""
    return "art_" + stable_hash(f"{session_id}:{sha256_hex}".encode(), 24)


def idempotency_key(run_id: str, tool_call_id: str) -> str:
    """Return the key a side-effecting tool call does its effect under, at most once.

    A call id alone is not unique: a model adapter may derive it from the request (the
    scripted model does; so does the OpenAI adapter when a server sends none), so two
    sessions asking the same thing get the same id. The run id is unique per session,
    fork and attempt, and a resume re-runs an in-doubt call in the same run under the
    same call id — the same key.
    """
    digest = hashlib.sha256(f"{run_id}\0{tool_call_id}".encode()).hexdigest()
    return f"key_{digest[:32]}"


def stable_hash(data: bytes, length: int = 16) -> str:
    """Return a short, stable hex digest (sha256) — for request hashes and artifact ids."""
    return hashlib.sha256(data).hexdigest()[:length]


def seed_for(run_id: str) -> int:
    """Derive the RNG seed of a run from its id (recorded in ``run_started``)."""
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big")
