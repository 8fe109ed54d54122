"""The inspector's ASGI app (Starlette) and a server to run it (uvicorn).

:func:`create_app` builds the app over an open :class:`~actors.runtime.runtime.Runtime`;
:class:`UiServer` runs it on a thread (the tests, an embedding application) or in the
foreground (``clew ui``). The JSON endpoints are listed in :data:`ROUTES` (served as an
OpenAPI document at ``/api/openapi.json`` and tabled in docs/ui.md).
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable
from importlib.resources import files
from pathlib import Path
from types import FrameType
from typing import Any, Final

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from actors.documents.calls import call_view, waterfall_doc, waterfall_since
from actors.documents.redrives import redrive_doc, redrives_doc
from actors.documents.sessions import PAGE, session_doc, sessions_doc
from actors.documents.tasks import dag_doc
from actors.documents.timeline import timeline_doc
from actors.documents.tree import artifact_preview, excerpts_doc, node_doc, tree_shape_doc
from actors.documents.usage import UsageCache, tokens_doc
from actors.errors import UsageError
from actors.runtime.runtime import Runtime
from actors.ui.actions import Actions, Resumer
from actors.ui.guard import Guard, new_token, served_names
from actors.ui.live import Live
from eventlog.errors import (
    ECHO_LIMIT,
    ClewError,
    InvalidSessionId,
    Refused,
    UnknownSession,
    clipped,
)
from eventlog.ids import validate_session_id
from projections.errors import UnknownNode

STATIC: Final = Path(str(files("actors.ui") / "static"))

#: The path of one session's endpoints.
SESSION: Final = "/api/sessions/{sid}"
#: Every JSON endpoint: (method, path, what it returns or does).
ROUTES: Final = (
    ("GET", "/api/sessions", "the sessions list; ?q= filters by id prefix or title"),
    ("GET", SESSION, "one session: status, runs, agents, waits, last seq"),
    ("GET", f"{SESSION}/tree", "the tree's shape: every node (no content), active path, forks"),
    ("GET", f"{SESSION}/excerpts", "?ids=A,B,…: one line and the kinds of each node shown"),
    ("GET", f"{SESSION}/node", "one node in full (?id=NODE): blocks, artifacts"),
    ("GET", f"{SESSION}/artifact", "an artifact's first 64 KiB as text (?id=)"),
    ("GET", f"{SESSION}/timeline", "a page of events: ?after=SEQ&limit=&agent=&type=&run="),
    ("GET", f"{SESSION}/dag", "the task DAG of each Task WAL, with statuses"),
    ("GET", f"{SESSION}/usage", "tokens by model, role and phase"),
    (
        "GET",
        f"{SESSION}/waterfall",
        "every run on one time axis: model, tool, approval bars;"
        " ?after=SEQ&calls=N: only what came after SEQ",
    ),
    ("GET", f"{SESSION}/call", "one model call whole (?n=N): request as sent, reply, diff"),
    ("GET", "/api/stream", "SSE: `sessions` whenever the sessions list changes"),
    ("GET", "/api/redrives", "the home's re-drives (clew redrive); ?session= those naming it"),
    ("GET", "/api/redrives/{rid}", "one re-drive: each session's outcome and status now"),
    ("GET", f"{SESSION}/stream", "SSE: `events` (new timeline rows) after ?after=SEQ"),
    ("POST", f"{SESSION}/decide", "{call_id, decision: approve|deny|edit, reason, arguments}"),
    ("POST", f"{SESSION}/answer", "{text}: answer the clarifying question"),
    ("POST", f"{SESSION}/cancel", "{reason}: cancel the run in progress"),
    ("POST", f"{SESSION}/switch", "{node_id}: move the active node"),
    ("POST", f"{SESSION}/replay", "{}: replay against the recording; the report"),
    ("POST", f"{SESSION}/resume", "{}: continue a waiting/interrupted run (resumer)"),
    ("GET", "/api/openapi.json", "this list as an OpenAPI 3.1 document"),
)

Handler = Callable[[Request], Awaitable[Response]]


class FastJSON(JSONResponse):
    """JSON encoded by msgspec (a 10⁵-node tree encodes ~10× faster than with ``json``)."""

    def render(self, content: Any) -> bytes:
        return msgspec.json.encode(content)


def _error(status: int, message: str) -> JSONResponse:
    return FastJSON({"error": _clipped_words(message)}, status_code=status)


def _clipped_words(message: str) -> str:
    """Return ``message`` with every word cut to the echo limit, as the CLI's error lines:
    a word that long can only be what the client sent (a 5 MB call id), never echoed whole."""
    margin = ECHO_LIMIT + 3  # a value already cut by quoted() (its quotes and "…") passes
    words = message.split(" ")
    return " ".join(clipped(w) if len(w) > margin else w for w in words)


async def _call(fn: Callable[..., Any], *args: Any) -> Response:
    """Run a store read or an action on a worker thread; map clew's errors to statuses."""
    try:
        doc = await run_in_threadpool(fn, *args)
    except (UnknownSession, UnknownNode) as e:
        return _error(404, str(e))
    except Refused as e:
        return _error(400, str(e))
    except ClewError as e:
        return _error(500, str(e))
    if doc is None:
        return _error(404, "not found")
    return FastJSON(doc)


