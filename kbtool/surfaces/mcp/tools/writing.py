"""The writing tools: a measured finding, or a card of any kind. Every write is an agent's, so it lands
tentative or draft, for a person to review (kbtool.curation.review)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from kbtool.evidence import formats
from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model.contracts import CardAdded, FindingAdded, FindingInput
from kbtool.model.vocabulary import DIRECTIONS, KINDS
from kbtool.surfaces.mcp import answers
from kbtool.surfaces.mcp.tools.base import WRITES, KbChoice, Tags, Tool, agent_name, on, present, tool

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


@tool(WRITES)
async def add_finding(
    ctx: Context,
    title: Annotated[str, Field(description="what was found, in one line")],
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
    agent = agent_name(ctx)
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
        baseline_from=baseline_artifacts,
        ignore_conditions=ignore_conditions,
        body=body,
        **{"from": artifact},
    )

    def answer(base: KnowledgeBase) -> CallToolResult:
        finding = FindingInput.parse(given, "add_finding")
        return answers.finding_added(base.record_finding(finding, agent=agent))

    return await on(ctx, kb, answer)


@tool(WRITES)
async def add_card(
    ctx: Context,
    kind: Annotated[Literal[KINDS], Field(description="the card's kind")],  # type: ignore[valid-type]
    title: Annotated[str, Field(description="the card's title, one line")],
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
    agent = agent_name(ctx)

    def answer(base: KnowledgeBase) -> CallToolResult:
        stored = base.add(kind, title, tags=tags or (), body=body, status="draft", values=fields or {}, agent=agent)
        return answers.card_added(CardAdded(id=stored.id, path=stored.path, status=stored.card.status))

    return await on(ctx, kb, answer)


TOOLS: tuple[Tool, ...] = (add_finding, add_card)
