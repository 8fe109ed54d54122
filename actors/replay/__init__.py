"""The replay room: recording a run and checking a re-execution against its recording.

``recorder`` (the one seam every effect of a run passes through) · ``diff`` (field-level
differences) · ``log`` (what re-executed runs found) · ``report`` (the replay report) ·
``recording`` (reading a recording back, stand-ins) · ``inputs`` (the recorded run
inputs, versioned).
"""
