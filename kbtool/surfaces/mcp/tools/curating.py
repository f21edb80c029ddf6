"""The curating tools: checking the knowledge base, and an agent's changes of status.

lint checks the knowledge base; supersede, set_status, edit and link are the changes an agent may make to
its own work, one commit each. What an agent may change of others' is held by kbtool.curation.review, behind the facade.
Confirming is a person's or a locked gate's, so set_status does not offer it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from kbtool.curation.review import SETTABLE_STATUSES
from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model.contracts import CardEdited, LintPage, StatusChange
from kbtool.model.records import StoredCard, brief
from kbtool.model.vocabulary import LINT_CLASSES
from kbtool.surfaces.mcp import answers
from kbtool.surfaces.mcp.tools.base import (
    CHANGES,
    READS,
    CardId,
    KbChoice,
    Limit,
    Offset,
    Tool,
    on,
    tool,
    writer,
)

# what an agent may set (check_agent_status): confirming is a person's, so offering it only invites a refusal
AGENT_STATUSES = tuple(s for s in SETTABLE_STATUSES if s != "confirmed")

# the classes named from the one list of them, so a new class cannot be left out of the description
LINT_DESCRIPTION = "Check the knowledge base: errors and warnings, a line each."


@tool(READS, description=LINT_DESCRIPTION)
async def lint(
    ctx: Context,
    skip: list[Literal[LINT_CLASSES]] | None = None,  # type: ignore[valid-type]
    env: Annotated[bool, Field(description="also cards for other GPUs or engines")] = False,
    limit: Limit = 100,
    offset: Offset = 0,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, LintPage]:
    return await on(ctx, kb, lambda base: answers.lint_page(base.lint_page(skip or (), limit, offset, env)))


@tool(CHANGES)
async def supersede(
    ctx: Context,
    old: CardId,
    new: Annotated[str, Field(description="its replacement, same kind")],
    reason: str | None = None,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, StatusChange]:
    """Mark OLD superseded by NEW (one commit); search ranks OLD last. Not gates, nor a confirmed card by
    an unconfirmed one."""
    agent, _ = writer(ctx)

    def answer(base: KnowledgeBase) -> CallToolResult:
        old_card, new_card = base.supersede(old, new, reason, agent=agent)
        return answers.superseded(status_change(old_card, superseded_by=new_card.id))

    return await on(ctx, kb, answer)


@tool(CHANGES)
async def set_status(
    ctx: Context,
    id: CardId,
    status: Annotated[
        str,
        # offered as an enum of the agent's statuses, read as any string: `confirmed` then gets review's
        # refusal, which says whose it is, instead of a validation error
        Field(json_schema_extra={"enum": list(AGENT_STATUSES)}),
    ],
    reason: str,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, StatusChange]:
    """Withdraw (refuted, retired) an unreviewed card you wrote, or reopen a gap (open); one commit.
    Confirming is a person's or a locked gate's."""
    agent, _ = writer(ctx)
    return await on(
        ctx, kb, lambda base: answers.status_set(status_change(base.set_status(id, status, reason, agent=agent)))
    )


@tool(CHANGES)
async def edit(
    ctx: Context,
    id: CardId,
    title: str | None = None,
    body: Annotated[str | None, Field(description="markdown")] = None,
    tags: Annotated[list[str] | None, Field(description="replace the tags")] = None,
    fields: Annotated[
        dict[str, Any] | None,
        Field(description='as in add_card, and {"provenance": {"url": ...}}'),
    ] = None,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, CardEdited]:
    """Edit a card you wrote, until a person reviews it (one commit). Others' cards: add your own and link it."""
    agent, _ = writer(ctx)

    def answer(base: KnowledgeBase) -> CallToolResult:
        before = base.get(id).version
        stored = base.edit(id, body=body, title=title, tags=tags, values=fields or {}, agent=agent)
        return answers.card_edited(CardEdited.of(stored, stored.version != before))

    return await on(ctx, kb, answer)


@tool(CHANGES)
async def link(
    ctx: Context,
    id: CardId,
    to: Annotated[list[str], Field(description="card ids")],
    relation: Literal["related", "contradicts"] = "related",
    remove: bool = False,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, CardEdited]:
    """Link a card you wrote to others (related, or contradicts: a result that disagrees), or unlink; one commit."""
    agent, _ = writer(ctx)

    def answer(base: KnowledgeBase) -> CallToolResult:
        before = base.get(id).version
        stored = base.link(id, to, relation, remove, agent=agent)
        return answers.card_edited(CardEdited.of(stored, stored.version != before))

    return await on(ctx, kb, answer)


def status_change(stored: StoredCard, superseded_by: str | None = None) -> StatusChange:
    return StatusChange(**brief(stored), path=stored.path, superseded_by=superseded_by)


TOOLS: tuple[Tool, ...] = (lint, supersede, set_status, edit, link)
