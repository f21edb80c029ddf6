"""The MCP tools' work: each a plain method over one KnowledgeBase that returns a CallToolResult
(a text for the model to read, the same answer as structured content). kbtool/surfaces/mcp/server.py
declares them to the SDK; this module knows nothing of the protocol beyond its result type.

The calls run one at a time on a single worker thread: the facade and its SQLite index are not
meant for concurrent use, and the event loop stays free for the transport. A KbError becomes a
tool error carrying its one-line message; anything else is logged and reported as a tool error
too, so no input can take the server down.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model import markdown
from kbtool.model.contracts import (
    CardAdded,
    CardLog,
    CardPage,
    Contract,
    Document,
    Documents,
    FindingInput,
    LintPage,
    ListedCard,
    OpenGap,
    OpenGaps,
    RecentChanges,
    SearchPage,
    ServedKb,
    ServedKbs,
    SkillBrief,
    SkillList,
    StatusChange,
)
from kbtool.model.errors import BadInput, KbError
from kbtool.model.records import StoredCard, brief
from kbtool.store.history import commit_entry

log = logging.getLogger("kb.serve")

SNIPPET_CHARS = 200
T = TypeVar("T")


class KbTools:
    """The tools, each a plain method over the KnowledgeBase that returns a CallToolResult."""

    def __init__(self, kb: KnowledgeBase, worker: ThreadPoolExecutor | None = None):
        self.kb = kb
        self._worker = worker or ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-serve")

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
        offset: int,
        env: bool = False,
        applies_for: dict[str, str] | None = None,
        only_applying: bool = False,
    ) -> CallToolResult:
        if budget < 200:
            raise BadInput("budget must be at least 200 characters")
        where = _where(filters)
        result = self.kb.search(
            query,
            k=k + offset,
            kind=kind,
            status=status,
            tags=tags or (),
            where=where,
            mode=mode,
            env=env,
            applies_for=applies_for,
            only_applying=only_applying,
        )
        found = result.hits[offset:]
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
                kb=hit.kb,
                may_not_apply=hit.may_not_apply,
                applies=hit.applies,
            )
            line = f"{hit.id} [{_brackets(hit.kind, hit.status, hit.applies)}] {hit.title} — {short.snippet}"
            if hit.may_not_apply:
                line += f" (may not apply here: {'; '.join(hit.may_not_apply)})"
            if spent + len(line) > room:
                if hits:
                    break
                line = _one_line(line, room)  # the best hit always shows, cut to fit
            hits.append(short)
            lines.append(line)
            spent += len(line) + 1
        truncated = len(hits) < len(found)
        page = SearchPage(query=query, hits=hits, truncated=truncated, shown=len(hits), found=len(found), offset=offset)
        past = f" past the first {offset}" if offset else ""
        text = "\n".join(lines) if lines else f"no cards match {query!r}{past}"
        if truncated:
            text += "\n" + _cut_notice(len(hits), len(found), budget)
        elif len(found) == k:
            text += f"\n{len(hits)} hits shown; search again with offset={offset + len(hits)} for the next ones"
        return _result(text, page)

    def get(self, refs: builtins.list[str]) -> CallToolResult:
        """Whole cards or skills. One id that matches nothing is an error; of several, the answer
        names the ones that matched nothing."""
        from kbtool.skills.spec import render_skill

        texts, documents, missing = [], [], []
        for ref in dict.fromkeys(refs):
            try:
                found = self.kb.card_or_skill(ref)
            except KbError:
                if len(refs) == 1:
                    raise
                missing.append(ref)
                continue
            if isinstance(found, StoredCard):
                texts.append(markdown.render(found.card, found.body))
            else:
                texts.append(render_skill(found))
            documents.append(Document.model_validate(found.to_dict()))
        text = "\n".join(texts) + (f"\nno card or skill with id {', '.join(missing)}" if missing else "")
        return _result(text, Documents(cards=documents, missing=missing))

    def list(
        self,
        kind: str | None,
        status: str | None,
        tags: builtins.list[str] | None,
        filters: dict[str, Any] | None,
        limit: int,
        offset: int,
        applies_for: dict[str, str] | None = None,
        only_applying: bool = False,
    ) -> CallToolResult:
        found = self.kb.summaries_everywhere(
            kind=kind,
            status=status,
            tags=tags or (),
            where=_where(filters),
            applies_for=applies_for,
            only_applying=only_applying,
        )
        page, cut = Paged.of(found, offset, limit)
        cards = [ListedCard(**brief(c), path=c.path, kb=c.get("kb"), applies=c.applies) for c in page.items]
        lines = [f"{c.id} [{_brackets(c.kind, c.status, c.applies)}] {c.title}" for c in cards] or ["no cards match"]
        return _result(page.text(lines, "cards", "list"), CardPage(cards=cards, **cut))

    def gaps(
        self, limit: int, offset: int, applies_for: dict[str, str] | None = None, only_applying: bool = False
    ) -> CallToolResult:
        open_gaps = [
            OpenGap(
                id=g.id,
                title=g.title,
                question=g.get("question", default=g.title),
                priority=g.get("priority", default="medium"),
                status=g.status,
                kb=g.get("kb"),
                reopened=g.get("reopened"),
                applies=g.applies,
            )
            for g in self.kb.gaps_everywhere(applies_for, only_applying)
        ]
        page, cut = Paged.of(open_gaps, offset, limit)
        lines = [
            f"{g.id} [{_brackets(g.priority, g.applies)}] {g.question}"
            + (f" (reopened: {g.reopened})" if g.reopened else "")
            for g in page.items
        ] or ["no open gaps"]
        return _result(page.text(lines, "open gaps", "gaps"), OpenGaps(gaps=page.items, **cut))

    def lint(self, skip: builtins.list[str] | None, limit: int, offset: int) -> CallToolResult:
        report = self.kb.lint_report(skip or ())
        page, cut = Paged.of(report.problems, offset, limit)
        summary = f"{report.errors} error(s), {report.count - report.errors} warning(s)" if report.count else "ok"
        lines = [*(p.line() for p in page.items), summary]
        structured = LintPage(
            problems=page.items,
            count=report.count,
            errors=report.errors,
            ok=report.ok,
            offset=offset,
            truncated=cut["truncated"],
        )
        return _result(page.text(lines, "problems", "lint"), structured)

    def related(self, ref: str, k: int, depth: int, include_bodies: bool, budget: int) -> CallToolResult:
        """The neighbourhood in lines; with include_bodies, the linked cards' texts after them, nearest
        first, as many as the budget holds (the answer says which it left out)."""
        found = self.kb.related(ref, k, depth)
        lines = [
            f"{link.rel} -> {link.id}" + (f" [{link.kind}] {link.title}" if link.title is not None else " (missing)")
            for link in found.links_out
        ]
        lines += [f"{link.rel} <- {link.id} [{link.kind}] {link.title}" for link in found.links_in]
        lines += [f"{n.depth} links away: {n.id} [{n.kind}] {n.title} ({n.rel} {n.via})" for n in found.beyond]
        lines += [f"similar {s.id} [{s.kind}] {s.title} (similarity {s.similarity:.3f})" for s in found.similar]
        text = "\n".join(lines) or f"nothing links to or resembles {found.id}"
        if include_bodies:
            linked = [link.id for link in [*found.links_out, *found.links_in] if not link.missing]
            text += self._bodies([*linked, *(n.id for n in found.beyond)], budget - len(text))
        return _result(text, found)

    def _bodies(self, ids: builtins.list[str], room: int) -> str:
        out, left = "", []
        for card_id in dict.fromkeys(ids):
            stored = self.kb.get(card_id)
            body = f"\n\n## {stored.id} [{stored.card.kind}, {stored.card.status}] {stored.card.title}\n{stored.body}"
            if len(out) + len(body) > room:
                left.append(card_id)
            else:
                out += body
        if left:
            out += f"\n\n(bodies left out to keep within budget: {', '.join(left)}; get them by id)"
        return out

    def skills(self, limit: int, offset: int) -> CallToolResult:
        briefs = [SkillBrief(name=s.name, description=s.description, path=s.path) for s in self.kb.skills()]
        page, cut = Paged.of(briefs, offset, limit)
        lines = [f"{s.name}: {s.description}" for s in page.items] or ["no skills in this knowledge base"]
        return _result(page.text(lines, "skills", "skills"), SkillList(skills=page.items, **cut))

    def skill(self, name: str) -> CallToolResult:
        from kbtool.skills.spec import render_skill

        found = self.kb.skill(name)
        return _result(render_skill(found), Document.model_validate(found.to_dict()))

    def log(self, ref: str, limit: int, offset: int) -> CallToolResult:
        found = self.kb.card_or_skill(ref)
        if not isinstance(found, StoredCard):
            raise BadInput(f"{ref}: a skill; log takes a card id (a skill's history is in git under skills/)")
        entries = [commit_entry(c) for c in self.kb.history(ref)]
        page, cut = Paged.of(entries, offset, limit)
        lines = [f"{c.sha[:10]} {c.date} {c.author}: {c.subject}" for c in page.items] or ["no commits"]
        return _result(page.text(lines, "commits", "log"), CardLog(id=found.id, commits=page.items, **cut))

    def recent(self, since: str | None, kind: str | None, limit: int, offset: int) -> CallToolResult:
        changes = self.kb.recent(since, kind)
        page, cut = Paged.of(changes, offset, limit)
        lines = [
            f"{c.date} {c.author} {c.op or 'commit'}: "
            + ", ".join(
                f"{card.change} {card.id} [{card.kind}]" + (f" {card.title}" if card.title else "") for card in c.cards
            )
            for c in page.items
        ] or [f"no changes{f' since {since}' if since else ''}"]
        return _result(page.text(lines, "changes", "recent"), RecentChanges(since=since, changes=page.items, **cut))

    def gate_verify(self) -> CallToolResult:
        check = self.kb.verify_gates()
        lines = [p.line() for p in check.problems]
        verdict = f"{check.locked} locked gates match kb.lock" if check.ok else f"{len(check.problems)} mismatch(es)"
        lines.append(verdict)
        return _result("\n".join(lines), check)

    def compare(
        self, candidate: str, baseline: str, ignore_conditions: builtins.list[str] | None = None
    ) -> CallToolResult:
        result = self.kb.compare(candidate, baseline, ignore=ignore_conditions or [])
        return _result("\n".join(result.lines()), result)

    # --- writing: every write is an agent's, so it lands for review (kbtool.curation.review) ----------

    def add_finding(self, data: dict[str, Any], agent: str) -> CallToolResult:
        finding = FindingInput.parse({k: v for k, v in data.items() if v is not None}, "add_finding")
        added = self.kb.record_finding(finding, agent=agent)
        notes = added.related.notes()
        judged = f", {added.judged} judged against the baseline" if added.judged else ""
        text = (
            f"added {added.id} ({added.path}) as {added.status} with {added.evidence} evidence entries{judged}, "
            "awaiting review by a person" + ("; " + "; ".join(notes) if notes else "")
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

    # --- curating: what an agent may change of others' work is held by kbtool.curation.review -------

    def supersede(self, old: str, new: str, reason: str | None, agent: str) -> CallToolResult:
        old_card, new_card = self.kb.supersede(old, new, reason, agent=agent)
        text = f"{old_card.id} superseded by {new_card.id}; search now ranks {old_card.id} last"
        return _result(text, _status_change(old_card, superseded_by=new_card.id))

    def set_status(self, ref: str, status: str, reason: str | None, agent: str) -> CallToolResult:
        stored = self.kb.set_status(ref, status, reason, agent=agent)
        text = f"{stored.id} is {'open again' if status == 'open' else stored.card.status}"
        return _result(text, _status_change(stored))

    def gate_run(self, ref: str, in_dir: str | None, confirms: str | None) -> CallToolResult:
        result = self.kb.run_gate(ref, in_dir=in_dir, confirms=confirms, require_lock=True)
        return _result(result.line(), result)


class Shelf:
    """The knowledge bases one server serves, by name, the first the default. Their calls share one
    worker thread, so one embedding model (KnowledgeBase.open_several) is never used by two at once."""

    def __init__(self, bases: Mapping[str, KnowledgeBase], read_only: bool = False):
        if not bases:
            raise BadInput("no knowledge base to serve")
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-serve")
        self.tools = {name: KbTools(kb, self.worker) for name, kb in bases.items()}
        self.default = next(iter(self.tools))
        self.read_only = read_only

    def pick(self, name: str | None) -> KbTools:
        if name is None:
            return self.tools[self.default]
        if name not in self.tools:
            raise ToolError(f"no knowledge base {name!r} here; this server serves {', '.join(self.tools)}")
        return self.tools[name]

    async def call(self, name: str | None, method: Callable[..., CallToolResult], *args: Any) -> CallToolResult:
        """KbTools.METHOD on the knowledge base named (the default when None)."""
        tools = self.pick(name)
        return await tools.call(functools.partial(method, tools), *args)

    def warm(self) -> None:
        for tools in self.tools.values():
            tools.warm()

    async def listing(self) -> CallToolResult:
        return await self.pick(None).call(self._listing)

    def _listing(self) -> CallToolResult:
        served = []
        for name, tools in self.tools.items():
            kb = tools.kb
            served.append(
                ServedKb(
                    name=name,
                    title=kb.config.kb.name,
                    path=str(kb.root),
                    cards=len(kb.summaries()),
                    skills=len(kb.skills()),
                    open_gaps=len(kb.gaps()),
                    default=name == self.default,
                    writable=not self.read_only and kb.store.writable,
                )
            )
        lines = [
            f"{s.name}{' (default)' if s.default else ''}: {s.path} — {s.cards} cards, {s.skills} skills, "
            f"{s.open_gaps} open gaps{'' if s.writable else ', read-only'}"
            for s in served
        ]
        return _result("\n".join(lines), ServedKbs(kbs=served))


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
    from kbtool.model.fields import parse_filters

    out = [
        f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in (filters or {}).items()
    ]
    parse_filters(out, "filters")
    return out


def _brackets(*marks: str | None) -> str:
    """'finding, confirmed, other': a line's marks, the applicability one only when there is one."""
    return ", ".join(m for m in marks if m)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Paged(Generic[T]):
    """One page of a list-shaped answer, and the line that says which page it is."""

    items: builtins.list[T]
    total: int
    offset: int

    @classmethod
    def of(cls, items: Sequence[T], offset: int, limit: int) -> tuple[Paged[T], dict[str, Any]]:
        """The page and its Page fields (total, offset, truncated) for the answer's contract."""
        page = cls(list(items[offset : offset + limit]), len(items), offset)
        return page, {"total": page.total, "offset": offset, "truncated": offset + len(page.items) < page.total}

    def text(self, lines: builtins.list[str], noun: str, tool: str) -> str:
        shown, after = len(self.items), self.offset + len(self.items)
        where = f" (from {self.offset + 1})" if self.offset and shown else ""
        footer = f"{shown} of {self.total} {noun} shown{where}"
        if after < self.total:
            footer += f"; call {tool} again with offset={after} for the next page"
        return "\n".join([*lines, footer])


def _status_change(stored: StoredCard, superseded_by: str | None = None) -> StatusChange:
    return StatusChange(**brief(stored), path=stored.path, superseded_by=superseded_by)
