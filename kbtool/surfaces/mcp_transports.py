"""How `kb serve` reaches its clients: stdio, or streamable HTTP behind a bearer token (required off
loopback) and kb.toml's request limits (size, rate). The tools themselves are kbtool/surfaces/mcp.py.
"""

from __future__ import annotations

import hmac
import json
import sys
import time
from typing import Any

from ..kb import KnowledgeBase
from ..model.errors import BadInput
from ..store.locate import named_root
from ..web.access import is_loopback, listening_socket
from .mcp import build_server


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise BadInput(f"--http {address!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


class BearerToken:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`, else 401."""

    def __init__(self, app: Any, token: str):
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                error = "unauthorized: send Authorization: Bearer <token>"
                await _refuse(send, 401, error, ((b"www-authenticate", b"Bearer"),))
                return
        await self.app(scope, receive, send)


class RequestLimits:
    """ASGI middleware for kb.toml [limits]: a request body over request_bytes is refused with 413, by
    its Content-Length or, when it streams without one, as soon as it passes it; a client past
    requests_per_minute gets 429 (a token bucket per client address, refilled continuously)."""

    def __init__(self, app: Any, limit: int, per_minute: int):
        self.app, self.limit, self.per_minute = app, limit, per_minute
        self.buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, when counted)

    def _allowed(self, client: str) -> bool:
        now = time.monotonic()
        tokens, then = self.buckets.get(client, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - then) * self.per_minute / 60)
        self.buckets[client] = (tokens - 1, now) if tokens >= 1 else (tokens, now)
        return tokens >= 1

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("?",))[0]
        if not self._allowed(client):
            retry = ((b"retry-after", str(max(1, round(60 / self.per_minute))).encode()),)
            await _refuse(send, 429, f"over {self.per_minute} requests a minute; slow down", retry)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await _refuse(send, 413, f"request of {int(declared):,} bytes, over the limit of {self.limit:,}")
            return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:  # a body streamed past the limit: the app sees the client go away
                return {"type": "http.disconnect"}
            return message

        await self.app(scope, counted, send)


async def _refuse(send: Any, status: int, error: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = json.dumps({"error": error}).encode()
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), *headers],
    }
    await send(start)
    await send({"type": "http.response.body", "body": body})


def open_served(specs: list[str]) -> dict[str, KnowledgeBase]:
    """`--kb [NAME=]PATH` given to kb serve, in order, each opened; without NAME a knowledge base goes
    by its kb.toml name."""
    named = [named_root(spec) for spec in specs]
    bases = KnowledgeBase.open_several(root for _, root in named)
    served: dict[str, KnowledgeBase] = {}
    for (given, root), base in zip(named, bases, strict=True):
        name = given or base.config.kb.name
        if name in served:
            raise BadInput(f"--kb: two knowledge bases named {name!r}; name each one: --kb NAME=PATH")
        if any(other.root == base.root for other in served.values()):
            raise BadInput(f"--kb: {root} is given twice")
        served[name] = base
    return served


def serve_stdio(kb: KnowledgeBase | dict[str, KnowledgeBase], read_only: bool) -> None:
    import anyio

    # the SDK's stdio transport points fd 1 at stderr while it serves, so nothing a library prints can
    # corrupt the protocol; the warm-up starts inside it (the server's lifespan) for that reason
    server, _ = build_server(kb, read_only, warm_on_start=True)
    anyio.run(server.run_stdio_async)


def serve_http(kb: KnowledgeBase | dict[str, KnowledgeBase], address: str, token: str | None, read_only: bool) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    host, port = parse_address(address)
    if not is_loopback(host) and not token:
        raise BadInput(
            f"--http {address}: serving beyond loopback needs --token (or KB_TOKEN); "
            "every request must then carry it as a bearer token"
        )
    server, shelf = build_server(kb, read_only)
    # off loopback the Host header is whatever name clients use; the bearer token is the guard
    security = None if is_loopback(host) else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app: Any = server.streamable_http_app(host=host, transport_security=security, stateless_http=False)
    limits = shelf.pick(None).kb.config.limits  # the default knowledge base's kb.toml sets the server's limits
    app = RequestLimits(app, limits.request_bytes, limits.requests_per_minute)
    if token:
        app = BearerToken(app, token)
    sock, url = listening_socket(host, port, "--http")
    shelf.warm()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(
        f"kb: serving MCP at {url}/mcp" + (" (bearer token required)" if token else ""),
        file=sys.stderr,
        flush=True,
    )
    uvicorn.Server(config).run(sockets=[sock])
