"""Who may reach a kb server: loopback by default; beyond it only with a token (`kb serve --http`, `kb ui`).

A browser cannot send a bearer header, so `kb ui` off loopback takes the token once in the URL
(?token=...), keeps it in an HttpOnly cookie and drops it from the address bar. On loopback, the
Host header must name loopback too: a web page elsewhere cannot reach the server through a DNS name
that resolves to 127.0.0.1 (DNS rebinding).
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from typing import Any
from urllib.parse import parse_qsl, urlencode

COOKIE = "kb_token"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


def _host_name(scope: dict[str, Any]) -> str:
    host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
    if host.startswith("["):
        return host.split("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class LoopbackOnly:
    """ASGI middleware: a request whose Host header is not a loopback name gets 421."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and _host_name(scope) not in LOOPBACK_NAMES:
            await _refuse(send, 421, "kb ui answers on loopback names only (localhost, 127.0.0.1)")
            return
        await self.app(scope, receive, send)


class TokenCookie:
    """ASGI middleware: the token in the URL once (it becomes a cookie), then the cookie; else 401."""

    def __init__(self, app: Any, token: str):
        self.app, self.token = app, token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = next((v for k, v in query if k == "token"), None)
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope["path"] + (f"?{rest}" if rest else "")
            cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode())],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        cookies = dict(scope.get("headers") or []).get(b"cookie", b"").decode("latin-1")
        sent = next((c.split("=", 1)[1] for c in cookies.split("; ") if c.startswith(f"{COOKIE}=")), "")
        if not hmac.compare_digest(sent.encode(), self.token.encode()):
            await _refuse(send, 401, "unauthorized: open the address kb ui printed, with its ?token=")
            return
        await self.app(scope, receive, send)


def listening_socket(host: str, port: int, flag: str) -> tuple[socket.socket, str]:
    """A socket bound and listening, and the address it got ("http://127.0.0.1:8123"). Bound here, not in
    uvicorn: a taken port is a one-line error, and port 0 can say which port it got."""
    from ..model.errors import BadInput

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
