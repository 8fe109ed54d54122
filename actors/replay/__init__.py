"""The replay room: recording a run and checking a re-execution against its recording.

``recorder`` (the one seam every effect of a run passes through) · ``diff`` (field-level
differences) · ``request_diff`` (what changed between two model requests) · ``log`` (what
re-executed runs found) · ``report`` (the replay report) · ``divergence`` (the first
divergence and its consequences, folded) · ``recording`` (reading a recording back,
stand-ins) · ``inputs`` (the recorded run inputs, versioned) · ``options`` (live tools,
resuming past a divergence) · ``live_tools`` (re-running idempotent tools and comparing) ·
``cuts`` (where a resume went on past a divergence) · ``outcomes`` (events and
divergences the recorder builds by itself) · ``commits`` (a live run's events, committed in
groups).
"""
