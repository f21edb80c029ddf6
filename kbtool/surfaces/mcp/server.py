"""`kb serve`: the knowledge base as MCP tools, prompts and resources, declared to the SDK's MCPServer.

Every tool is one function in kbtool/surfaces/mcp/tools/ making one call into a long-lived KnowledgeBase, so
the embedding model loads once and stays loaded; one server may serve several knowledge bases, by name
(kbtool/surfaces/mcp/shelf.py). As soon as the server starts, the keyword index is brought up to date and the
model loads, and the missing vectors are embedded, on a background thread of their own. The transports
(stdio, HTTP) are kbtool/surfaces/mcp/transports.py.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model import markdown
from kbtool.model.errors import KbError
from kbtool.skills.bundled import kb_skill_text
from kbtool.surfaces.mcp import prompts
from kbtool.surfaces.mcp.identity import Caller, Identities, client_name, request_headers
from kbtool.surfaces.mcp.shelf import Shelf, call_writes
from kbtool.surfaces.mcp.tools import brief, curating, gates, reading, writing
from kbtool.surfaces.mcp.tools.base import Tool

# in the order clients list them
TOOLS: tuple[Tool, ...] = (*reading.TOOLS, *writing.TOOLS, *curating.TOOLS, *gates.TOOLS, *brief.TOOLS)

INSTRUCTIONS = """kb is the project's knowledge base of contracts, constraints, findings, failure-modes, gates, gaps
and references, plus skills. Before an experiment, `search` for what applies (`for`: {"hardware": "B200"}, each hit
then says how it applies; `kind` to narrow) and `get` the cards you will rely on (any hit's id,
skills included). Gates are immutable: meet them, never edit them. After measured runs, `compare`
them with the baseline's (a verdict from the intervals, not from one run), then `add_finding` with
the numbers, their statistics and baseline (or the exports, a list a side), and `closes` when it
answers a gap; what you write lands tentative (or draft) until a person reviews it, and the gap stays
open (awaiting review) until then. `gaps` lists the open questions; `recent` what changed since the
last session (what the last agent learned), `log` one card's history, `related` a card's neighbourhood.
A new finding that replaces an older one: `supersede` it. A card you wrote that turned out wrong:
`set_status` refuted. `gate_run` runs a locked gate on the project in `in_dir`; with `confirms`, a pass
confirms your finding when its evidence is that run's own measurement."""

# Names agents reach for out of habit (other search tools call the query `q` and the hit count `limit` or
# `top_k`), read as kb's own where a tool takes the one and not the other; `filters`, `artifact` and
# `baseline_artifacts`: the names search, list and add_finding gave these before they took their contracts' own.
ALIASES = {
    "q": "query",
    "limit": "k",
    "top_k": "k",
    "name": "id",
    "applies_for": "for",
    "filters": "where",
    "artifact": "from",
    "baseline_artifacts": "baseline_from",
}
# Arguments whose name on the wire Python cannot spell as a parameter: `for` and `from` are keywords, so the tools
# and prompts declare applies_for and artifact (the contracts' own field names) and KbServer shows them, and reads
# them, as `for` and `from` (the contracts' names on the wire).
WIRE_NAMES = {"applies_for": "for", "artifact": "from"}
PYTHON_NAMES = {wire: name for name, wire in WIRE_NAMES.items()}


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
    """The SDK's server, holding each call to the arguments its tool declares (checked_arguments), and each
    call of a writing tool to an agent the server knows (identities: over HTTP, a call with a token)."""

    shelf: Shelf | None = None  # the knowledge bases served: each tool reaches them through its Context
    identities: Identities = Identities()  # who each call is (kbtool/surfaces/mcp/identity.py); build_server sets it
    _takes: dict[str, set[str]] | None = None  # each tool's parameters, read once: tools are all declared by then
    _writers: set[str] = set()  # the tools not marked read-only

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._takes is None:
            tools = await self.list_tools()
            self._writers = {t.name for t in tools if not (t.annotations and t.annotations.read_only_hint)}
            # `kb` is taken even where one knowledge base is served and the schemas leave it out
            self._takes = {t.name: {*t.input_schema.get("properties", {}), "kb"} for t in tools}
        if name in self._writers and self.caller(context).agent is None:
            raise ToolError(
                f"{name} writes to the knowledge base, which needs this server's token: send it as "
                "Authorization: Bearer TOKEN (kb serve printed it when it started, or --agent-token gave yours)"
            )
        if name in self._takes:
            arguments = checked_arguments(name, self._takes[name], arguments)
        call_writes.set(name in self._writers)
        return await super().call_tool(name, _python_names(arguments), context)

    def caller(self, context: Any) -> Caller:
        """Who makes this call: the agent its token (or this stdio session) stands for, never the name its client
        gives (the transport refused a wrong token already; on loopback a call without one only reads)."""
        return self.identities.caller(request_headers(context), client_name(context))

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        return await super().get_prompt(name, _python_names(arguments or {}), context)

    def show_wire_names(self, several_kbs: bool) -> None:
        """Each tool's schema and each prompt's arguments name applies_for as `for` (WIRE_NAMES); the schemas
        are made compact (compact_schema), and name `kb` only when there is more than one to choose."""
        for tool in self._tool_manager.list_tools():
            tool.parameters = compact_schema(tool.parameters)
            properties = tool.parameters.get("properties", {})
            if not several_kbs:
                properties.pop("kb", None)
            for name, wire in WIRE_NAMES.items():
                if name in properties:
                    properties[wire] = properties.pop(name)
                    if name in tool.parameters.get("required", []):
                        tool.parameters["required"] = [wire if r == name else r for r in tool.parameters["required"]]
        for prompt in self._prompt_manager.list_prompts():
            for argument in prompt.arguments or []:
                argument.name = WIRE_NAMES.get(argument.name, argument.name)


