"""What stops a run without being an outcome of it: the recorder's own stops (a
divergence, the end of a replay-only recording) and failures of the run's environment.

A run's code (the Brain's main run, a worker) catches what its recorder, task board or
store reads raise and asks here how to end: :func:`is_replay_stop` for a re-execution
that stops on purpose, :func:`interruption` for an environment failure that is never
recorded (the run ends as interrupted and a resume finishes it).
"""

from __future__ import annotations

import pykka

from actors.errors import Divergence, EndOfRecording, RunInterrupted
from actors.models.storable import safe_text
from eventlog.errors import StoreError, TaskWalError

#: Failures of a run's *environment*: the store (disk full, I/O error, locked past its
#: timeout, the writer stopped), a Task WAL that cannot be read or written, a commit or a
#: task manager's reply that did not come in time (``TimeoutError`` is an ``OSError``).
#: They are never recorded: the run stops as interrupted and a resume finishes it.
_ENVIRONMENT = (StoreError, TaskWalError, OSError, pykka.Timeout)


def is_replay_stop(e: BaseException) -> bool:
    """True for the exceptions that end a re-executed run on purpose."""
    return isinstance(e, Divergence | EndOfRecording)


def interruption(e: BaseException) -> RunInterrupted | None:
    """Return ``e`` as a :class:`RunInterrupted` if it is an environment failure, else None.

    Only for exceptions raised by the run's own code (recorder, task board, store reads):
    a tool's or a model's exceptions are outcomes and are recorded before they get here.
    """
    if isinstance(e, RunInterrupted):
        return e
    if isinstance(e, _ENVIRONMENT):
        return RunInterrupted(
            f"the run was interrupted by its environment ({safe_text(str(e)) or type(e).__name__});"
            " nothing of the failure was recorded"
        )
    return None
