"""`kb serve`: the knowledge base as MCP tools and resources, over stdio or streamable HTTP.

Every tool is a thin call into one long-lived KnowledgeBase, so the embedding model loads
once and stays loaded. The calls run one at a time on a single worker thread: the facade
and its SQLite index are not meant for concurrent use, the event loop stays free for the
transport. As soon as the server starts, that thread brings the keyword index up to date and
the model loads, and the missing vectors are embedded, on a background thread of their own.

A KbError becomes an MCP tool error carrying its one-line message (unknown id, invalid
field, bad filter); anything else is logged to stderr and reported as a tool error too,
so no input can take the server down.
"""

from __future__ import annotations

import asyncio
import builtins
import hmac
import ipaddress
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from ..kb import KnowledgeBase
from ..loop import formats
from ..model import markdown
from ..model.contracts import (
    SEARCH_KINDS,
    CardAdded,
    CardPage,
    Contract,
    FindingAdded,
    FindingInput,
    LintReport,
    ListedCard,
    OpenGap,
    OpenGaps,
    Related,
    SearchPage,
    SearchRequest,
    SkillBrief,
    SkillList,
)
from ..model.errors import BadInput, KbError
from ..model.records import StoredCard, brief
from ..model.vocabulary import DIRECTIONS, KINDS, LINT_CLASSES, MODES, STATUSES, words

log = logging.getLogger("kb.serve")

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# writers only add (a new card, one commit); nothing an agent calls deletes or rewrites
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
WRITERS = ("add_finding", "add_card")
SNIPPET_CHARS = 200
# the classes named from the one list of them, so a new class cannot be left out of the description
LINT_DESCRIPTION = (
    f"Check the knowledge base by these classes of checks: {words(LINT_CLASSES, 'and')}. Each problem is "
    "an error or a warning; ok when no errors."
)
DEFAULT_BUDGET = 6000  # characters of hit text a search answer may spend; agents pay for every one

INSTRUCTIONS = """kb is the project's knowledge base of contracts, constraints, findings, failure-modes,
gates, gaps and references, plus skills. Before an experiment, `search` for what applies (filter
on applies_to.hardware, applies_to.model, kind) and `get` the cards you will rely on (any hit's
id, skills included). Gates are immutable: meet them, never edit them. After a measured run,
`add_finding` with the numbers, their statistics and baseline, and `closes` when it answers a
gap; what you write lands tentative (or draft) until a person reviews it. `gaps` lists the open
questions."""

Filters = Annotated[
    dict[str, str | int | float | bool] | None,
    Field(description='field path -> value, all must match, e.g. {"applies_to.hardware": "B200"}'),
]
# the parameters search shares with the library take their descriptions from its contract
SEARCH = SearchRequest.model_fields
# Literal[TUPLE]: the MCP enums come from the one tuple each list is kept in; valid at run time, but
# mypy accepts only literal values inside Literal[], hence the ignores
Kind = Annotated[Literal[SEARCH_KINDS] | None, Field(description=SEARCH["kind"].description)]  # type: ignore[valid-type]
Status = Annotated[Literal[STATUSES] | None, Field(description=SEARCH["status"].description)]  # type: ignore[valid-type]
Tags = Annotated[list[str] | None, Field(description=SEARCH["tags"].description)]
Metrics = Annotated[
    dict[str, float | str | dict[str, Any]] | None,
    Field(
        description=(
            'metric name -> value: 943, "12ms", or an object {"value": 25.26, "unit": "ms", "p50": 24.1, '
            '"p99": 34.6, "samples": 500, "baseline": 30.2, "conditions": {"concurrency": 32}, "command": "..."}; '
            'statistics go inline (avg, p1 ... p99, min, max, std, count, sum) or in "stats"; unknown keys are refused'
        )
    ),
]


