"""``clew ui``: the web inspector — a small ASGI app (Starlette, served by uvicorn) and
hand-written HTML/JS/CSS shipped in ``static/`` (no build step). Needs ``clew[ui]``.

``server`` (the app, its routes, :class:`UiServer`; the JSON documents it serves are
:mod:`actors.documents`, read-only) · ``actions`` (approve/deny/edit, answer, cancel,
switch, replay, resume: the CLI's own Runtime calls) · ``live`` (SSE streams) ·
``guard`` (token, CSRF, headers).
See docs/ui.md.
"""

from actors.ui.actions import Resumer
from actors.ui.server import ROUTES, UiServer, create_app

__all__ = ["ROUTES", "Resumer", "UiServer", "create_app"]
