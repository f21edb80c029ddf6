"""`kb serve`: the knowledge base as MCP tools and resources, declared to the SDK's MCPServer.

Every tool is a thin call into one long-lived KnowledgeBase (kbtool/surfaces/mcp_tools.py), so
the embedding model loads once and stays loaded. As soon as the server starts, the keyword index
is brought up to date and the model loads, and the missing vectors are embedded, on a background
thread of their own. The transports (stdio, HTTP) are kbtool/surfaces/mcp_transports.py.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from ..kb import KnowledgeBase
from ..loop import formats
from ..model import markdown
from ..model.contracts import (
    SEARCH_KINDS,
    CardAdded,
    CardPage,
    FindingAdded,
    LintReport,
    OpenGaps,
    Related,
    SearchPage,
    SearchRequest,
    SkillList,
)
from ..model.errors import KbError
from ..model.vocabulary import DIRECTIONS, KINDS, LINT_CLASSES, MODES, STATUSES, words
from .mcp_tools import KbTools

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# writers only add (a new card, one commit); nothing an agent calls deletes or rewrites
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
WRITERS = ("add_finding", "add_card")
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


async def _read(tools: KbTools, fn: Callable[[], str]) -> str:
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(tools._worker, fn)
    except KbError as exc:
        raise ResourceError(str(exc)) from None


def _card_text(kb: KnowledgeBase, ref: str) -> str:
    stored = kb.get(ref)
    return markdown.render(stored.card, stored.body)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("kbtool")
    except metadata.PackageNotFoundError:
        return "0"
