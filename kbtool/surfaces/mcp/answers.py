"""What an MCP tool answers: a text for the model to read and the same answer as structured content (the
operation's contract, kbtool/model/contracts.py, dumped as the CLI's --json dumps it). Each function here
turns one contract into that pair; the paging footers and the search budget are kept here too, so every
tool's text says the same things the same way.
"""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult, TextContent

from kbtool.model.contracts import (
    CardAdded,
    CardLog,
    CardPage,
    Comparison,
    Documents,
    FindingAdded,
    GateRunResult,
    LintPage,
    LockCheck,
    OpenGaps,
    Page,
    Payload,
    RecentChanges,
    Related,
    SearchPage,
    ServedKbs,
    SkillList,
    StatusChange,
)

SNIPPET_CHARS = 200


def result(text: str, structured: Payload | dict[str, Any]) -> CallToolResult:
    data = structured.to_json() if isinstance(structured, Payload) else structured
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def with_notices(answer: CallToolResult, notices: list[str]) -> CallToolResult:
    """What the CLI prints as `kb: note:` (keyword-only search, a rebuilt index) goes into the answer."""
    if notices:
        answer.content.append(TextContent(type="text", text="\n".join(f"note: {n}" for n in notices)))
    return answer


def paged(lines: list[str], page: Page, shown: int, noun: str, tool: str) -> str:
    """The lines and the footer that says which page they are, and how to ask for the next."""
    after = page.offset + shown
    where = f" (from {page.offset + 1})" if page.offset and shown else ""
    footer = f"{shown} of {page.total} {noun} shown{where}"
    if after < page.total:
        footer += f"; call {tool} again with offset={after} for the next page"
    return "\n".join([*lines, footer])


def brackets(*marks: str | None) -> str:
    """'finding, confirmed, other': a line's marks, the applicability one only when there is one."""
    return ", ".join(m for m in marks if m)


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def cut_notice(shown: int, found: int, budget: int) -> str:
    return (
        f"{shown} of {found} hits shown (the answer is cut to budget={budget} characters); "
        "raise budget, lower k or narrow the query to see the rest"
    )


# --- reading ---------------------------------------------------------------------------------


def search_page(found: SearchPage, k: int, budget: int) -> CallToolResult:
    """The hits one line each, as many as the budget holds (the best one always, cut to fit); the structured
    content is the page with those hits, whole, and the cut flagged (truncated, shown of found)."""
    # room for the line that says the answer was cut, so the whole text stays within the budget
    room = budget - len(cut_notice(found.found, found.found, budget)) - 1
    lines: list[str] = []
    spent = 0
    for hit in found.hits:
        snippet = one_line(hit.snippet, SNIPPET_CHARS)
        line = f"{hit.id} [{brackets(hit.kind, hit.status, hit.applies)}] {hit.title} — {snippet}"
        if hit.may_not_apply:
            line += f" (may not apply here: {'; '.join(hit.may_not_apply)})"
        if spent + len(line) > room:
            if lines:
                break
            line = one_line(line, room)
        lines.append(line)
        spent += len(line) + 1
    shown = len(lines)
    truncated = shown < found.found
    page = found.model_copy(update={"hits": found.hits[:shown], "truncated": truncated, "shown": shown})
    past = f" past the first {found.offset}" if found.offset else ""
    text = "\n".join(lines) if lines else f"no cards match {found.query!r}{past}"
    if truncated:
        text += "\n" + cut_notice(shown, found.found, budget)
    elif found.found == k:
        text += f"\n{shown} hits shown; search again with offset={found.offset + shown} for the next ones"
    return result(text, page)


def documents(found: Documents, texts: list[str]) -> CallToolResult:
    missing = f"\nno card or skill with id {', '.join(found.missing)}" if found.missing else ""
    return result("\n".join(texts) + missing, found)


def card_page(page: CardPage) -> CallToolResult:
    lines = [f"{c.id} [{brackets(c.kind, c.status, c.applies)}] {c.title}" for c in page.cards] or ["no cards match"]
    return result(paged(lines, page, len(page.cards), "cards", "list"), page)


