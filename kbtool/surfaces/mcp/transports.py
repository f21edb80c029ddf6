"""How `kb serve` reaches its clients: stdio, or streamable HTTP behind bearer tokens.

Over HTTP, kb.toml's request limits (size, rate) apply, and every write needs a token, on loopback too (any
local user reaches loopback), so a server started with none makes one and prints it; on loopback reads need
none, beyond it every request does. Each agent may have a token of its own (--agent-token NAME=TOKEN), which
is who it is (kbtool/surfaces/mcp/identity.py). The tools themselves are kbtool/surfaces/mcp/tools/.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model.errors import BadInput
from kbtool.store.locate import named_root
from kbtool.surfaces.mcp.identity import Identities
from kbtool.surfaces.mcp.server import build_server
from kbtool.surfaces.web.access import bearer_of, is_loopback, listening_socket, new_token


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise BadInput(f"--http {address!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


class BearerToken:
    """ASGI middleware: a request with an `Authorization` header must carry `Bearer <token>` (the scheme in any
    case) with one of the server's tokens, else 401; one without gets 401 too unless reads_open (on loopback:
    the writing tools then refuse it themselves, KbServer.call_tool)."""

    def __init__(self, app: Any, identities: Identities, reads_open: bool = False):
        self.app, self.identities, self.reads_open = app, identities, reads_open

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            sent = b"authorization" in dict(scope.get("headers") or [])
            if not self.identities.accepts(bearer_of(scope)) and (sent or not self.reads_open):
                error = "unauthorized: send Authorization: Bearer <token>"
                await _refuse(send, 401, error, ((b"www-authenticate", b"Bearer"),))
                return
        await self.app(scope, receive, send)


class TokenBuckets:
    """A token bucket per key, `per_minute` deep and refilled continuously. Memory stays bounded by the keys
    of the last minute (a bucket refills completely in 60 s, and a full one is the same as none), pruned at
    most once per doubling however many keys arrive."""

    PRUNE_AT = 10_000

    def __init__(self, per_minute: float):
        self.per_minute = per_minute
        self.buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when counted)
        self.prune_at = self.PRUNE_AT

    def take(self, key: str) -> bool:
        now = time.monotonic()
        if len(self.buckets) > self.prune_at:
            self.buckets = {k: (t, then) for k, (t, then) in self.buckets.items() if now - then < 60.0}
            self.prune_at = max(self.PRUNE_AT, 2 * len(self.buckets))
        tokens, then = self.buckets.get(key, (self.per_minute, now))
        tokens = min(self.per_minute, tokens + (now - then) * self.per_minute / 60)
        self.buckets[key] = (tokens - 1, now) if tokens >= 1 else (tokens, now)
        return tokens >= 1


class RequestLimits:
    """ASGI middleware for kb.toml [limits]: a request body over request_bytes is refused with 413, by
    its Content-Length or, when it streams without one, as soon as it passes it; a client past
    requests_per_minute gets 429.

    A client is a connection: MCP over HTTP keeps no session, and on loopback a whole team's agents share
    one address, so each agent's connection has its own bucket. An address as a whole may make
    AGENTS_PER_ADDRESS times as many, so a client opening a new connection per request is held too."""

    AGENTS_PER_ADDRESS = 64

    def __init__(self, app: Any, limit: int, per_minute: int):
        self.app, self.limit, self.per_minute = app, limit, per_minute
        self.connections = TokenBuckets(float(per_minute))
        self.addresses = TokenBuckets(float(per_minute * self.AGENTS_PER_ADDRESS))

    def _allowed(self, scope: dict[str, Any]) -> bool:
        address, port = (list(scope.get("client") or ()) + ["?", 0])[:2]
        return self.connections.take(f"{address} {port}") and self.addresses.take(str(address))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._allowed(scope):
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
    _registered(kb, "stdio")
    anyio.run(server.run_stdio_async)


def _registered(kb: KnowledgeBase | dict[str, KnowledgeBase], address: str) -> None:
    """This server in the user's registry of kb processes (kbtool.store.servers), so `kb status` shows it."""
    from kbtool.store import servers

    served = kb.values() if isinstance(kb, dict) else [kb]
    servers.register("serve", [base.root for base in served], address)


def transport_security(host: str) -> Any:
    """On loopback, the SDK's DNS-rebinding guard, naming the address served too (127.0.0.2 is loopback as
    well); beyond it the Host header is whatever name clients use, and the bearer token is the guard."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = dict.fromkeys(["127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"http://{name}:*" for name in names],
    )


def serve_http(
    kb: KnowledgeBase | dict[str, KnowledgeBase],
    address: str,
    token: str | None,
    read_only: bool,
    agent_tokens: Mapping[str, str] | None = None,
) -> None:
    """agent_tokens: token -> the agent it stands for (parse_agent_tokens); token: the server's one token, the
    agent `shared`. With neither, the server makes a token and prints it once."""
    import uvicorn

    host, port = parse_address(address)
    agent_tokens = dict(agent_tokens or {})
    if not is_loopback(host) and not (token or agent_tokens):
        raise BadInput(
            f"--http {address}: serving beyond loopback needs --token (or KB_TOKEN) or --agent-token; "
            "every request must then carry one as a bearer token"
        )
    made = token is None and not agent_tokens
    token = new_token() if made else token
    identities = Identities.for_http(token, agent_tokens)
    server, shelf = build_server(kb, read_only, identities=identities)
    app: Any = server.streamable_http_app(host=host, transport_security=transport_security(host), stateless_http=False)
    limits = shelf.pick(None).config.limits  # the default knowledge base's kb.toml sets the server's limits
    app = RequestLimits(app, limits.request_bytes, limits.requests_per_minute)
    app = BearerToken(app, identities, reads_open=is_loopback(host))
    sock, url = listening_socket(host, port, "--http")
    shelf.warm()
    _registered(kb, f"{url}/mcp")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    if made:  # shown once, as Jupyter shows its token; one given is never printed
        needs = f" (writes need Authorization: Bearer {token})"
    else:
        needs = " (bearer token required)" if not is_loopback(host) else " (writes need a bearer token)"
    print(f"kb: serving MCP at {url}/mcp{needs}", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])