def _sid(request: Request) -> str:
    return validate_session_id(request.path_params["sid"])


#: The largest seq a store holds (a signed 64-bit integer in SQLite and PostgreSQL): a
#: larger ``?after=`` is refused (400) instead of overflowing in the store's query.
MAX_QUERY_INT: Final = 2**63 - 1


def _int(request: Request, key: str, default: int) -> int:
    raw = request.query_params.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"?{key}= must be a whole number") from None
    if value > MAX_QUERY_INT:
        raise UsageError(f"?{key}= must be at most {MAX_QUERY_INT}")
    return max(0, value)


def openapi() -> dict[str, Any]:
    """Return :data:`ROUTES` as a minimal OpenAPI 3.1 document."""
    paths: dict[str, dict[str, Any]] = {}
    for method, path, what in ROUTES:
        op: dict[str, Any] = {"summary": what, "responses": {"200": {"description": "OK"}}}
        if method == "POST":
            op["parameters"] = [{"name": "X-Clew-CSRF", "in": "header", "required": True}]
        paths.setdefault(path, {})[method.lower()] = op
    return {"openapi": "3.1.0", "info": {"title": "clew ui", "version": "1"}, "paths": paths}


class Inspector:
    """The endpoints over one runtime."""

    def __init__(self, rt: Runtime, actions: Actions, live: Live, csrf: str) -> None:
        self.rt = rt
        self.actions = actions
        self.live = live
        self.csrf = csrf
        self.usage_cache = UsageCache()

    async def index(self, request: Request) -> Response:
        page = (STATIC / "index.html").read_text(encoding="utf-8")
        return HTMLResponse(page.replace("{{CSRF}}", self.csrf))

    async def sessions(self, request: Request) -> Response:
        try:
            limit = _int(request, "limit", PAGE)
        except Refused as e:
            return _error(400, str(e))
        after = request.query_params.get("after") or None
        return await _call(sessions_doc, self.rt, request.query_params.get("q", ""), after, limit)

    async def session(self, request: Request) -> Response:
        return await self._read(request, session_doc)

    async def tree(self, request: Request) -> Response:
        return await self._read(request, tree_shape_doc)

    async def dag(self, request: Request) -> Response:
        return await self._read(request, dag_doc)

    async def usage(self, request: Request) -> Response:
        return await self._read(request, tokens_doc, self.usage_cache)

    async def redrives(self, request: Request) -> Response:
        sid = request.query_params.get("session", "")
        try:
            sid = validate_session_id(sid) if sid else ""
        except InvalidSessionId as e:
            return _error(400, str(e))
        return await _call(redrives_doc, self.rt, sid)

    async def redrive(self, request: Request) -> Response:
        return await _call(redrive_doc, self.rt, request.path_params["rid"])

    async def waterfall(self, request: Request) -> Response:
        if request.query_params.get("after") is None:
            return await self._read(request, waterfall_doc)
        try:
            after, calls = _int(request, "after", 0), _int(request, "calls", 0)
        except Refused as e:
            return _error(400, str(e))
        return await self._read(request, waterfall_since, after, calls)

    async def call(self, request: Request) -> Response:
        try:
            n = _int(request, "n", 0)
        except Refused as e:
            return _error(400, str(e))
        return await self._read(request, call_view, n)

    async def excerpts(self, request: Request) -> Response:
        ids = request.query_params.get("ids", "").split(",")
        return await self._read(request, excerpts_doc, ids)

    async def node(self, request: Request) -> Response:
        node = request.query_params.get("id", "")
        return await self._read(request, node_doc, node)

    async def artifact(self, request: Request) -> Response:
        try:
            sid = _sid(request)
            found = await run_in_threadpool(
                artifact_preview, self.rt, sid, request.query_params.get("id", "")
            )
        except InvalidSessionId as e:
            return _error(400, str(e))
        except ClewError as e:
            return _error(500, str(e))
        if found is None:
            return _error(404, "no such artifact")
        mime, text, size = found
        return FastJSON({"mime_type": mime, "text": text, "size": size})

    async def timeline(self, request: Request) -> Response:
        q = request.query_params
        try:
            sid = _sid(request)
            after, limit = _int(request, "after", 0), _int(request, "limit", 100)
        except Refused as e:
            return _error(400, str(e))

        def page() -> dict[str, Any]:
            return timeline_doc(
                self.rt,
                sid,
                after=after,
                limit=limit,
                agent=q.get("agent", ""),
                event_type=q.get("type", ""),
                run=q.get("run", ""),
            )

        return await _call(page)

    async def _read(self, request: Request, fn: Callable[..., Any], *args: Any) -> Response:
        try:
            sid = _sid(request)
        except InvalidSessionId as e:
            return _error(400, str(e))
        return await _call(fn, self.rt, sid, *args)

    def action(self, fn: Callable[[str, dict[str, Any]], dict[str, Any]]) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                sid = _sid(request)
                body = json.loads(await request.body() or b"{}")
            except InvalidSessionId as e:
                return _error(400, str(e))
            except ValueError:
                return _error(400, "the body is not JSON")
            if not isinstance(body, dict):
                return _error(400, "the body must be a JSON object")
            return await _call(fn, sid, body)

        return endpoint

    async def session_stream(self, request: Request) -> Response:
        try:
            sid = _sid(request)
            after = _int(request, "after", 0)
            await run_in_threadpool(self.rt.store.read_session, sid)
        except UnknownSession as e:
            return _error(404, str(e))
        except Refused as e:
            return _error(400, str(e))
        return self.live.session_stream(request, sid, after)

    async def spec(self, request: Request) -> Response:
        return FastJSON(openapi())


