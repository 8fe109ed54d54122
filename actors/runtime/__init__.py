"""The runtime room: the ``Runtime`` facade, sessions, and the operations over a home.

``runtime`` (the facade and ``Session``) · ``engine`` (store, writer, locks, task
managers) · ``runs`` (a new main run) · ``teams`` (a run's team and model chains) ·
``replayer`` · ``resume`` · ``retry`` (a failed run's new attempt) · ``archive`` ·
``verify`` · ``faults`` (the crash-test seam) · ``locks`` (session ownership).
"""
