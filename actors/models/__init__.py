"""The models room: the model and tool seams and their implementations.

``protocol`` (``Model``, requests and responses) · ``tools`` (``Tool``, the registry) ·
``chains`` (the ``model=`` argument) · ``scripted`` (the deterministic model) ·
``providers/`` (OpenAI-compatible and Anthropic adapters over HTTP).
"""