class KbTools:
    """The tools, each a plain method over the KnowledgeBase that returns a CallToolResult."""

    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-serve")

    def warm(self) -> None:
        """Bring the keyword index up to date before the first search asks; the model follows in the background."""
        self._worker.submit(self._warm_up)

    def _warm_up(self) -> None:
        try:
            self.kb.warm_in_background()
            self.kb.notices.clear()  # said at start-up, not to the first caller
        except Exception as exc:
            log.warning("kb serve: warming the index failed: %s", exc)

    async def call(self, fn: Callable[..., CallToolResult], *args: Any) -> CallToolResult:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._worker, self._with_notices, fn, *args)
        except KbError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            log.exception("kb serve: a tool failed")
            raise ToolError(f"internal error: {type(exc).__name__}: {exc}") from None

    def _with_notices(self, fn: Callable[..., CallToolResult], *args: Any) -> CallToolResult:
        """What the CLI prints as `kb: note:` (keyword-only search, a rebuilt index) goes into the answer."""
        self.kb.notices.clear()
        result = fn(*args)
        if self.kb.notices:
            result.content.append(TextContent(type="text", text="\n".join(f"note: {n}" for n in self.kb.notices)))
            self.kb.notices.clear()
        return result

    # --- reading ----------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int,
        kind: str | None,
        status: str | None,
        tags: builtins.list[str] | None,
        filters: dict[str, Any] | None,
        mode: str,
        budget: int,
    ) -> CallToolResult:
        if budget < 200:
            raise BadInput("budget must be at least 200 characters")
        result = self.kb.search(query, k=k, kind=kind, status=status, tags=tags or (), where=_where(filters), mode=mode)
        found = result.hits
        # room for the line that says the answer was cut, so the whole text stays within the budget
        room = budget - len(_cut_notice(len(found), len(found), budget)) - 1
        hits: builtins.list[SearchPage.Hit] = []
        lines: builtins.list[str] = []
        spent = 0
        for hit in found:
            short = SearchPage.Hit(
                id=hit.id,
                kind=hit.kind,
                title=hit.title,
                status=hit.status,
                score=hit.score,
                snippet=_one_line(hit.snippet, SNIPPET_CHARS),
            )
            line = f"{hit.id} [{hit.kind}, {hit.status}] {hit.title} — {short.snippet}"
            if spent + len(line) > room:
                if hits:
                    break
                line = _one_line(line, room)  # the best hit always shows, cut to fit
            hits.append(short)
            lines.append(line)
            spent += len(line) + 1
        truncated = len(hits) < len(found)
        page = SearchPage(query=query, hits=hits, truncated=truncated, shown=len(hits), found=len(found))
        text = "\n".join(lines) if lines else f"no cards match {query!r}"
        if truncated:
            text += "\n" + _cut_notice(len(hits), len(found), budget)
        return _result(text, page)

    def get(self, ref: str) -> CallToolResult:
        from ..skills.spec import render_skill

        found = self.kb.card_or_skill(ref)
        if isinstance(found, StoredCard):
            return _result(markdown.render(found.card, found.body), found.to_dict())
        return _result(render_skill(found), found.to_dict())

    def list(
        self,
        kind: str | None,
        status: str | None,
        tags: builtins.list[str] | None,
        filters: dict[str, Any] | None,
        limit: int,
        offset: int,
    ) -> CallToolResult:
        found = self.kb.summaries(kind=kind, status=status, tags=tags or (), where=_where(filters))
        page = found[offset : offset + limit]
        cards = [ListedCard(**brief(c), path=c.path) for c in page]
        text = "\n".join(f"{c.id} [{c.kind}, {c.status}] {c.title}" for c in cards) or "no cards match"
        if len(page) < len(found):
            after = offset + len(page)
            text += f"\n{len(page)} of {len(found)} cards shown (from {offset + 1 if page else offset});" + (
                f" call list again with offset={after} for the next page" if after < len(found) else ""
            )
        return _result(text, CardPage(cards=cards, total=len(found), offset=offset, truncated=len(page) < len(found)))

    def gaps(self) -> CallToolResult:
        gaps = [
            OpenGap(
                id=g.id,
                title=g.title,
                question=g.get("question", default=g.title),
                priority=g.get("priority", default="medium"),
                status=g.status,
            )
            for g in self.kb.gaps()
        ]
        text = "\n".join(f"{g.id} [{g.priority}] {g.question}" for g in gaps) or "no open gaps"
        return _result(text, OpenGaps(gaps=gaps))

    def lint(self, skip: builtins.list[str] | None) -> CallToolResult:
        report = self.kb.lint_report(skip or ())
        return _result("\n".join(report.lines()), report)

    def related(self, ref: str, k: int) -> CallToolResult:
        found = self.kb.related(ref, k)
        lines = [
            f"{link.rel} -> {link.id}" + (f" [{link.kind}] {link.title}" if link.title is not None else " (missing)")
            for link in found.links_out
        ]
        lines += [f"{link.rel} <- {link.id} [{link.kind}] {link.title}" for link in found.links_in]
        lines += [f"similar {s.id} [{s.kind}] {s.title} (similarity {s.similarity:.3f})" for s in found.similar]
        return _result("\n".join(lines) or f"nothing links to or resembles {found.id}", found)

    def skills(self) -> CallToolResult:
        skills = [SkillBrief(name=s.name, description=s.description, path=s.path) for s in self.kb.skills()]
        text = "\n".join(f"{s.name}: {s.description}" for s in skills) or "no skills in this knowledge base"
        return _result(text, SkillList(skills=skills))

    def skill(self, name: str) -> CallToolResult:
        from ..skills.spec import render_skill

        found = self.kb.skill(name)
        return _result(render_skill(found), found.to_dict())

    # --- writing: every write is an agent's, so it lands for review (kbtool.loop.review) ----------

    def add_finding(self, data: dict[str, Any], agent: str) -> CallToolResult:
        finding = FindingInput.parse({k: v for k, v in data.items() if v is not None}, "add_finding")
        added = self.kb.record_finding(finding, agent=agent)
        notes = added.related.notes()
        text = f"added {added.id} ({added.path}) as {added.status}, awaiting review by a person" + (
            "; " + "; ".join(notes) if notes else ""
        )
        return _result(text, added)

    def add_card(
        self,
        kind: str,
        title: str,
        fields: dict[str, Any] | None,
        tags: builtins.list[str] | None,
        body: str,
        agent: str,
    ) -> CallToolResult:
        stored = self.kb.add(kind, title, tags=tags or (), body=body, status="draft", values=fields or {}, agent=agent)
        return _result(
            f"added {stored.id} ({stored.path}) as a draft, awaiting review by a person",
            CardAdded(id=stored.id, path=stored.path, status=stored.card.status),
        )


