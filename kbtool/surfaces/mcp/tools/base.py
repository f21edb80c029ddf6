"""What every MCP tool is declared with: annotations, shared parameters, its knowledge base.

The annotations say how a tool touches the knowledge base: READS, WRITES (a new card), CHANGES (what an
existing card means) or RUNS (a check on this machine). The parameters several tools share have their types
and descriptions written once. `on` runs a tool's work on the knowledge base it names; caller, writer and
read_from say who calls and where the files it names may be read from. A tool is one function decorated with
`tool(...)`; kbtool/surfaces/mcp/server.py registers the functions the modules of this package list in their
TOOLS.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model.contracts import SEARCH_KINDS
from kbtool.model.vocabulary import KINDS, STATUSES
from kbtool.store.files import ReadFrom
from kbtool.surfaces.mcp.identity import Caller
from kbtool.surfaces.mcp.shelf import Shelf

# destructive and idempotent hints mean something only when a tool is not read-only (the MCP spec): left out,
# ~150 tokens of every session; idempotentHint false, the spec's default, is left out of the writers' too
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# add_finding and add_card only add (a new card, one commit)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
# supersede and set_status change what an existing card means to every later search (git keeps the old text)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
# gate_run runs a locked gate's check (a command, or kb's own comparison) on this machine and records the run
# (one commit)
RUNS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)

DEFAULT_BUDGET = 6000  # characters of hit text a search answer may spend; agents pay for every one

# dict[str, Any], not the union of scalars: a shorter schema; the contract refuses what is not a scalar
# (kbtool.model.fields.filters_from), naming the parameter as the contract's field: where
Where = Annotated[
    dict[str, Any] | None,
    Field(description='all must match: {"applies_to.hardware": "B200"}; "path!": must not'),
]
# Literal[TUPLE]: the MCP enums come from the one tuple each list is kept in; valid at run time, but
# mypy accepts only literal values inside Literal[], hence the ignores
Kind = Annotated[Literal[SEARCH_KINDS] | None, Field(description="only this kind (skill: only skills)")]  # type: ignore[valid-type]
Status = Annotated[Literal[STATUSES] | None, Field()]  # type: ignore[valid-type]
Tags = Annotated[list[str] | None, Field(description="all of these tags")]
# a writer's tags are the new card's own, not a filter
NewTags = Annotated[list[str] | None, Field(description="the new card's tags")]
CardKind = Annotated[Literal[KINDS] | None, Field(description="only this kind")]  # type: ignore[valid-type]
KbChoice = Annotated[str | None, Field(description="which knowledge base (kbs lists them); default: the first")]
CardId = Annotated[str, Field(description="card id or prefix")]
# a page's limit and offset need no words: every paged answer's last line names the next page's offset
Limit = Annotated[int, Field(ge=1)]
Offset = Annotated[int, Field(ge=0)]
# at most 100,000 (the signature checks it): a bound no agent needs told, ~10 tokens
Budget = Annotated[
    int, Field(ge=200, le=100_000, description="characters of text", json_schema_extra=lambda s: s.pop("maximum"))
]
For = Annotated[
    dict[str, str] | None,
    # the values' type left out of the schema (the example says it; the signature still checks it): ~50 tokens
    Field(
        description='{"hardware": "H100"}: judge by this, not kb.toml',
        json_schema_extra=lambda schema: _values_unsaid(schema),
    ),
]


def _values_unsaid(schema: dict[str, Any]) -> None:
    """An object's schema, optional or not, without the type of its values (additionalProperties)."""
    for branch in [schema, *schema.get("anyOf", [])]:
        if isinstance(branch, dict):
            branch.pop("additionalProperties", None)


OnlyApplying = Annotated[bool, Field(description="with for: drop cards scoped elsewhere")]
Sources = Annotated[bool, Field(description="also kb.toml's [[sources]]")]

ToolFunction = Callable[..., Awaitable[CallToolResult]]


@dataclass(frozen=True)
class Tool:
    """One tool as the server registers it: the function (its signature is the input schema, its return
    annotation the output schema, its docstring the description) and how it touches the knowledge base."""

    function: ToolFunction
    annotations: ToolAnnotations
    name: str | None = None  # when the tool's name is not the function's (`list`, a builtin's)
    description: str | None = None  # when the description is made, not written (lint's)

    @property
    def writes(self) -> bool:
        return not self.annotations.read_only_hint


def tool(
    annotations: ToolAnnotations, name: str | None = None, description: str | None = None
) -> Callable[[ToolFunction], Tool]:
    def declare(function: ToolFunction) -> Tool:
        return Tool(function, annotations, name, description)

    return declare


def shelf_of(ctx: Context) -> Shelf:
    """The knowledge bases the server answering this call serves (KbServer.shelf)."""
    shelf = getattr(ctx.mcp_server, "shelf", None)
    if not isinstance(shelf, Shelf):
        raise ToolError("this server serves no knowledge base")
    return shelf


async def on(ctx: Context, kb: str | None, work: Callable[[KnowledgeBase], CallToolResult]) -> CallToolResult:
    """WORK on the knowledge base named by the tool's `kb` argument (the default when None)."""
    return await shelf_of(ctx).answer(kb, work)


def caller(ctx: Context) -> Caller:
    """Who makes this call, as the server knows it (KbServer.caller): the agent its token or session stands
    for, never the name the client gives itself, which is only a label."""
    caller_of = getattr(ctx.mcp_server, "caller", None)
    found = caller_of(ctx) if caller_of is not None else None
    if not isinstance(found, Caller):
        raise ToolError("this server knows no agents")
    return found


def writer(ctx: Context) -> tuple[str, str | None]:
    """(the agent that writes, the client label) of a writing tool's call; the server let no call without an
    agent reach a writer (KbServer.call_tool)."""
    found = caller(ctx)
    if found.agent is None:
        raise ToolError("this call writes, and comes from no agent this server knows: send its token")
    return found.agent, found.client


def read_from(ctx: Context, base: KnowledgeBase) -> ReadFrom:
    """Where the files this call names may be read from: the knowledge base, and the project folder (the
    server's working folder, where the agent started it, and kb.toml [gates] project); nowhere for a call over
    HTTP without a token."""
    if not caller(ctx).reads_paths:
        return ReadFrom((), "over HTTP a path is read only for a call that carries a token (Authorization: Bearer)")
    folders = [base.root, Path.cwd()]
    if base.config.gates.project:
        folders.append(base.root / Path(base.config.gates.project).expanduser())
    return ReadFrom(
        tuple(folders),
        "a path is read only under the knowledge base or the project folder (where kb serve was started, or "
        "kb.toml [gates] project)",
    )


def present(**values: Any) -> dict[str, Any]:
    """The arguments given, for a request contract whose defaults are its own (None means not given)."""
    return {key: value for key, value in values.items() if value is not None}
