"""The inspector's safety: the access token, the CSRF guard on actions, the headers.

- **Token.** When the server has one (always when it binds beyond loopback), every
  request — pages, JSON, static files and the SSE streams — must carry it: the
  ``clew_ui_token`` cookie (set when a page is opened with ``?token=…``), an
  ``Authorization: Bearer …`` header, or ``?token=…``. Compared in constant time.
- **CSRF.** Every ``POST`` needs the per-server CSRF token (written into the page it
  serves) in ``X-Clew-CSRF``, a JSON body, and — when the browser sends one — an
  ``Origin`` equal to the server's own. Other methods than GET/HEAD/POST are refused.
- **Headers.** A strict Content-Security-Policy (scripts and styles from the server
  only, no inline script), ``nosniff``, no framing, no referrer.
"""

from __future__ import annotations

import hmac
import secrets
from http.cookies import SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE: Final = "clew_ui_token"
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


def presented_token(scope: Scope) -> str | None:
    """Return the token a request carries (header, query or cookie), if any."""
    headers = _headers(scope)
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    from_query = _query_token(scope)
    if from_query is not None:
        return from_query
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header carries no token
        return None
    morsel = cookie.get(COOKIE)
    return str(morsel.value) if morsel is not None else None


def origin_ok(scope: Scope) -> bool:
    """True when the request has no ``Origin`` or one naming this very server."""
    headers = _headers(scope)
    origin = headers.get("origin")
    if origin is None:
        return True
    host = headers.get("host", "")
    scheme = scope.get("scheme", "http")
    return origin in (f"{scheme}://{host}",)


class Guard:
    """ASGI middleware: token on every request, CSRF on actions, security headers."""

    def __init__(self, app: ASGIApp, *, token: str | None, csrf: str, live: Any = None) -> None:
        self.app = app
        self.token = token
        self.csrf = csrf
        #: The server's live streams (``close()`` ends them), when it has any.
        self.live = live

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
                    cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", cookie.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        if self.token is not None and not _same(presented_token(scope), self.token):
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
        if not origin_ok(scope):
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
