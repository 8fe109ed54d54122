"""The tasks room: the task manager actor (the one writer of a session's Task WALs).

``manager`` (the actor and its typed proxy) · ``changes`` (the change requests and a
WAL's report) · ``run_board`` (a main run's idempotent view of its DAG) · ``inspect``
(read-only inspection of a session's WALs) · ``agreement`` (a run's WAL against its log,
and its WAL's name) · ``plan_file`` (the plan as a derived project Markdown file).
"""
