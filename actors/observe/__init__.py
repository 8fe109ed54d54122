"""Seeing a run from outside: ``logs`` (the run digest: one log line per run, worker, model
call and tool call, derived from committed events by a commit listener)."""