def create_app(
    rt: Runtime,
    *,
    token: str | None = None,
    resumer: Resumer | None = None,
    csrf: str | None = None,
    hosts: Iterable[str] = (),
) -> Guard:
    """Return the inspector's ASGI app over ``rt``.

    Args:
        token: required on every request when given (see :mod:`actors.ui.guard`).
        resumer: continues a session once its approvals are decided (without one the page
            says to run ``clew resume``).
        csrf: the CSRF token of the pages (default: a fresh random one).
        hosts: the names it answers to besides the loopback names (``Host``, ``Origin``).
    """
    live = Live(rt)
    ui = Inspector(rt, Actions(rt, resumer), live, csrf or new_token())
    a = ui.actions
    s = SESSION
    routes = [
        Route("/", ui.index),
        Route("/api/sessions", ui.sessions),
        Route("/api/stream", live.sessions_stream),
        Route("/api/openapi.json", ui.spec),
        Route("/api/redrives", ui.redrives),
        Route("/api/redrives/{rid}", ui.redrive),
        Route(s, ui.session),
        Route(f"{s}/tree", ui.tree),
        Route(f"{s}/excerpts", ui.excerpts),
        Route(f"{s}/node", ui.node),
        Route(f"{s}/artifact", ui.artifact),
        Route(f"{s}/timeline", ui.timeline),
        Route(f"{s}/dag", ui.dag),
        Route(f"{s}/usage", ui.usage),
        Route(f"{s}/waterfall", ui.waterfall),
        Route(f"{s}/call", ui.call),
        Route(f"{s}/stream", ui.session_stream),
        *(
            Route(f"{s}/{name}", ui.action(fn), methods=["POST"])
            for name, fn in (
                ("decide", a.decide),
                ("answer", a.answer),
                ("cancel", a.cancel),
                ("switch", a.switch),
                ("replay", a.replay),
                ("resume", a.resume),
            )
        ),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    names = served_names(hosts)
    return Guard(Starlette(routes=routes), token=token, csrf=ui.csrf, live=live, names=names)


class _Server(uvicorn.Server):
    """uvicorn's server, but Ctrl-C only stops it: uvicorn would raise the signal again
    once shut down (and ``clew``'s handler would then report a run interrupted)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: do not wait for the streams
        else:
            self.should_exit = True


class UiServer:
    """The inspector served by uvicorn: on a thread (:meth:`start`) or in the foreground.

    The socket is bound when the server is made, so a port in use is refused at once
    (``UsageError``) and ``port=0`` picks a free one (:attr:`port`).
    """

    def __init__(
        self,
        rt: Runtime,
        *,
        host: str = "127.0.0.1",
        port: int = 8765,
        token: str | None = None,
        resumer: Resumer | None = None,
    ) -> None:
        self.app = create_app(rt, token=token, resumer=resumer, hosts=(host,))
        self.host = host
        self.token = token
        self.socket = _bind(host, port)
        self._port = int(self.socket.getsockname()[1])
        self.app.port = self._port  # Host, Origin and the token cookie name the port bound
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        self.server = _Server(config)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port bound (useful with ``port=0``)."""
        return self._port

    @property
    def url(self) -> str:
        """The address to open (with ``?token=`` when a token is required)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        tail = f"/?token={self.token}" if self.token else "/"
        return f"http://{host}:{self.port}{tail}"

    def start(self, timeout: float = 30.0) -> UiServer:
        """Serve on a daemon thread; return once it accepts connections."""
        self._thread = threading.Thread(target=self.run, name="clew-ui", daemon=True)
        self._thread.start()
        waited = threading.Event()
        for _ in range(int(timeout / 0.02)):
            if self.server.started or not self._thread.is_alive():
                break
            waited.wait(0.02)
        if not self.server.started:
            raise ClewError(f"the inspector could not start on {self.host}:{self.port}")
        return self

    def run(self) -> None:
        """Serve in the foreground until Ctrl-C (or :meth:`stop`)."""
        self.server.run(sockets=[self.socket])

    def stop(self) -> None:
        """Stop serving (the live streams end) and wait for the thread."""
        self.app.live.close()
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        with contextlib.suppress(OSError):
            self.socket.close()


def _bind(host: str, port: int) -> socket.socket:
    """Return a listening socket on ``host:port``.

    Raises:
        UsageError: the address cannot be used (a port in use, an unknown host).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, IndexError) as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.set_inheritable(True)
    return sock
