"""`kb serve`: the knowledge base as MCP tools and resources, declared to the SDK's MCPServer.

Every tool is a thin call into a long-lived KnowledgeBase (kbtool/surfaces/mcp/tools.py), so the
embedding model loads once and stays loaded; one server may serve several knowledge bases, by name.
As soon as the server starts, the keyword index is brought up to date and the model loads, and the
missing vectors are embedded, on a background thread of their own. The transports (stdio, HTTP)
are kbtool/surfaces/mcp/transports.py.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from kbtool.curation.review import SETTABLE_STATUSES
from kbtool.evidence import formats
from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model import markdown
from kbtool.model.contracts import (
    SEARCH_KINDS,
    CardAdded,
    CardLog,
    CardPage,
    Comparison,
    Document,
    Documents,
    FindingAdded,
    GateRunResult,
    LintPage,
    LockCheck,
    OpenGaps,
    RecentChanges,
    Related,
    SearchPage,
    SearchRequest,
    ServedKbs,
    SkillList,
    StatusChange,
)
from kbtool.model.errors import KbError
from kbtool.model.vocabulary import DIRECTIONS, KINDS, LINT_CLASSES, MODES, STATUSES, words
from kbtool.skills.bundled import kb_skill_text
from kbtool.surfaces.mcp import prompts
from kbtool.surfaces.mcp.tools import KbTools, Shelf

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# add_finding and add_card only add (a new card, one commit)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# supersede and set_status change what an existing card means to every later search (git keeps the old text)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
# gate_run runs a locked gate's check (a command, or kb's own comparison) on this machine and records the run
# (one commit)
RUNS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
# the classes named from the one list of them, so a new class cannot be left out of the description
LINT_DESCRIPTION = (
    f"Check the knowledge base by these classes of checks: {words(LINT_CLASSES, 'and')}. Each problem is "
    "an error or a warning; ok when no errors."
)
DEFAULT_BUDGET = 6000  # characters of hit text a search answer may spend; agents pay for every one

INSTRUCTIONS = """kb is the project's knowledge base of contracts, constraints, findings, failure-modes, gates, gaps
and references, plus skills. Before an experiment, `search` for what applies (`for`: {"hardware": "B200"}, each hit
then says how it applies; `kind` to narrow) and `get` the cards you will rely on (any hit's id,
skills included). Gates are immutable: meet them, never edit them. After measured runs, `compare`
them with the baseline's (a verdict from the intervals, not from one run), then `add_finding` with
the numbers, their statistics and baseline (or the exports, a list a side), and `closes` when it
answers a gap; what you write lands tentative (or draft) until a person reviews it. `gaps` lists the
open questions; `recent` what changed since the last session (what the last agent learned), `log`
one card's history, `related` a card's neighbourhood. A new finding that replaces an older one:
`supersede` it. A card you wrote that turned out wrong: `set_status` refuted. `gate_run` runs a
locked gate on the project in `in_dir`; with `confirms`, a pass confirms your finding."""

Filters = Annotated[
    dict[str, str | int | float | bool] | None,
    Field(
        description='field path -> value, all must match, e.g. {"applies_to.hardware": "B200"}; a path ending in '
        '"!" leaves those out, e.g. {"applies_to.modality!": "vision"}'
    ),
]
# the parameters search shares with the library take their descriptions from its contract
SEARCH = SearchRequest.model_fields
# Literal[TUPLE]: the MCP enums come from the one tuple each list is kept in; valid at run time, but
# mypy accepts only literal values inside Literal[], hence the ignores
Kind = Annotated[Literal[SEARCH_KINDS] | None, Field(description=SEARCH["kind"].description)]  # type: ignore[valid-type]
Status = Annotated[Literal[STATUSES] | None, Field(description=SEARCH["status"].description)]  # type: ignore[valid-type]
Tags = Annotated[list[str] | None, Field(description=SEARCH["tags"].description)]
CardKind = Annotated[
    Literal[KINDS] | None,  # type: ignore[valid-type]
    Field(description="only cards of this kind (skills: the skills tool)"),
]
KbChoice = Annotated[
    str | None, Field(description="which knowledge base, by name (the kbs tool lists them); default: the first")
]
Limit = Annotated[int, Field(ge=1, le=10_000, description="how many at most in this page")]
Offset = Annotated[int, Field(ge=0, description="skip this many (for the next page)")]
Budget = Annotated[int, Field(ge=200, le=100_000, description="characters of text to return at most")]
MAX_GET = 50  # cards one get may ask for: a context, not an export
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


# Names agents reach for out of habit (other search tools call the query `q` and the hit count `limit` or
# `top_k`), read as kb's own where a tool takes the one and not the other.
ALIASES = {"q": "query", "limit": "k", "top_k": "k", "name": "id", "applies_for": "for"}
# Arguments whose name on the wire Python cannot spell as a parameter: `for` is a keyword, so the tools and
# prompts declare applies_for and KbServer shows it, and reads it, as `for`.
WIRE_NAMES = {"applies_for": "for"}
PYTHON_NAMES = {wire: name for name, wire in WIRE_NAMES.items()}
For = Annotated[
    dict[str, str] | None,
    Field(
        description='the environment the answer is for, applies_to field -> value, e.g. {"hardware": "H100", '
        '"modality": "vision"} (default: the knowledge base\'s kb.toml [environment]; "any" leaves a field '
        "unjudged): each card says how it applies (scoped, family, general, other) and those scoped elsewhere "
        "come last"
    ),
]
OnlyApplying = Annotated[bool, Field(description="with for: leave out the cards scoped elsewhere")]


def checked_arguments(tool: str, takes: set[str], arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments with aliases read; a ToolError naming any the tool does not take. The SDK drops
    unknown arguments silently, so `kinds` for `kind` would quietly search everything."""
    out: dict[str, Any] = {}
    unknown = []
    for key, value in arguments.items():
        name = ALIASES[key] if key not in takes and ALIASES.get(key) in takes else key
        if name not in takes:
            unknown.append(key)
        elif name in out:
            raise ToolError(f"{tool}: {key} and {name} name the same argument; give one")
        else:
            out[name] = value
    if unknown:
        raise ToolError(
            f"{tool}: unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))}; "
            f"it takes {', '.join(sorted(takes)) or 'none'}"
        )
    return out


