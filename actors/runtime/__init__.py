"""The runtime room: the ``Runtime`` facade, sessions, and the operations over a home.

``runtime`` (the facade and ``Session``) · ``engine`` (store, writer, locks, task
managers) · ``runs`` (a new main run) · ``handle`` (a run in progress) · ``aio`` (its
``async`` twins: ``arun``, ``astream``) · ``teams`` (a run's team and model chains) ·
``replayer`` · ``resume`` · ``verify`` · ``faults`` (the crash-test seam) · ``locks``
(session ownership).
"""
