"""The runtime room: the ``Runtime`` facade, sessions, and the operations over a home.

``runtime`` (the facade) · ``engine`` (store, writer, locks, task
managers) · ``session`` (``Session``) · ``runs`` (a new main run) · ``handle`` (a run
in progress) · ``aio`` (its ``async`` twins: ``arun``, ``astream``) · ``teams`` (a run's
team and model chains) · ``replayer`` · ``resume`` · ``retry`` (a failed
run's new attempt) · ``archive`` · ``verify`` · ``follow`` (a
session's events as they land) · ``waiting`` and ``hitl`` (sessions waiting for a
person) · ``faults`` (the crash-test seam) · ``locks`` (session ownership) · ``status``
(a session's status, derived from its runs) · ``coord/`` (session leases and the run
queue, on SQLite or PostgreSQL) · ``recipes`` (what an app registers to serve) ·
``serving`` (``Runtime.serve``'s loop) · ``serve_api`` (``submit``, ``queue``, ``serve``).
"""
