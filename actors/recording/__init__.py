"""The recording room: what every run, live or re-executed, records itself through.

``recorder`` (the :class:`RunRecorder`, the one seam every effect of a run passes
through, in one of three modes: ``replaying`` a recording, ``live`` past its end, and
``replay-only``, which stops at the end of an interrupted recording instead of going
live; its durable waits for a person) · ``commits`` (a live run's events, committed in
groups) · ``inputs`` (``RunSettings`` and ``RunInputs``: the run's configuration, the
one versioned record a replay rebuilds the run from) · ``recorded`` (reading a session's
recording back: events by run, its inputs, stand-ins for models and tools) ·
``outcomes`` (events and divergences the recorder builds by itself) · ``stops`` (what
stops a run without being an outcome of it).

The room sits above ``replay/`` (re-execution, comparison and reports), whose options,
cuts and live-tools check the recorder uses when it re-checks a recording; ``replay/``
imports nothing from here.
"""
