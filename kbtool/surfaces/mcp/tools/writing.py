"""The writing tools: a measured finding, or a card of any kind.

Every write is an agent's, so it lands tentative or draft, for a person to review (kbtool.curation.review)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model.contracts import CardAdded, FindingAdded, FindingInput, SkillPacked
from kbtool.model.vocabulary import DIRECTIONS, KINDS
from kbtool.surfaces.mcp import answers
from kbtool.surfaces.mcp.tools.base import (
    CHANGES,
    WRITES,
    For,
    KbChoice,
    NewTags,
    Tool,
    on,
    present,
    read_from,
    tool,
    writer,
)

# dict[str, Any] and not the union of what a value may be: the schema stays short, and FindingInput checks each
Metrics = Annotated[
    dict[str, Any] | None,
    Field(
        description='name -> 943, "12ms" or {"value": 25.3, "unit": "ms", "p99": 34.6, "conditions": {...}} '
        "(also avg, p1..p99, min, max, std, count, samples)"
    ),
]
# where a path given to the server is read from: its working folder, not the agent's
PATHS = "paths from the server's working folder"


@tool(WRITES)
async def add_finding(
    ctx: Context,
    title: Annotated[str, Field(description="what was found, one line")],
    claim: Annotated[str | None, Field(description="if longer than the title")] = None,
    metrics: Metrics = None,
    baseline: Annotated[dict[str, Any] | None, Field(description="the baseline's values, same form")] = None,
    direction: Annotated[
        Literal[DIRECTIONS] | None,  # type: ignore[valid-type]
        Field(description="which way is better (default: from the names)"),
    ] = None,
    applies_to: Annotated[
        dict[str, Any] | None,
        Field(description="scope: model, arch, hardware, precision, phase, workload, engine, modality"),
    ] = None,
    status: Annotated[Literal["tentative", "draft"], Field()] = "tentative",
    closes: Annotated[str | None, Field(description="a gap's id this answers (or SOURCE:ID)")] = None,
    tags: NewTags = None,
    project: str | None = None,
    command: Annotated[str | None, Field(description="the benchmark's command")] = None,
    conditions: Annotated[dict[str, Any] | None, Field(description='the load: {"concurrency": 32}')] = None,
    artifact: Annotated[
        str | list[str] | None,
        Field(
            description=f"an export or AIPerf run folder, one per run, or their folder: each metric gets a 95% "
            f"interval; {PATHS}"
        ),
    ] = None,
    baseline_from: Annotated[
        list[str] | None, Field(description="the baseline's, the same way: each change gets a verdict")
    ] = None,
    metric_name: Annotated[str | None, Field(description="a results TSV's column to read")] = None,
    environment: Annotated[
        dict[str, str] | None, Field(description='where measured, if no export says: {"gpu": "NVIDIA H100"}')
    ] = None,
    ignore_conditions: Annotated[
        list[str] | None, Field(description="load conditions allowed to differ; recorded")
    ] = None,
    body: Annotated[str | None, Field(description="markdown notes")] = None,
    strict: Annotated[bool, Field(description="refuse on likely duplicates")] = False,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, FindingAdded]:
    """Record a measured finding (one commit; tentative until reviewed): answers its id, likely duplicates
    and contradictions."""
    agent, client = writer(ctx)
    given = present(
        title=title,
        claim=claim,
        metrics=metrics,
        baseline=baseline,
        direction=direction,
        applies_to=applies_to,
        status=status,
        closes=closes,
        tags=tags,
        project=project,
        command=command,
        conditions=conditions,
        baseline_from=baseline_from,
        metric_name=metric_name,
        environment=environment,
        ignore_conditions=ignore_conditions,
        body=body,
        **{"from": artifact},
    )

    def answer(base: KnowledgeBase) -> CallToolResult:
        finding = FindingInput.parse(given, "add_finding")
        added = base.record_finding(finding, agent=agent, client=client, read_from=read_from(ctx, base), strict=strict)
        return answers.finding_added(added)

    return await on(ctx, kb, answer)


@tool(WRITES)
async def add_card(
    ctx: Context,
    kind: Literal[KINDS],  # type: ignore[valid-type]
    title: Annotated[str, Field(description="one line")],
    fields: Annotated[
        dict[str, Any] | None,
        Field(
            description='the kind\'s fields: {"rule": ...} (constraint), {"symptom": ..., "fix": ...} '
            "(failure-mode), applies_to, source, check, provenance.url"
        ),
    ] = None,
    tags: NewTags = None,
    body: Annotated[str, Field(description="markdown")] = "",
    kb: KbChoice = None,
) -> Annotated[CallToolResult, CardAdded]:
    """A card of any kind, as a draft for a person to review (one commit); a gate runs only once a person
    confirms it."""
    agent, client = writer(ctx)

    def answer(base: KnowledgeBase) -> CallToolResult:
        stored = base.add(
            kind, title, tags=tags or (), body=body, status="draft", values=fields or {}, agent=agent, client=client
        )
        return answers.card_added(CardAdded(id=stored.id, path=stored.path, status=stored.card.status))

    return await on(ctx, kb, answer)


@tool(CHANGES)
async def skill_pack(
    ctx: Context,
    name: Annotated[str, Field(description="the pack's skill name, e.g. h100-pack")],
    applies_for: For = None,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, SkillPacked]:
    """Write or rewrite a knowledge-pack skill of the confirmed cards that apply, under references/ (one
    commit)."""

    def answer(base: KnowledgeBase) -> CallToolResult:
        skill = base.pack_skill(name, (), False, None, applies_for or {})
        cards = int(skill.metadata.get("kb-cards", 0))
        packed = SkillPacked(name=skill.name, path=skill.path, cards=cards, description=skill.description)
        return answers.skill_packed(packed)

    return await on(ctx, kb, answer)


TOOLS: tuple[Tool, ...] = (add_finding, add_card, skill_pack)