class KbServer(MCPServer):
    """The SDK's server, holding each call to the arguments its tool declares (checked_arguments), and over
    HTTP each call of a writing tool to the server's token (write_token)."""

    _takes: dict[str, set[str]] | None = None  # each tool's parameters, read once: tools are all declared by then
    _writers: set[str] = set()  # the tools not marked read-only
    write_token: str | None = None  # over HTTP: what a request must carry as its bearer token to write

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._takes is None:
            tools = await self.list_tools()
            self._writers = {t.name for t in tools if not (t.annotations and t.annotations.read_only_hint)}
            self._takes = {t.name: set(t.input_schema.get("properties", {})) for t in tools}
        if name in self._writers and self.write_token is not None and not self._may_write(context):
            raise ToolError(
                f"{name} writes to the knowledge base, which needs this server's token: send it as "
                "Authorization: Bearer TOKEN (kb serve printed it when it started)"
            )
        if name in self._takes:
            arguments = checked_arguments(name, self._takes[name], arguments)
        return await super().call_tool(name, _python_names(arguments), context)

    def _may_write(self, context: Any) -> bool:
        """Whether the HTTP request of this call carried the token (the transport refused a wrong one already;
        on loopback one without it reaches the reading tools)."""
        from kbtool.surfaces.web.access import bearer_token, same_token

        try:
            headers = getattr(context.request_context.request, "headers", None)
        except (AttributeError, ValueError):  # no request context: not a call that came over HTTP
            headers = None
        return headers is not None and same_token(bearer_token(headers.get("authorization")), self.write_token or "")

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        return await super().get_prompt(name, _python_names(arguments or {}), context)

    def show_wire_names(self) -> None:
        """Each tool's schema and each prompt's arguments name applies_for as `for` (WIRE_NAMES)."""
        for tool in self._tool_manager.list_tools():
            properties = tool.parameters.get("properties", {})
            for name, wire in WIRE_NAMES.items():
                if name in properties:
                    properties[wire] = properties.pop(name)
                    if name in tool.parameters.get("required", []):
                        tool.parameters["required"] = [wire if r == name else r for r in tool.parameters["required"]]
        for prompt in self._prompt_manager.list_prompts():
            for argument in prompt.arguments or []:
                argument.name = WIRE_NAMES.get(argument.name, argument.name)


