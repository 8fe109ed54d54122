"""A session's status, derived in one place from its runs: what ``Runtime.sessions()`` and
``clew sessions`` show.

The status is the last *main* (Brain) run's, read from the ``runs`` table, with one
exception that needs the owner lock: a run the table calls open (``running`` /
``pending``) is ``running`` while a live process owns the session and ``interrupted``
once none does (the lock, not a clock, decides: see ``actors/runtime/locks.py``).

====================  ==================================================================
status                when
====================  ==================================================================
``new``               no main run yet
``running``           a run is open and a live process (this one included) owns the session
``interrupted``       a run is open and no live process owns the session: resume it
``waiting``           the last main run is parked for a person (status ``waiting``: an
                      approval or an answer, ``clew pending``)
``completed``         the last main run completed
``cancelled``         the last main run was cancelled
``failed``            the last main run failed (or was aborted)
``refused``           the last main run was refused by the input guardrail
``archived``          the session is archived (final: it only reads from now on)
====================  ==================================================================

A status this module does not know yet (a run status added later) is shown as stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from actors.runtime.engine import OPEN_RUN_STATUSES
from eventlog.ids import is_main_run
from eventlog.records import RunRow, SessionRow

#: Run statuses of a run parked until a person answers (the human-in-the-loop work).
WAITING_RUN_STATUSES: Final = frozenset({"waiting", "parked"})
#: Stored run statuses shown under another name.
_SHOWN_AS: Final = {"aborted": "failed"}


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One line of ``Runtime.sessions()``.

    ``runs`` counts the main (Brain) runs, one per request; ``all_runs`` every run,
    workers' included. ``updated_at`` is the time of the session's last event.
    """

    session_id: str
    #: The derived status (see :mod:`actors.runtime.status`).
    status: str
    created_at: str
    updated_at: str
    interrupted: bool
    runs: int
    events: int
    active_node_id: str | None
    #: True when its last main run waits for a person (``clew pending``).
    waiting: bool = False
    all_runs: int = 0
    #: The session row's own status: ``active``, or ``archived``.
    lifecycle: str = "active"


def session_status(session_id: str, runs: Sequence[RunRow], *, owned: bool) -> str:
    """Return the status of the session whose runs are ``runs`` (creation order).

    Args:
        owned: a live process (this one included) holds the session's owner lock.
    """
    if any(r.status in OPEN_RUN_STATUSES for r in runs):
        return "running" if owned else "interrupted"
    mains = [r for r in runs if is_main_run(session_id, r.agent_id)]
    if not mains:
        return "new"
    last = mains[-1].status
    if last in WAITING_RUN_STATUSES:
        return "waiting"
    return _SHOWN_AS.get(last, last)


def session_info(
    row: SessionRow, runs: Sequence[RunRow], *, owned: bool, events: int
) -> SessionInfo:
    """Return the summary line of the session ``row`` whose runs are ``runs``."""
    sid = row.session_id
    status = session_status(sid, runs, owned=owned)
    if row.status == "archived":  # final: an archived session takes no run again
        status = "archived"
    return SessionInfo(
        session_id=sid,
        status=status,
        created_at=row.created_at,
        updated_at=row.updated_at,
        interrupted=status == "interrupted",
        runs=sum(1 for r in runs if is_main_run(sid, r.agent_id)),
        events=events,
        active_node_id=row.active_node_id,
        waiting=status == "waiting",
        all_runs=len(runs),
        lifecycle=row.status,
    )