def agent_name(ctx: Context | None) -> str:
    """Who writes through this connection: the MCP client's name as it introduced itself."""
    params = getattr(getattr(ctx, "session", None), "client_params", None) if ctx is not None else None
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return f"mcp:{name}" if isinstance(name, str) and name.strip() else "mcp"


def build_server(kb: KnowledgeBase, read_only: bool = False, warm_on_start: bool = False) -> tuple[MCPServer, KbTools]:
    """The MCP server over kb; with read_only the writers are not offered at all. warm_on_start: the
    index warms up as the server starts serving (over stdio, once fd 1 is the protocol's and anything
    a library prints goes to stderr)."""
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    tools = KbTools(kb)

    @asynccontextmanager
    async def warming(_server: MCPServer) -> AsyncIterator[None]:
        tools.warm()
        yield

    server = MCPServer(
        f"kb ({kb.config.kb.name})",
        instructions=INSTRUCTIONS,
        version=_version(),
        log_level="DEBUG" if os.environ.get("KB_DEBUG") else "WARNING",
        lifespan=warming if warm_on_start else None,
    )

    @server.tool(annotations=READS)
    async def search(
        query: Annotated[str, Field(description=SEARCH["query"].description)],
        k: Annotated[int, Field(ge=1, le=100, description="how many hits at most")] = 10,
        kind: Kind = None,
        status: Status = None,
        tags: Tags = None,
        filters: Filters = None,
        mode: Annotated[Literal[MODES], Field(description=SEARCH["mode"].description)] = MODES[0],  # type: ignore[valid-type]
        budget: Annotated[
            int, Field(ge=200, le=100_000, description="characters of hits to return at most")
        ] = DEFAULT_BUDGET,
    ) -> Annotated[CallToolResult, SearchPage]:
        """Search the knowledge base (keywords and meaning, fused): the cards and skills that apply, best
        first, each with id, kind, title, status, score and a one-line snippet. Superseded and refuted
        cards rank last. `get` a hit's id (a card or a skill) for the whole of it. When the budget
        cuts the answer, the text ends by saying how many hits it shows of how many."""
        return await tools.call(tools.search, query, k, kind, status, tags, filters, mode, budget)

    @server.tool(annotations=READS)
    async def get(
        id: Annotated[
            str, Field(description="a card id (or a unique prefix of one), or a skill's name: any search hit's id")
        ],
    ) -> CallToolResult:
        """One whole card or skill: its fields as structured content and its markdown file as text."""
        return await tools.call(tools.get, id)

    @server.tool(annotations=READS, name="list")
    async def list_cards(
        kind: Annotated[Literal[KINDS] | None, Field(description="only cards of this kind")] = None,  # type: ignore[valid-type]
        status: Status = None,
        tags: Tags = None,
        filters: Filters = None,
        limit: Annotated[int, Field(ge=1, le=10_000, description="how many cards at most")] = 200,
        offset: Annotated[int, Field(ge=0, description="skip this many matches (for the next page)")] = 0,
    ) -> Annotated[CallToolResult, CardPage]:
        """List cards (id, kind, title, status) that match every filter given, a page at a time; the
        text says how many of how many it shows and the offset of the next page."""
        return await tools.call(tools.list, kind, status, tags, filters, limit, offset)

    @server.tool(annotations=READS)
    async def gaps() -> Annotated[CallToolResult, OpenGaps]:
        """The open questions (gaps nothing has closed yet), high priority first: what to measure next."""
        return await tools.call(tools.gaps)

    @server.tool(annotations=READS, description=LINT_DESCRIPTION)
    async def lint(
        skip: Annotated[list[Literal[LINT_CLASSES]] | None, Field(description="check classes to skip")] = None,  # type: ignore[valid-type]
    ) -> Annotated[CallToolResult, LintReport]:
        return await tools.call(tools.lint, skip)

    @server.tool(annotations=READS)
    async def related(
        id: Annotated[str, Field(description="a card id or a skill's name")],
        k: Annotated[int, Field(ge=1, le=50, description="how many similar cards")] = 5,
    ) -> Annotated[CallToolResult, Related]:
        """A card's (or skill's) neighbourhood: the cards it links to, the cards linking to it, and the most
        similar others."""
        return await tools.call(tools.related, id, k)

    @server.tool(annotations=READS)
    async def skills() -> Annotated[CallToolResult, SkillList]:
        """The skills (Agent Skills procedures) in this knowledge base: name and description."""
        return await tools.call(tools.skills)

    @server.tool(annotations=READS)
    async def skill(name: Annotated[str, Field(description="a skill's name, e.g. 'kb'")]) -> CallToolResult:
        """One skill's SKILL.md: when to use it and the procedure, to follow step by step."""
        return await tools.call(tools.skill, name)

    if not read_only:

        @server.tool(annotations=WRITES)
        async def add_finding(
            title: Annotated[str, Field(description="what was found, in one line")],
            ctx: Context,
            claim: Annotated[str | None, Field(description="the claim, if longer than the title")] = None,
            metrics: Metrics = None,
            baseline: Annotated[
                dict[str, float | str | dict[str, Any]] | None,
                Field(description="the baseline's value for some of the metrics, same form"),
            ] = None,
            direction: Annotated[
                Literal[DIRECTIONS] | None,  # type: ignore[valid-type]
                Field(description="which way is better (guessed from metric names when left out)"),
            ] = None,
            applies_to: Annotated[
                dict[str, str | int | float | list[str]] | None,
                Field(description="scope: model, arch, hardware, precision, phase, workload, engine"),
            ] = None,
            status: Annotated[
                Literal["tentative", "draft"],
                Field(description="tentative (default) or draft; a person confirms findings after review"),
            ] = "tentative",
            closes: Annotated[str | None, Field(description="the id of a gap this finding answers")] = None,
            tags: Tags = None,
            project: Annotated[str | None, Field(description="the project that measured it")] = None,
            command: Annotated[str | None, Field(description="the command that measured the metrics")] = None,
            conditions: Annotated[
                dict[str, str | int | float] | None,
                Field(description='what the metrics were measured under, e.g. {"concurrency": 32, "isl": 1024}'),
            ] = None,
            artifact: Annotated[
                str | None,
                Field(description=f"path of a benchmark export on this machine: {formats.described()}"),
            ] = None,
            body: Annotated[str | None, Field(description="notes, in markdown")] = None,
        ) -> Annotated[CallToolResult, FindingAdded]:
            """Record a measured finding (one git commit), tentative until a person reviews it; returns
            its id and any likely duplicates or contradictions among existing findings. Every number
            given is kept (statistics, samples, conditions, command); an unknown key is refused."""
            data = {
                "title": title,
                "claim": claim,
                "metrics": metrics,
                "baseline": baseline,
                "direction": direction,
                "applies_to": applies_to,
                "status": status,
                "closes": closes,
                "tags": tags,
                "project": project,
                "command": command,
                "conditions": conditions,
                "from": artifact,
                "body": body,
            }
            return await tools.call(tools.add_finding, data, agent_name(ctx))

        @server.tool(annotations=WRITES)
        async def add_card(
            kind: Annotated[Literal[KINDS], Field(description="the card's kind")],  # type: ignore[valid-type]
            title: Annotated[str, Field(description="the card's title, one line")],
            ctx: Context,
            fields: Annotated[
                dict[str, Any] | None,
                Field(
                    description='the kind\'s fields, e.g. {"rule": "..."} for a constraint, {"symptom": "...", '
                    '"fix": "..."} for a failure-mode; nested objects for applies_to, source, check. '
                    "Not id, status, links or provenance: kb sets those, and a person reviews the card"
                ),
            ] = None,
            tags: Tags = None,
            body: Annotated[str, Field(description="the card's text, in markdown")] = "",
        ) -> Annotated[CallToolResult, CardAdded]:
            """Add a card of any kind, written as a draft for a person to review (one git commit); returns
            its id. A gate stays a draft, unlocked and not runnable, until a person confirms it."""
            return await tools.call(tools.add_card, kind, title, fields, tags, body, agent_name(ctx))

    @server.resource("kb://cards/{id}", mime_type="text/markdown", description="a card's markdown file")
    async def card_resource(id: str) -> str:
        return await _read(tools, lambda: _card_text(kb, id))

    @server.resource("kb://skills/{name}", mime_type="text/markdown", description="a skill's SKILL.md")
    async def skill_resource(name: str) -> str:
        from ..skills.spec import render_skill

        return await _read(tools, lambda: render_skill(kb.skill(name)))

    return server, tools


