"""The reading tools: what an agent asks before and after an experiment.

Each is one function: its signature is the tool's input schema, its return annotation the output schema (the
operation's contract), and its body one facade call whose contract kbtool/surfaces/mcp/answers.py turns into text.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult
from pydantic import Field

from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model import markdown
from kbtool.model.contracts import (
    CardLog,
    CardPage,
    Documents,
    GapsRequest,
    ListRequest,
    OpenGaps,
    RecentChanges,
    Related,
    SearchPage,
    SearchRequest,
    ServedKbs,
    SkillList,
)
from kbtool.model.records import StoredCard
from kbtool.model.vocabulary import MODES
from kbtool.surfaces.mcp import answers
from kbtool.surfaces.mcp.tools.base import (
    DEFAULT_BUDGET,
    READS,
    Budget,
    CardId,
    CardKind,
    For,
    KbChoice,
    Kind,
    Limit,
    Offset,
    OnlyApplying,
    Sources,
    Status,
    Tags,
    Tool,
    Where,
    on,
    present,
    shelf_of,
    tool,
)

MAX_GET = 50  # cards one get may ask for: a context, not an export


@tool(READS)
async def kbs(ctx: Context) -> Annotated[CallToolResult, ServedKbs]:
    """The knowledge bases served, by name (the `kb` argument), with counts."""
    shelf = shelf_of(ctx)
    return await shelf.answer(None, lambda _: answers.served_kbs(shelf.served()))


@tool(READS)
async def search(
    ctx: Context,
    query: Annotated[str, Field(description="words, e.g. 'NVFP4 MoE decode'")],
    k: Annotated[int, Field(ge=1, le=100)] = 10,
    kind: Kind = None,
    status: Status = None,
    tags: Tags = None,
    where: Where = None,
    mode: Annotated[Literal[MODES], Field(description="ranking")] = MODES[0],  # type: ignore[valid-type]
    budget: Budget = answers.SEARCH_BUDGET,
    offset: Annotated[int, Field(ge=0, le=900)] = 0,
    env: Annotated[bool, Field(description="flag findings from other GPUs, engines, drivers")] = False,
    applies_for: For = None,
    only_applying: OnlyApplying = False,
    sources: Sources = True,
    explain: Annotated[bool, Field(description="each hit's rank and score in each leg")] = False,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, SearchPage]:
    """Cards and skills by keywords and meaning, best first, a line each (superseded, refuted last); `get`
    a hit's id."""

    def answer(base: KnowledgeBase) -> CallToolResult:
        asked = present(kind=kind, status=status, tags=tags, where=where, applies_for=applies_for)
        request = SearchRequest.parse(
            {
                "query": query,
                "k": k + offset,  # the hits past offset are this page
                "mode": mode,
                "env": env,
                "only_applying": only_applying,
                "sources": sources,
                "explain": explain,
                **asked,
            }
        )
        return answers.search_page(base.search_page(request, offset), k, budget)

    return await on(ctx, kb, answer)


@tool(READS)
async def get(
    ctx: Context,
    id: Annotated[str | None, Field(description="card id (or prefix) or skill name")] = None,
    ids: Annotated[list[str] | None, Field(description="several (max 50), instead of id")] = None,
    fields: Annotated[list[str] | None, Field(description="only these fields (body: the text)")] = None,
    all_metrics: Annotated[bool, Field(description="a finding's every metric, not its headline")] = False,
    offset: Annotated[int, Field(ge=0, description="a skill's next page")] = 0,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, Documents]:
    """Whole cards or skills (a skill's SKILL.md, to follow): markdown as text, fields as structured content."""
    refs = ([id] if id else []) + list(ids or [])
    if not refs or (id and ids):
        raise ToolError("get: give id (one card) or ids (several), not both and not neither")
    if len(refs) > MAX_GET:
        raise ToolError(f"get: {len(refs)} ids, over {MAX_GET} in one call")
    return await on(ctx, kb, lambda base: whole_documents(base, refs, fields, all_metrics, offset))


def whole_documents(
    kb: KnowledgeBase,
    refs: list[str],
    fields: list[str] | None = None,
    all_metrics: bool = True,
    offset: int = 0,
) -> CallToolResult:
    """Whole cards or skills (KnowledgeBase.documents), each one's markdown as text; a finding's evidence cut
    to its headline metrics unless all_metrics (answers.headline_evidence); only `fields` when given; one
    skill's text a page at a time from `offset` (answers.skill_page)."""
    from kbtool.skills.spec import render_skill

    found, items = kb.documents(refs)
    texts, documents = [], []
    next_offset = None
    for document, item in zip(found.cards, items, strict=True):
        if isinstance(item, StoredCard):
            card, document, body, note = (
                (item.card, document, item.body, "") if all_metrics else answers.headline_evidence(item, document)
            )
            text = markdown.render(card, body) + note
        else:
            text = render_skill(item)
            if not fields and len(refs) == 1:
                text, next_offset = answers.skill_page(text, offset)
        if fields:
            document, text = answers.only_fields(document, fields)
        else:  # the text is the markdown, body and all: a second copy in the structured content doubled the cost
            document = document.model_copy(update={"body": None})
            text += document.lock_line()
        texts.append(text)
        documents.append(document)
    return answers.documents(found.model_copy(update={"cards": documents, "next_offset": next_offset}), texts)


