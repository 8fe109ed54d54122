"""The replay room: re-executing a recorded run, comparing it with its recording, reporting.

``diff`` (field-level differences, found) · ``request_diff`` (what changed between two
model requests) · ``requests`` (model requests recorded by reference, rebuilt from the
log) · ``log`` (what re-executed runs found) · ``report`` (the replay report) ·
``divergence`` (the first divergence and its consequences, folded) · ``options`` (live
tools, resuming past a divergence) · ``live_tools`` (re-running idempotent tools and
comparing) · ``cuts`` (where a resume went on past a divergence) · ``calls`` (a
session's model calls, each request rebuilt as it was sent).

What every run records itself through (the recorder, its commit buffer, the run inputs)
lives in ``actors/recording/``; the divergence values in ``actors/divergences.py``.
"""
