"""The curating tools: checking the knowledge base, and the changes of status an agent may make to its own
work (what an agent may change of others' is held by kbtool.curation.review, behind the facade)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from kbtool.curation.review import SETTABLE_STATUSES
from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model.contracts import LintPage, StatusChange
from kbtool.model.records import StoredCard, brief
from kbtool.model.vocabulary import LINT_CLASSES, words
from kbtool.surfaces.mcp import answers
from kbtool.surfaces.mcp.tools.base import (
    CHANGES,
    READS,
    CardId,
    KbChoice,
    Limit,
    Offset,
    Tool,
    agent_name,
    on,
    tool,
)

# the classes named from the one list of them, so a new class cannot be left out of the description
LINT_DESCRIPTION = (
    f"Check the knowledge base by these classes of checks: {words(LINT_CLASSES, 'and')}. Each problem is "
    "an error or a warning; ok when no errors."
)


@tool(READS, description=LINT_DESCRIPTION)
async def lint(
    ctx: Context,
    skip: Annotated[list[Literal[LINT_CLASSES]] | None, Field(description="check classes to skip")] = None,  # type: ignore[valid-type]
    limit: Limit = 100,
    offset: Offset = 0,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, LintPage]:
    return await on(ctx, kb, lambda base: answers.lint_page(base.lint_page(skip or (), limit, offset)))


@tool(CHANGES)
async def supersede(
    ctx: Context,
    old: Annotated[str, Field(description="the card that no longer holds")],
    new: Annotated[str, Field(description="the card that replaces it (same kind)")],
    reason: Annotated[str | None, Field(description="why, recorded in the commit")] = None,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, StatusChange]:
    """Mark OLD superseded by NEW (links both ways, one commit); search ranks OLD last from then on.
    Not for gates (a person supersedes those), nor a confirmed card by one not yet confirmed."""
    agent = agent_name(ctx)

    def answer(base: KnowledgeBase) -> CallToolResult:
        old_card, new_card = base.supersede(old, new, reason, agent=agent)
        return answers.superseded(status_change(old_card, superseded_by=new_card.id))

    return await on(ctx, kb, answer)


@tool(CHANGES)
async def set_status(
    ctx: Context,
    id: CardId,
    status: Annotated[
        Literal[SETTABLE_STATUSES],  # type: ignore[valid-type]
        Field(
            description="refuted or retired (withdraw a card you wrote), open (reopen a gap); confirmed is a person's"
        ),
    ],
    reason: Annotated[str, Field(description="why, recorded in the commit")],
    kb: KbChoice = None,
) -> Annotated[CallToolResult, StatusChange]:
    """Change a card's status, one commit with the reason: withdraw a card you wrote that nobody has
    reviewed (refuted, retired), or reopen a gap whose answer no longer holds. Confirming a card,
    and judging cards others wrote, is a person's or a locked gate's (gate_run with confirms)."""
    agent = agent_name(ctx)
    return await on(
        ctx, kb, lambda base: answers.status_set(status_change(base.set_status(id, status, reason, agent=agent)))
    )


def status_change(stored: StoredCard, superseded_by: str | None = None) -> StatusChange:
    return StatusChange(**brief(stored), path=stored.path, superseded_by=superseded_by)


TOOLS: tuple[Tool, ...] = (lint, supersede, set_status)
