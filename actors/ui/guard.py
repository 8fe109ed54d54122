"""The inspector's safety: the access token, the CSRF guard on actions, the headers.

- **Token.** When the server has one (always when it binds beyond loopback), every
  request — pages, JSON, static files and the SSE streams — must carry it: the
  ``clew_ui_token`` cookie (set when a page is opened with ``?token=…``), an
  ``Authorization: Bearer …`` header, or ``?token=…``. Compared in constant time.
  The cookie's name carries the server's port (``clew_ui_token_8765``): a browser scopes
  cookies by host name only, so two inspectors on two ports would otherwise overwrite
  each other's token.
- **Host.** Every request must name the server in ``Host``: a loopback name
  (``localhost``, ``127.0.0.1``, ``::1``) or a name the server was bound to (``--host``),
  with the server's port. A page under any other name — a DNS-rebinding attacker's,
  resolving to 127.0.0.1 — is refused before anything is read (421).
- **CSRF.** Every ``POST`` needs the per-server CSRF token (written into the page it
  serves) in ``X-Clew-CSRF``, a JSON body, and — when the browser sends one — an
  ``Origin`` on the same allow-list as ``Host`` (never compared with the request's own
  ``Host``, which the sender chooses). Other methods than GET/HEAD/POST are refused.
- **Headers.** A strict Content-Security-Policy (scripts and styles from the server
  only, no inline script), ``nosniff``, no framing, no referrer.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Iterable
from http.cookies import SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE: Final = "clew_ui_token"
#: The names a local inspector answers to, whatever it was bound to.
LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
CSRF_HEADER: Final = "x-clew-csrf"
SECURITY_HEADERS: Final = (
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
)


def new_token() -> str:
    """Return a fresh random token (for ``--token`` when none is given)."""
    return secrets.token_urlsafe(24)


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}


def served_names(hosts: Iterable[str] = ()) -> frozenset[str]:
    """Return the host names a server answers to: the loopback names and ``hosts``.

    A wildcard among ``hosts`` (the bind address ``0.0.0.0`` or ``::``) stands for this
    machine's host names, since it is reached by them.
    """
    names = set(LOOPBACK_NAMES)
    for host in hosts:
        bare = _name(host)
        try:
            wildcard = ipaddress.ip_address(bare).is_unspecified
        except ValueError:
            wildcard = False
        if wildcard:
            names |= {_name(socket.gethostname()), _name(socket.getfqdn())}
        elif bare:
            names.add(bare)
    return frozenset(names)


def _name(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` (``[v6]:port``) → (name, port); None when it does not parse."""
    try:
        parts = urlsplit(f"//{value}")
        port = parts.port
    except ValueError:
        return None
    if parts.hostname is None or parts.username is not None or parts.path:
        return None
    return _name(parts.hostname), port


def cookie_name(port: int | None) -> str:
    """The token cookie of the server on ``port`` (None: a server of no known port)."""
    return COOKIE if port is None else f"{COOKIE}_{port}"


def presented_token(scope: Scope, cookie: str = COOKIE) -> str | None:
    """Return the token a request carries (header, query or cookie ``cookie``), if any."""
    headers = _headers(scope)
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    from_query = _query_token(scope)
    if from_query is not None:
        return from_query
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header carries no token
        return None
    morsel = jar.get(cookie)
    return str(morsel.value) if morsel is not None else None


class Guard:
    """ASGI middleware: Host, token on every request, CSRF on actions, security headers."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        csrf: str,
        live: Any = None,
        names: Iterable[str] = LOOPBACK_NAMES,
    ) -> None:
        self.app = app
        self.token = token
        self.csrf = csrf
        #: The server's live streams (``close()`` ends them), when it has any.
        self.live = live
        #: The host names the server answers to (:func:`served_names`).
        self.names = frozenset(_name(n) for n in names)
        #: The port the server listens on, once bound (None: any port is accepted).
        self.port: int | None = None

    def host_ok(self, value: str | None) -> bool:
        """True when a ``Host`` value (or an origin's authority) names this server."""
        if value is None:
            return False
        parsed = _split_host(value)
        if parsed is None:
            return False
        name, port = parsed
        return name in self.names and (self.port is None or (port or 80) == self.port)

    def origin_ok(self, scope: Scope) -> bool:
        """True when the request has no ``Origin``, or one on the allow-list."""
        origin = _headers(scope).get("origin")
        if origin is None:
            return True
        scheme, _, authority = origin.partition("://")
        return scheme == scope.get("scheme", "http") and self.host_ok(authority)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, text = refusal
            await _plain(send, status, text)
            return
        set_cookie = self.token is not None and _query_token(scope) is not None

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += list(SECURITY_HEADERS)
                if set_cookie and self.token is not None:
                    name = cookie_name(self.port)
                    cookie = f"{name}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", cookie.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        if not self.host_ok(_headers(scope).get("host")):
            # 421 Misdirected Request: this server does not serve that name.
            return 421, "refused: this inspector does not serve that host name"
        presented = presented_token(scope, cookie_name(self.port))
        if self.token is not None and not _same(presented, self.token):
            return 401, "a valid token is required (open the URL clew ui printed)"
        method = scope.get("method", "GET")
        if method in ("GET", "HEAD"):
            return None
        return self._action_refusal(scope, method)

    def _action_refusal(self, scope: Scope, method: str) -> tuple[int, str] | None:
        if method != "POST":
            return 405, "only GET and POST are served"
        headers = _headers(scope)
        if not _same(headers.get(CSRF_HEADER), self.csrf):
            return 403, "refused: the CSRF token is missing or wrong"
        if not self.origin_ok(scope):
            return 403, "refused: the request comes from another origin"
        if not headers.get("content-type", "").startswith("application/json"):
            return 415, "refused: an action's body must be JSON"
        return None


def _query_token(scope: Scope) -> str | None:
    raw: bytes = scope.get("query_string", b"")
    values = parse_qs(raw.decode("latin-1")).get("token")
    return values[0] if values else None


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    headers: list[Any] = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
