"""The runtime room: ``Runtime`` (an open home) and ``Session`` (one session's verbs).

``runtime`` (``Runtime``: open a home, find its sessions, serve) · ``session``
(``Session``: every verb on one session) · ``engine`` (the open parts: store, writer,
owner locks, task managers) · ``config`` (``RunConfig``: what a run is made of; its team,
model chains and context) · ``start`` (a new session, a new main run, ``RunHandle`` and
its ``async`` twins) · ``recovery`` (resume, retry, cancel) · ``waiting`` (sessions
waiting for a person) · ``branching`` (fork, switch node, rerun) · ``upkeep`` (archive,
delete, verify, copy) · ``replayer`` · ``status`` (a session's status, its runs, follow)
· ``serving`` (recipes and ``Runtime.serve``'s loop) · ``faults`` (the crash-test seam) ·
``control`` (requests from other processes) · ``coord/`` (session leases and the run
queue, on SQLite or PostgreSQL).
"""
