"""The MCP tools' work: each a plain method over one KnowledgeBase that returns a CallToolResult
(a text for the model to read, the same answer as structured content). kbtool/surfaces/mcp.py
declares them to the SDK; this module knows nothing of the protocol beyond its result type.

The calls run one at a time on a single worker thread: the facade and its SQLite index are not
meant for concurrent use, and the event loop stays free for the transport. A KbError becomes a
tool error carrying its one-line message; anything else is logged and reported as a tool error
too, so no input can take the server down.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from ..kb import KnowledgeBase
from ..model import markdown
from ..model.contracts import (
    CardAdded,
    CardPage,
    Contract,
    FindingInput,
    ListedCard,
    OpenGap,
    OpenGaps,
    SearchPage,
    SkillBrief,
    SkillList,
)
from ..model.errors import BadInput, KbError
from ..model.records import StoredCard, brief

log = logging.getLogger("kb.serve")

SNIPPET_CHARS = 200


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


def _cut_notice(shown: int, found: int, budget: int) -> str:
    return (
        f"{shown} of {found} hits shown (the answer is cut to budget={budget} characters); "
        "raise budget, lower k or narrow the query to see the rest"
    )


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
