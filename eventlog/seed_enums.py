"""The seed's status enums in the tables: how a run's API status and end reason are stored.

The tables hold only the values the seed's design lists (``../shared/seeds/004``: the
``Status Enums``), so a user querying a home with ``sqlite3`` sees the seed's vocabulary.
clew's API names three states the seed's enums fold:

=====================  ==========================  ==================================
API (``RunRow``)       ``runs`` columns             why
=====================  ==========================  ==================================
status ``waiting``     status ``pending``,          a run parked on a person (approval,
                       ``status_detail`` waiting    clarification): not finished and
                                                    not running, the seed's "pending"
status ``refused``     status ``failed``,           the input guardrail refused the
                       ``status_detail`` refused    prompt: the run ended without an
                                                    answer (end_reason ``failed``)
end_reason             end_reason NULL              cancelled between steps: the loop
``cancelled``          (status ``cancelled``)       ended in none of the seed's ways
=====================  ==========================  ==================================

``status_detail`` is a column after the seed's (NULL for every other run). A run that
ended always has an end reason, so an ended row with a NULL ``end_reason`` reads back as
``cancelled``. Both backends' materialisers store through :func:`stored_run_status` /
:func:`stored_end_reason`; the row decoders and ``read_run_statuses`` read back through
:func:`api_run_status` / :func:`api_end_reason`, so every reader above the store sees the
API's values (docs/events.md, "Run statuses in the tables").
"""

from __future__ import annotations

from typing import Final, get_args

from eventlog.events import EndReason

#: The seed's enums, as the tables hold them.
SESSION_STATUSES: Final = frozenset({"active", "archived"})
AGENT_STATUSES: Final = frozenset({"idle", "running", "completed", "failed", "cancelled"})
AGENT_TYPES: Final = frozenset({"main", "orchestrator", "sub", "fork"})
RUN_STATUSES: Final = frozenset(
    {"queued", "pending", "running", "completed", "failed", "aborted", "cancelled"}
)
#: The seed's end reasons: clew's (``EndReason``) but ``cancelled``, stored NULL.
END_REASONS: Final = frozenset(get_args(EndReason)) - {"cancelled"}

#: API status -> (stored status, status_detail) for the statuses the seed folds.
_FOLDED: Final = {"waiting": "pending", "refused": "failed"}
#: Stored statuses of a run that ended (its end_reason is never NULL in the API).
_ENDED: Final = frozenset({"completed", "failed", "cancelled", "aborted"})


def stored_run_status(status: str) -> tuple[str, str | None]:
    """Return the ``(status, status_detail)`` the ``runs`` row stores for API ``status``."""
    folded = _FOLDED.get(status)
    return (status, None) if folded is None else (folded, status)


def stored_end_reason(end_reason: str | None) -> str | None:
    """Return the ``end_reason`` the ``runs`` row stores for the API's (``cancelled``: NULL)."""
    return None if end_reason == "cancelled" else end_reason


def api_run_status(status: str, detail: str | None) -> str:
    """Return the API's status of a row storing ``status`` and ``status_detail``."""
    return status if detail is None else detail


def api_end_reason(status: str, end_reason: str | None) -> str | None:
    """Return the API's end reason of a row storing ``status`` and ``end_reason``."""
    if end_reason is None and status in _ENDED:
        return "cancelled"
    return end_reason


#: What migrates a ``runs`` table written before the seed's enums (SQLite schema 5,
#: PostgreSQL 4), once it has ``status_detail``: the values the seed folds, folded.
FOLD_STORED_RUNS: Final = (
    "UPDATE runs SET status = 'pending', status_detail = 'waiting' WHERE status = 'waiting'",
    "UPDATE runs SET status = 'failed', status_detail = 'refused' WHERE status = 'refused'",
    "UPDATE runs SET end_reason = NULL WHERE end_reason = 'cancelled'",
)