def open_gaps(page: OpenGaps) -> CallToolResult:
    lines = [
        f"{g.id} [{brackets(g.priority, g.applies)}] {g.question}"
        + (f" (reopened: {g.reopened})" if g.reopened else "")
        for g in page.gaps
    ] or ["no open gaps"]
    return result(paged(lines, page, len(page.gaps), "open gaps", "gaps"), page)


def lint_page(page: LintPage) -> CallToolResult:
    summary = f"{page.errors} error(s), {page.count - page.errors} warning(s)" if page.count else "ok"
    lines = [*(p.line() for p in page.problems), summary]
    shown = Page(total=page.count, offset=page.offset, truncated=page.truncated)
    return result(paged(lines, shown, len(page.problems), "problems", "lint"), page)


def related(found: Related, bodies: str) -> CallToolResult:
    return result(related_lines(found) + bodies, found)


def related_lines(found: Related) -> str:
    lines = [
        f"{link.rel} -> {link.id}" + (f" [{link.kind}] {link.title}" if link.title is not None else " (missing)")
        for link in found.links_out
    ]
    lines += [f"{link.rel} <- {link.id} [{link.kind}] {link.title}" for link in found.links_in]
    lines += [f"{n.depth} links away: {n.id} [{n.kind}] {n.title} ({n.rel} {n.via})" for n in found.beyond]
    lines += [f"similar {s.id} [{s.kind}] {s.title} (similarity {s.similarity:.3f})" for s in found.similar]
    return "\n".join(lines) or f"nothing links to or resembles {found.id}"


def skill_list(page: SkillList) -> CallToolResult:
    lines = [f"{s.name}: {s.description}" for s in page.skills] or ["no skills in this knowledge base"]
    return result(paged(lines, page, len(page.skills), "skills", "skills"), page)


def card_log(page: CardLog) -> CallToolResult:
    lines = [f"{c.sha[:10]} {c.date} {c.author}: {c.subject}" for c in page.commits] or ["no commits"]
    return result(paged(lines, page, len(page.commits), "commits", "log"), page)


def recent_changes(page: RecentChanges) -> CallToolResult:
    lines = [
        f"{c.date} {c.author} {c.op or 'commit'}: "
        + ", ".join(
            f"{card.change} {card.id} [{card.kind}]" + (f" {card.title}" if card.title else "") for card in c.cards
        )
        for c in page.changes
    ] or [f"no changes{f' since {page.since}' if page.since else ''}"]
    return result(paged(lines, page, len(page.changes), "changes", "recent"), page)


def served_kbs(served: ServedKbs) -> CallToolResult:
    lines = [
        f"{s.name}{' (default)' if s.default else ''}: {s.path} — {s.cards} cards, {s.skills} skills, "
        f"{s.open_gaps} open gaps{'' if s.writable else ', read-only'}"
        for s in served.kbs
    ]
    return result("\n".join(lines), served)


def comparison(compared: Comparison) -> CallToolResult:
    return result("\n".join(compared.lines()), compared)


def lock_check(check: LockCheck) -> CallToolResult:
    lines = [p.line() for p in check.problems]
    lines.append(f"{check.locked} locked gates match kb.lock" if check.ok else f"{len(check.problems)} mismatch(es)")
    return result("\n".join(lines), check)


# --- writing and curating ------------------------------------------------------------------------


def finding_added(added: FindingAdded) -> CallToolResult:
    notes = added.related.notes()
    judged = f", {added.judged} judged against the baseline" if added.judged else ""
    text = (
        f"added {added.id} ({added.path}) as {added.status} with {added.evidence} evidence entries{judged}, "
        "awaiting review by a person" + ("; " + "; ".join(notes) if notes else "")
    )
    return result(text, added)


def card_added(added: CardAdded) -> CallToolResult:
    return result(f"added {added.id} ({added.path}) as a draft, awaiting review by a person", added)


def superseded(old: StatusChange) -> CallToolResult:
    return result(f"{old.id} superseded by {old.superseded_by}; search now ranks {old.id} last", old)


def status_set(changed: StatusChange) -> CallToolResult:
    return result(f"{changed.id} is {'open again' if changed.status == 'open' else changed.status}", changed)


def gate_run(run: GateRunResult) -> CallToolResult:
    return result(run.line(), run)