@tool(READS, name="list")
async def list_cards(
    ctx: Context,
    kind: CardKind = None,
    status: Status = None,
    tags: Tags = None,
    where: Where = None,
    applies_for: For = None,
    only_applying: OnlyApplying = False,
    sources: Sources = True,
    fields: Annotated[list[str] | None, Field(description='frontmatter fields to add; ["all"]: every one')] = None,
    limit: Limit = 200,
    offset: Offset = 0,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, CardPage]:
    """Cards matching every filter (id, kind, title, status), a page at a time."""
    asked = present(kind=kind, status=status, tags=tags, where=where, applies_for=applies_for)
    request = {**asked, "only_applying": only_applying, "sources": sources}
    return await on(
        ctx, kb, lambda base: answers.card_page(base.card_page(ListRequest.parse(request), limit, offset), fields or ())
    )


@tool(READS)
async def gaps(
    ctx: Context,
    applies_for: For = None,
    only_applying: OnlyApplying = False,
    sources: Sources = True,
    limit: Limit = 50,
    offset: Offset = 0,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, OpenGaps]:
    """The open questions, high priority first: what to measure next."""
    asked = {**present(applies_for=applies_for), "only_applying": only_applying, "sources": sources}
    return await on(ctx, kb, lambda base: answers.open_gaps(base.open_gaps(GapsRequest.parse(asked), limit, offset)))


@tool(READS)
async def related(
    ctx: Context,
    id: Annotated[str, Field(description="a card id or a skill's name")],
    k: Annotated[int, Field(ge=1, le=50, description="similar cards")] = 5,
    depth: Annotated[int, Field(ge=1, le=3, description="link steps, both ways")] = 1,
    include_bodies: Annotated[bool, Field(description="the linked cards' texts too, within budget")] = False,
    budget: Budget = DEFAULT_BUDGET,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, Related]:
    """A card's links out and in, up to `depth` steps, and the most similar cards."""

    def answer(base: KnowledgeBase) -> CallToolResult:
        found = base.related(id, k, depth)
        if not include_bodies:
            return answers.related(found, "")
        linked = [link.id for link in [*found.links_out, *found.links_in] if not link.missing]
        room = budget - len(answers.related_lines(found))
        return answers.related(found, bodies(base, [*linked, *(n.id for n in found.beyond)], room))

    return await on(ctx, kb, answer)


def bodies(kb: KnowledgeBase, ids: list[str], room: int) -> str:
    """The linked cards' texts, nearest first, as many as the room holds (the text says which it left out)."""
    out, left = "", []
    for card_id in dict.fromkeys(ids):
        stored = kb.get(card_id)
        body = f"\n\n## {stored.id} [{stored.card.kind}, {stored.card.status}] {stored.card.title}\n{stored.body}"
        if len(out) + len(body) > room:
            left.append(card_id)
        else:
            out += body
    if left:
        out += f"\n\n(bodies left out to keep within budget: {', '.join(left)}; get them by id)"
    return out


@tool(READS)
async def skills(
    ctx: Context, limit: Limit = 100, offset: Offset = 0, kb: KbChoice = None
) -> Annotated[CallToolResult, SkillList]:
    """The skills (procedures): name and description; `get` one by name to follow it."""
    return await on(ctx, kb, lambda base: answers.skill_list(base.skill_list(limit, offset)))


@tool(READS)
async def log(
    ctx: Context, id: CardId, limit: Limit = 50, offset: Offset = 0, kb: KbChoice = None
) -> Annotated[CallToolResult, CardLog]:
    """A card's history, newest first, with the reasons given; a gate's recorded runs too."""
    return await on(ctx, kb, lambda base: answers.card_log(base.card_log(id, limit, offset)))


@tool(READS)
async def recent(
    ctx: Context,
    since: Annotated[
        str | None,
        Field(description="a date, an age (12h, 7d) or a commit"),
    ] = None,
    kind: Kind = None,
    limit: Limit = 20,
    offset: Offset = 0,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, RecentChanges]:
    """What changed, newest first: each commit's cards and the agent that made it."""
    return await on(ctx, kb, lambda base: answers.recent_changes(base.recent_changes(since, kind, limit, offset)))


TOOLS: tuple[Tool, ...] = (kbs, search, get, list_cards, gaps, related, skills, log, recent)
