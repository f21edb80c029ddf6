"""Who may reach a kb server, and what it may do there (`kb ui`, `kb serve --http`).

Writes need a token, always: on a shared machine any local user reaches loopback, so a server
started without --token makes one and prints it once, as Jupyter does. On loopback reads stay
open; beyond loopback every request needs the token. A script sends it as `Authorization: Bearer
T` (the scheme in any case, RFC 9110 §11.1); a browser cannot, so `kb ui` takes it once in the URL
(?token=...), keeps it in an HttpOnly cookie and drops it from the address bar. On loopback, the
Host header must name loopback too (localhost, or any loopback address: 127.0.0.2 as well): a web
page elsewhere cannot reach the server through a DNS name that resolves to 127.0.0.1 (DNS
rebinding). No page of kb ui may be framed by another site, so none of its buttons can be
clicked through a page laid over it (clickjacking).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from typing import Any
from urllib.parse import parse_qsl, urlencode

COOKIE = "kb_token"
READS = (b"GET", b"HEAD")
# on every response of kb ui: never inside another site's frame, no guessing a type, no page address to other sites
PAGE_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


def is_loopback(host: str) -> bool:
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """The token a server makes when none is given (--token, KB_TOKEN)."""
    return secrets.token_urlsafe(24)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer T` header's value (the scheme in any case), else None."""
    scheme, _, credentials = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def bearer_of(scope: dict[str, Any]) -> str | None:
    """The bearer token an ASGI request carries, else None."""
    return bearer_token(_header(scope, b"authorization"))


def same_token(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def _header(scope: dict[str, Any], name: bytes) -> str:
    headers: dict[bytes, bytes] = dict(scope.get("headers") or [])  # ASGI: a list of (name, value) pairs
    return headers.get(name, b"").decode("latin-1")


async def _refuse(send: Any, status: int, text: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def host_name(scope: dict[str, Any]) -> str:
    """The Host header without its port: "127.0.0.1", "[::1]", "localhost"."""
    host = _header(scope, b"host")
    if host.startswith("["):
        return host.split("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class LoopbackOnly:
    """ASGI middleware: a request whose Host header is not a loopback name or address gets 421."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not is_loopback(host_name(scope)):
            await _refuse(send, 421, "kb answers on loopback names only (localhost, 127.0.0.1, ::1)")
            return
        await self.app(scope, receive, send)


class PageHeaders:
    """ASGI middleware: PAGE_HEADERS on every response."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *PAGE_HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)


class TokenCookie:
    """ASGI middleware for kb ui: the token in the URL once (it becomes a cookie), then the cookie or a bearer
    header; without it a write (anything but GET and HEAD) gets 401, and so does a read unless reads_open."""

    def __init__(self, app: Any, token: str, reads_open: bool = False):
        self.app, self.token, self.reads_open = app, token, reads_open

    def _cookie(self, scope: dict[str, Any]) -> str:
        """One name per port: two kb ui servers on one host keep their tokens apart (a cookie ignores ports)."""
        port = (scope.get("server") or ("", 0))[1]
        return f"{COOKIE}_{port}" if port else COOKIE

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = self._cookie(scope)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = next((v for k, v in query if k == "token"), None)
        if same_token(given, self.token):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope["path"] + (f"?{rest}" if rest else "")
            cookie = f"{name}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode())],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        cookies = _header(scope, b"cookie")
        sent = next((c.split("=", 1)[1] for c in cookies.split("; ") if c.startswith(f"{name}=")), None)
        allowed = same_token(sent, self.token) or same_token(bearer_of(scope), self.token)
        if not allowed and not (self.reads_open and scope.get("method", "GET").encode() in READS):
            what = "confirm, refute or edit" if self.reads_open else "use this server"
            await _refuse(send, 401, f"unauthorized: to {what}, open the address kb ui printed, with its ?token=")
            return
        await self.app(scope, receive, send)


def listening_socket(host: str, port: int, flag: str) -> tuple[socket.socket, str]:
    """A socket bound and listening, and the address it got ("http://127.0.0.1:8123"). Bound here, not in
    uvicorn: a taken port is a one-line error, and port 0 can say which port it got."""
    from kbtool.model.errors import BadInput

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # listening now: a client that connects before uvicorn runs waits in the backlog
    except OSError as exc:
        sock.close()
        raise BadInput(f"{flag} {host}:{port}: cannot listen there ({exc.strerror or exc})") from None
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}"