def _python_names(arguments: dict[str, Any]) -> dict[str, Any]:
    return {PYTHON_NAMES.get(key, key): value for key, value in arguments.items()}


def agent_name(ctx: Context | None) -> str:
    """Who writes through this connection: the MCP client's name as it introduced itself."""
    params = getattr(getattr(ctx, "session", None), "client_params", None) if ctx is not None else None
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return f"mcp:{name}" if isinstance(name, str) and name.strip() else "mcp"


def build_server(
    served: KnowledgeBase | Mapping[str, KnowledgeBase],
    read_only: bool = False,
    warm_on_start: bool = False,
    write_token: str | None = None,
) -> tuple[MCPServer, Shelf]:
    """The MCP server over one knowledge base, or several by name (the first is the default; every tool
    takes `kb` to name another, and the `kbs` tool lists them); with read_only the writers are not
    offered at all. warm_on_start: the indexes warm up as the server starts serving (over stdio, once
    fd 1 is the protocol's and anything a library prints goes to stderr). write_token: over HTTP, the
    bearer token a call of a writing tool must come with."""
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    bases = {served.config.kb.name: served} if isinstance(served, KnowledgeBase) else dict(served)
    shelf = Shelf(bases, read_only)
    default = bases[shelf.default]

    @asynccontextmanager
    async def warming(_server: MCPServer) -> AsyncIterator[None]:
        shelf.warm()
        yield

    instructions = INSTRUCTIONS
    if len(bases) > 1:
        instructions += (
            f"\n\nThis server serves {len(bases)} knowledge bases: {', '.join(bases)}. Every tool takes `kb` to "
            f"name one (default {shelf.default!r}); `kbs` lists them. A write goes to the one named only, so "
            "record a project's findings in the project's."
        )
    server = KbServer(
        f"kb ({', '.join(b.config.kb.name for b in bases.values())})",
        instructions=instructions,
        version=_version(),
        log_level="DEBUG" if os.environ.get("KB_DEBUG") else "WARNING",
        lifespan=warming if warm_on_start else None,
    )
    server.write_token = write_token

    @server.tool(annotations=READS)
    async def kbs() -> Annotated[CallToolResult, ServedKbs]:
        """The knowledge bases this server serves: name (a tool's `kb` argument), path, how many cards,
        skills and open gaps, which is the default and which may be written."""
        return await shelf.listing()

    @server.tool(annotations=READS)
    async def search(
        query: Annotated[str, Field(description=SEARCH["query"].description)],
        k: Annotated[int, Field(ge=1, le=100, description="how many hits at most")] = 10,
        kind: Kind = None,
        status: Status = None,
        tags: Tags = None,
        filters: Filters = None,
        mode: Annotated[Literal[MODES], Field(description=SEARCH["mode"].description)] = MODES[0],  # type: ignore[valid-type]
        budget: Budget = DEFAULT_BUDGET,
        offset: Annotated[int, Field(ge=0, le=900, description="skip this many hits (for the next ones)")] = 0,
        env: Annotated[bool, Field(description=SEARCH["env"].description)] = False,
        applies_for: For = None,
        only_applying: OnlyApplying = False,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, SearchPage]:
        """Search the knowledge base (keywords and meaning, fused): the cards and skills that apply, best
        first, each with id, kind, title, status, score and a one-line snippet. Superseded and refuted
        cards rank last. `get` a hit's id (a card or a skill) for the whole of it. When the budget
        cuts the answer, the text ends by saying how many hits it shows of how many."""
        asked = (query, k, kind, status, tags, filters, mode, budget, offset, env, applies_for, only_applying)
        return await shelf.call(kb, KbTools.search, *asked)

    @server.tool(annotations=READS)
    async def get(
        id: Annotated[
            str | None,
            Field(description="a card id (or a unique prefix of one), or a skill's name: any search hit's id"),
        ] = None,
        ids: Annotated[list[str] | None, Field(description="several ids at once (max 50), instead of id")] = None,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, Documents]:
        """Whole cards or skills: each one's fields as structured content and its markdown file as text.
        Give id, or ids for several in one call; ids that match nothing are named in the answer."""
        refs = ([id] if id else []) + list(ids or [])
        if not refs or (id and ids):
            raise ToolError("get: give id (one card) or ids (several), not both and not neither")
        if len(refs) > MAX_GET:
            raise ToolError(f"get: {len(refs)} ids, over {MAX_GET} in one call")
        return await shelf.call(kb, KbTools.get, refs)

    @server.tool(annotations=READS, name="list")
    async def list_cards(
        kind: CardKind = None,
        status: Status = None,
        tags: Tags = None,
        filters: Filters = None,
        applies_for: For = None,
        only_applying: OnlyApplying = False,
        limit: Limit = 200,
        offset: Offset = 0,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, CardPage]:
        """List cards (id, kind, title, status) that match every filter given, a page at a time; the
        text says how many of how many it shows and the offset of the next page. With `for`, each says how
        it applies, those scoped elsewhere last."""
        return await shelf.call(
            kb, KbTools.list, kind, status, tags, filters, limit, offset, applies_for, only_applying
        )

    @server.tool(annotations=READS)
    async def gaps(
        applies_for: For = None,
        only_applying: OnlyApplying = False,
        limit: Limit = 50,
        offset: Offset = 0,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, OpenGaps]:
        """The open questions, high priority first: what to measure next. Gaps nothing has closed yet, and
        gaps open again because every finding that closed one was since refuted, superseded, retired or
        deleted (`reopened` says which). With `for`, those scoped elsewhere come last."""
        return await shelf.call(kb, KbTools.gaps, limit, offset, applies_for, only_applying)

    @server.tool(annotations=READS, description=LINT_DESCRIPTION)
    async def lint(
        skip: Annotated[list[Literal[LINT_CLASSES]] | None, Field(description="check classes to skip")] = None,  # type: ignore[valid-type]
        limit: Limit = 100,
        offset: Offset = 0,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, LintPage]:
        return await shelf.call(kb, KbTools.lint, skip, limit, offset)

    @server.tool(annotations=READS)
    async def related(
        id: Annotated[str, Field(description="a card id or a skill's name")],
        k: Annotated[int, Field(ge=1, le=50, description="how many similar cards")] = 5,
        depth: Annotated[int, Field(ge=1, le=3, description="follow links this many steps (both ways)")] = 1,
        include_bodies: Annotated[
            bool, Field(description="add the linked cards' texts, nearest first, within the budget")
        ] = False,
        budget: Budget = DEFAULT_BUDGET,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, Related]:
        """A card's (or skill's) neighbourhood: the cards it links to, the cards linking to it, those up
        to `depth` links away, and the most similar others; with include_bodies, their texts too, so one
        call gathers the context of a decision."""
        return await shelf.call(kb, KbTools.related, id, k, depth, include_bodies, budget)

    @server.tool(annotations=READS)
    async def skills(
        limit: Limit = 100, offset: Offset = 0, kb: KbChoice = None
    ) -> Annotated[CallToolResult, SkillList]:
        """The skills (Agent Skills procedures) in this knowledge base: name and description."""
        return await shelf.call(kb, KbTools.skills, limit, offset)

    @server.tool(annotations=READS)
    async def skill(
        name: Annotated[str, Field(description="a skill's name, e.g. 'kb'")],
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, Document]:
        """One skill's SKILL.md: when to use it and the procedure, to follow step by step."""
        return await shelf.call(kb, KbTools.skill, name)

    @server.tool(annotations=READS)
    async def log(
        id: Annotated[str, Field(description="a card id (or a unique prefix of one)")],
        limit: Limit = 50,
        offset: Offset = 0,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, CardLog]:
        """A card's history from git, newest first: each commit's date, author, subject and what kb did
        (add, edit, supersede, confirm, refute, gate-run, ...)."""
        return await shelf.call(kb, KbTools.log, id, limit, offset)

    @server.tool(annotations=READS)
    async def recent(
        since: Annotated[
            str | None,
            Field(description="a date (2026-12-01), an age (12h, 7d, 2w) or a commit; all history when left out"),
        ] = None,
        kind: Kind = None,
        limit: Limit = 20,
        offset: Offset = 0,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, RecentChanges]:
        """What changed in the knowledge base, newest first: each commit with the cards and skills it
        added, modified or deleted. "What did the last agent learn?": recent(since="1d")."""
        return await shelf.call(kb, KbTools.recent, since, kind, limit, offset)

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
                Field(description="scope: model, arch, hardware, precision, phase, workload, engine, modality"),
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
                str | list[str] | None,
                Field(
                    description=f"path of a benchmark export on this machine ({formats.described()}), or of "
                    "several: one per run of one configuration; each metric then gets n, mean, std and a 95% interval"
                ),
            ] = None,
            baseline_artifacts: Annotated[
                list[str] | None,
                Field(
                    description="the baseline's exports, one per run: each metric's change gets a 95% interval and "
                    "a verdict (better, worse, no clear change)"
                ),
            ] = None,
            ignore_conditions: Annotated[
                list[str] | None,
                Field(
                    description="load conditions to compare across when candidate and baseline differ in them "
                    "(e.g. input_tokens); otherwise runs at different loads are refused. The finding records it"
                ),
            ] = None,
            body: Annotated[str | None, Field(description="notes, in markdown")] = None,
            kb: KbChoice = None,
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
                "baseline_from": baseline_artifacts,
                "ignore_conditions": ignore_conditions,
                "body": body,
            }
            return await shelf.call(kb, KbTools.add_finding, data, agent_name(ctx))

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
            kb: KbChoice = None,
        ) -> Annotated[CallToolResult, CardAdded]:
            """Add a card of any kind, written as a draft for a person to review (one git commit); returns
            its id. A gate stays a draft, unlocked and not runnable, until a person confirms it."""
            return await shelf.call(kb, KbTools.add_card, kind, title, fields, tags, body, agent_name(ctx))

    @server.tool(annotations=READS)
    async def compare(
        candidate: Annotated[
            str, Field(description="an export, an AIPerf artifact folder, a folder of runs, or a finding's id")
        ],
        baseline: Annotated[str, Field(description="the same, for the baseline")],
        ignore_conditions: Annotated[
            list[str] | None,
            Field(description="load conditions to compare across when they differ (e.g. input_tokens); recorded"),
        ] = None,
        kb: KbChoice = None,
    ) -> Annotated[CallToolResult, Comparison]:
        """Judge a change before recording it: each metric both sides measured under the same load, with the
        means' 95% intervals, the change and its interval, and a verdict (better, worse, no clear change).
        Runs at different loads are refused, naming the condition. Several runs a side (a folder of them) give
        intervals; one run needs per-request records for one."""
        return await shelf.call(kb, KbTools.compare, candidate, baseline, ignore_conditions)

    @server.tool(annotations=READS)
    async def gate_verify(kb: KbChoice = None) -> Annotated[CallToolResult, LockCheck]:
        """Check every locked gate against kb.lock: a gate whose file changed since it was locked no longer
        guards anything (gate_run refuses it); ok when all match."""
        return await shelf.call(kb, KbTools.gate_verify)

    if not read_only:

        @server.tool(annotations=CHANGES)
        async def supersede(
            old: Annotated[str, Field(description="the card that no longer holds")],
            new: Annotated[str, Field(description="the card that replaces it (same kind)")],
            ctx: Context,
            reason: Annotated[str | None, Field(description="why, recorded in the commit")] = None,
            kb: KbChoice = None,
        ) -> Annotated[CallToolResult, StatusChange]:
            """Mark OLD superseded by NEW (links both ways, one commit); search ranks OLD last from then on.
            Not for gates (a person supersedes those), nor a confirmed card by one not yet confirmed."""
            return await shelf.call(kb, KbTools.supersede, old, new, reason, agent_name(ctx))

        @server.tool(annotations=CHANGES)
        async def set_status(
            id: Annotated[str, Field(description="a card id (or a unique prefix of one)")],
            status: Annotated[
                Literal[SETTABLE_STATUSES],  # type: ignore[valid-type]
                Field(
                    description="refuted or retired (withdraw a card you wrote), open (reopen a gap); "
                    "confirmed is a person's"
                ),
            ],
            reason: Annotated[str, Field(description="why, recorded in the commit")],
            ctx: Context,
            kb: KbChoice = None,
        ) -> Annotated[CallToolResult, StatusChange]:
            """Change a card's status, one commit with the reason: withdraw a card you wrote that nobody has
            reviewed (refuted, retired), or reopen a gap whose answer no longer holds. Confirming a card,
            and judging cards others wrote, is a person's or a locked gate's (gate_run with confirms)."""
            return await shelf.call(kb, KbTools.set_status, id, status, reason, agent_name(ctx))

        @server.tool(annotations=RUNS)
        async def gate_run(
            id: Annotated[str, Field(description="a locked gate's id")],
            in_dir: Annotated[
                str | None,
                Field(
                    description="the project it judges, a folder on this machine holding its runs (needed unless "
                    "kb.toml sets [gates] project)"
                ),
            ] = None,
            confirms: Annotated[
                str | None, Field(description="a finding the gate confirms when it passes (recorded as gate:ID)")
            ] = None,
            kb: KbChoice = None,
        ) -> Annotated[CallToolResult, GateRunResult]:
            """Run a locked gate's check (its command, or the comparison kb runs itself) on the project in
            in_dir and record the run in one commit: pass or fail, the value, why, the output. Only locked,
            unchanged gates run; with confirms, a pass confirms that finding."""
            return await shelf.call(kb, KbTools.gate_run, id, in_dir, confirms)

    @server.prompt(title="Before an experiment")
    async def before_experiment(
        goal: Annotated[str, Field(description="what the experiment tries, e.g. 'NVFP4 MoE decode at batch 1'")],
        model: Annotated[str | None, Field(description="the model, e.g. Qwen3.6-35B-A3B")] = None,
        hardware: Annotated[str | None, Field(description="the GPU, e.g. B200")] = None,
        precision: Annotated[str | None, Field(description="e.g. nvfp4")] = None,
        applies_for: Annotated[
            str | None,
            Field(description="more of the environment, FIELD=VALUE pairs: 'modality=vision, phase=decode'"),
        ] = None,
    ) -> str:
        """What to search, read and respect before an experiment: the kb skill's steps as tool calls, for
        the environment named (model, hardware, precision, `for`)."""
        scope = prompts.environment(model, hardware, precision, applies_for)
        return prompts.before_experiment(kb_skill_text(default.root), goal, scope)

    @server.prompt(title="Record a run")
    async def record_run(
        what: Annotated[str, Field(description="what was measured, in one line")],
        artifact: Annotated[str | None, Field(description="a benchmark export on this machine")] = None,
        closes: Annotated[str | None, Field(description="the gap it answers")] = None,
    ) -> str:
        """How to record a measured run as a finding, supersede what it replaces and run the gates."""
        return prompts.record_run(kb_skill_text(default.root), what, artifact, closes)

    # resources are the default knowledge base's; the tools reach the others
    @server.resource("kb://cards/{id}", mime_type="text/markdown", description="a card's markdown file")
    async def card_resource(id: str) -> str:
        return await _read(shelf, lambda: _card_text(default, id))

    @server.resource("kb://skills/{name}", mime_type="text/markdown", description="a skill's SKILL.md")
    async def skill_resource(name: str) -> str:
        from kbtool.skills.spec import render_skill

        return await _read(shelf, lambda: render_skill(default.skill(name)))

    server.show_wire_names()
    return server, shelf


async def _read(shelf: Shelf, fn: Callable[[], str]) -> str:
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(shelf.worker, fn)
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
