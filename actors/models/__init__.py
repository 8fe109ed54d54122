"""The models room: the model and tool seams and their implementations.

``protocol`` (``Model``, requests and responses) · ``tools`` (``Tool``, the registry) ·
``chains`` (the ``model=`` argument) · ``async_models`` (async models behind the sync
seam, and the loop they run on) · ``calls`` (a call off the actor's thread: timeout,
cancel) · ``scripted`` (the deterministic model) · ``storable`` · ``providers/``
(OpenAI-compatible and Anthropic adapters over HTTP).
"""