def one_paragraph(text: str) -> str:
    """A docstring without its line breaks and indentation: a model pays for every space."""
    return " ".join(text.split())


# what pydantic writes into a schema that tells a model nothing: JSON Schema's defaults (a flag left out is
# false, an offset starts at 0 and cannot be negative, a page holds something), and each title (the
# property's name again)
# (a tuple, not a set: in a set ("default", 0) and ("default", False) are one, False == 0)
SAID_ALREADY = (
    ("default", None), ("default", False), ("default", ""), ("default", 0), ("additionalProperties", True),
    ("minimum", 0), ("minimum", 1),
)  # fmt: skip


def compact_schema(schema: Any) -> Any:
    """The schema pydantic made, without what costs a model tokens and tells it nothing (SAID_ALREADY, titles)
    and without the `{"type": "null"}` branch of an optional argument: leaving it out is the same, and the
    arguments are still validated by the function's own signature."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: value if key in ("properties", "default", "enum", "const") else compact_schema(value)
        for key, value in schema.items()
        if key != "title" and not _said_already(key, value)
    }
    if isinstance(out.get("enum"), list) and all(isinstance(v, str) for v in out["enum"]):
        out.pop("type", None)  # the enum's strings say the type
    if "properties" in out:
        out["properties"] = {name: compact_schema(value) for name, value in out["properties"].items()}
    branches = out.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        rest = [b for b in branches if b != {"type": "null"}]
        del out["anyOf"]
        if len(rest) == 1:
            out = {**rest[0], **out}
        else:
            out["anyOf"] = rest
    return out


def _said_already(key: str, value: Any) -> bool:
    """Whether SAID_ALREADY names this key and value, of the same type: a default of 0 is not False."""
    return any(key == k and type(value) is type(v) and value == v for k, v in SAID_ALREADY)


def _python_names(arguments: dict[str, Any]) -> dict[str, Any]:
    return {PYTHON_NAMES.get(key, key): value for key, value in arguments.items()}


def register_tools(server: KbServer, read_only: bool) -> None:
    """Every tool of TOOLS on the server; with read_only, the writers are not offered at all."""
    for declared in TOOLS:
        if not (read_only and declared.writes):
            # no outputSchema: the contract's JSON schema cost a model ~6.8k tokens for all the tools and told it
            # nothing the text does not; the structured content is still the contract, as the CLI's --json
            server.tool(
                annotations=declared.annotations,
                name=declared.name,
                description=one_paragraph(declared.description or declared.function.__doc__ or ""),
                structured_output=False,
            )(declared.function)


def build_server(
    served: KnowledgeBase | Mapping[str, KnowledgeBase],
    read_only: bool = False,
    warm_on_start: bool = False,
    identities: Identities | None = None,
) -> tuple[MCPServer, Shelf]:
    """The MCP server over one knowledge base, or several by name (the first is the default; every tool
    takes `kb` to name another, and the `kbs` tool lists them); with read_only the writers are not
    offered at all. warm_on_start: the indexes warm up as the server starts serving (over stdio, once
    fd 1 is the protocol's and anything a library prints goes to stderr). identities: who each call is (over
    HTTP, the agents' tokens a call of a writing tool must come with); default, one session's agent, as
    over stdio."""
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
    server.identities = identities or Identities.for_stdio(os.environ)
    server.shelf = shelf

    register_tools(server, read_only)

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
        artifact: Annotated[str | None, Field(description="a benchmark export or run folder on this machine")] = None,
        closes: Annotated[str | None, Field(description="the gap it answers")] = None,
    ) -> str:
        """How to record a measured run as a finding, supersede what it replaces and run the gates."""
        return prompts.record_run(kb_skill_text(default.root), what, artifact, closes)

    @server.prompt(name="brief", title="Brief")
    async def brief_prompt(
        applies_for: Annotated[
            str | None, Field(description="the environment, FIELD=VALUE pairs: 'hardware=H100, phase=decode'")
        ] = None,
    ) -> str:
        """After a context compaction: the goal's gates, the must-constraints, open gaps, findings, reviews."""
        scope = prompts.environment(more=applies_for)
        return await _read(shelf, lambda: default.brief(scope).over_mcp().text())

    # resources are the default knowledge base's; the tools reach the others
    @server.resource("kb://cards/{id}", mime_type="text/markdown", description="a card's markdown file")
    async def card_resource(id: str) -> str:
        return await _read(shelf, lambda: _card_text(default, id))

    @server.resource("kb://skills/{name}", mime_type="text/markdown", description="a skill's SKILL.md")
    async def skill_resource(name: str) -> str:
        from kbtool.skills.spec import render_skill

        return await _read(shelf, lambda: render_skill(default.skill(name)))

    server.show_wire_names(len(bases) > 1)
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
    """kb's version as the server tells the client: kbtool.__version__, the one source (pyproject.toml's too),
    also where kb runs from a checkout that was never installed."""
    from kbtool import __version__

    return __version__
