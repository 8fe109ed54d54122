"""Requests from other processes to the process that owns a session: cancel its run.

A session is owned by one process (its lock); another process cannot write to the
session's log. ``clew cancel`` therefore leaves a request in the home
(``control/<session>.cancel``, written atomically) and the owner picks it up within
:data:`POLL_S` seconds, then records the cancellation itself. A request is for the run
in progress: a run clears what an earlier one left when it starts.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

#: How often a running main run looks for a cancel request from another process.
POLL_S = 0.25


def _path(home: Path, session_id: str) -> Path:
    return home / "control" / f"{session_id}.cancel"


def request_cancel(home: Path, session_id: str, reason: str, now: str) -> None:
    """Leave a cancel request for the owner of ``session_id``.

    Raises:
        OSError: the request cannot be written.
    """
    path = _path(home, session_id)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"reason": reason, "requested_at": now, "pid": os.getpid()}))
    tmp.replace(path)


def take_cancel_request(home: Path, session_id: str) -> str | None:
    """Return the reason of a pending cancel request for ``session_id`` and remove it;
    None when there is none."""
    path = _path(home, session_id)
    try:
        text = path.read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return "cancelled from another process"
    clear(home, session_id)
    try:
        reason = json.loads(text).get("reason")
    except (ValueError, AttributeError):
        reason = None
    return reason if isinstance(reason, str) and reason else "cancelled from another process"


def clear(home: Path, session_id: str) -> None:
    """Drop a request an earlier run did not pick up."""
    with contextlib.suppress(OSError):
        _path(home, session_id).unlink()
