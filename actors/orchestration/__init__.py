"""The orchestration room: the Brain and its workers, and the flow of a main run.

``brain`` (the Brain actor, ``RunRequest``) · ``main_run`` (the flow's steps, and its
bounded fix loop: checks, review, fixes) · ``pool`` (the worker pool) · ``worker`` (one
actor per worker invocation) · ``inbox`` (where results arrive) · ``loop`` (the
model/tool cycle) · ``plan`` (the router's plan, worker replies) · ``prompts`` (system
prompts, isolation constraints, the role catalogue) · ``team`` (``Team`` and ``Role``:
the team definition, ``extends``) · ``roster`` (the team as a run uses it, and as it is
recorded) · ``output`` (typed output) · ``dispatch`` (the primary's built-in
``dispatch`` tool) · ``run_plan`` (a run's todos in the log, the Task WAL, the plan file
and the board nodes) · ``checks`` (a team's ``Check``) · ``approvals`` (tool calls that
wait for a person) · ``env`` (what a session's actors may use).
"""