def _cut_notice(shown: int, found: int, budget: int) -> str:
    return (
        f"{shown} of {found} hits shown (the answer is cut to budget={budget} characters); "
        "raise budget, lower k or narrow the query to see the rest"
    )


async def _read(tools: KbTools, fn: Callable[[], str]) -> str:
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(tools._worker, fn)
    except KbError as exc:
        raise ResourceError(str(exc)) from None


def _card_text(kb: KnowledgeBase, ref: str) -> str:
    stored = kb.get(ref)
    return markdown.render(stored.card, stored.body)


def _result(text: str, structured: Contract | dict[str, Any]) -> CallToolResult:
    data = structured.to_json() if isinstance(structured, Contract) else structured
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _where(filters: dict[str, Any] | None) -> list[str]:
    """The filters object as `key=value` pairs, checked here so an error names `filters`, not --where."""
    from ..model.fields import parse_filters

    out = [
        f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in (filters or {}).items()
    ]
    parse_filters(out, "filters")
    return out


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("kbtool")
    except metadata.PackageNotFoundError:
        return "0"


# --- transports ---------------------------------------------------------------------------


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise BadInput(f"--http {address!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


def serve_stdio(kb: KnowledgeBase, read_only: bool) -> None:
    import anyio

    # the SDK's stdio transport points fd 1 at stderr while it serves, so nothing a library prints can
    # corrupt the protocol; the warm-up starts inside it (the server's lifespan) for that reason
    server, _ = build_server(kb, read_only, warm_on_start=True)
    anyio.run(server.run_stdio_async)


def serve_http(kb: KnowledgeBase, address: str, token: str | None, read_only: bool) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    host, port = parse_address(address)
    if not is_loopback(host) and not token:
        raise BadInput(
            f"--http {address}: serving beyond loopback needs --token (or KB_TOKEN); "
            "every request must then carry it as a bearer token"
        )
    server, tools = build_server(kb, read_only)
    # off loopback the Host header is whatever name clients use; the bearer token is the guard
    security = None if is_loopback(host) else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app: Any = server.streamable_http_app(host=host, transport_security=security, stateless_http=False)
    app = RequestLimits(app, kb.config.limits.request_bytes, kb.config.limits.requests_per_minute)
    if token:
        app = BearerToken(app, token)
    # bind here, not in uvicorn: a taken port is a one-line error, and port 0 can say which port it got
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # listening now: a client that connects before uvicorn runs waits in the backlog
    except OSError as exc:
        sock.close()
        raise BadInput(f"--http {address}: cannot listen there ({exc.strerror or exc})") from None
    bound = sock.getsockname()[1]
    tools.warm()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    print(
        f"kb: serving MCP at http://{shown}:{bound}/mcp" + (" (bearer token required)" if token else ""),
        file=sys.stderr,
        flush=True,
    )
    uvicorn.Server(config).run(sockets=[sock])
