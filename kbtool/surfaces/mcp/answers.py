"""What an MCP tool answers: a text for the model and the same answer as structured content.

The structured content is the operation's contract (kbtool/model/contracts/), dumped as the CLI's --json
dumps it. Each function here turns one contract into that pair. The paging footers and the budgets (a list
page 2,000 tokens by default, a search 4,000 characters) are kept here too, and so is the rewording of the
CLI's options in a refusal or a note as the tools' arguments (in_mcp_words), so every tool's text says the
same things the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from mcp_types import CallToolResult, TextContent

# the same cuts as `kb show` makes (headline_cut, only_fields)
from kbtool.evidence.headline import headline_body
from kbtool.evidence.headline import headline_evidence as headline_cut
from kbtool.model.contracts import (
    CardAdded,
    CardEdited,
    CardLog,
    CardPage,
    Comparison,
    Document,
    Documents,
    FindingAdded,
    GateRunResult,
    LintPage,
    ListedCard,
    LockCheck,
    OpenGaps,
    Page,
    Payload,
    RecentChanges,
    Related,
    SearchPage,
    ServedKbs,
    SkillList,
    SkillPacked,
    StatusChange,
)
from kbtool.model.contracts.reading import only_fields as only_fields
from kbtool.model.errors import BadInput
from kbtool.model.records import StoredCard
from kbtool.model.tokens import estimate_tokens, json_tokens

P = TypeVar("P", bound=Payload)

SNIPPET_CHARS = 200
# What a list-shaped answer may spend by default, in tokens (estimated: kbtool/model/tokens.py), on its text and
# its structured content together (a client may show the model both): a page is cut to what fits, and its footer
# says how many of how many it shows and the offset of the next page. Counted in characters (8,000) until issue
# 45: `recent`'s commit hashes and subjects were 2.5k tokens of o200k_base in those 8,000.
LIST_BUDGET = 2000
FOOTER_ROOM = 100  # tokens of the footer line and the page fields (total, offset, truncated, counts)


# The library speaks the CLI's words in a refusal (`--ignore-condition KEY compares them anyway`) and in a note
# (`compared across concurrency: 100 vs 1, as asked (--ignore-condition concurrency)`); over MCP each becomes the
# argument an agent passes instead: every --ignore-condition KEY of a line one list
IGNORED = re.compile(r"--ignore-condition [\w.]+(?: --ignore-condition [\w.]+)*")
IGNORED_KEY = re.compile(r"--ignore-condition ([\w.]+)")
ARGUMENTS = {
    "--baseline-from": "baseline_from",
    "--from": "from",
    "--strict": "strict=true",
    "--for": "applies_for",
    "--only-applying": "only_applying=true",
}
GATE_RUN = re.compile(r"kb gate run (\S+) --confirms ([\w:.-]+)")  # a finding's way to a verdict, a tool's call


def in_mcp_words(message: str) -> str:
    """A refusal or a note with the CLI's options named as the MCP tools' arguments."""
    message = IGNORED.sub(lambda m: f"ignore_conditions={json.dumps(IGNORED_KEY.findall(m.group(0)))}", message)
    message = GATE_RUN.sub(lambda m: f"gate_run(id={m.group(1)}, confirms={json.dumps(m.group(2))})", message)
    for flag, argument in ARGUMENTS.items():
        message = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", argument, message)
    return message


def result(text: str, structured: Payload | dict[str, Any]) -> CallToolResult:
    data = structured.to_json() if isinstance(structured, Payload) else structured
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def with_notices(answer: CallToolResult, notices: list[str]) -> CallToolResult:
    """What the CLI prints as `kb: note:` (keyword-only search, a rebuilt index) goes into the answer, in the
    MCP tools' words."""
    if notices:
        said = "\n".join(f"note: {in_mcp_words(n)}" for n in notices)
        answer.content.append(TextContent(type="text", text=said))
    return answer


def paged(lines: list[str], page: Page, shown: int, noun: str, tool: str, cut: bool = False) -> str:
    """The lines and the footer that says which page they are, and how to ask for the next."""
    after = page.offset + shown
    where = f" (from {page.offset + 1})" if page.offset and shown else ""
    footer = f"{shown} of {page.total} {noun} shown{where}"
    if cut:
        footer += f" (the page is cut to ~{LIST_BUDGET} tokens)"
    if after < page.total:
        footer += f"; call {tool} again with offset={after} for the next page"
    return "\n".join([*lines, footer])


def fitting(lines: list[str], items: list[Any], budget: int = LIST_BUDGET - FOOTER_ROOM) -> int:
    """How many of the items, first to last, fit the budget with their lines and their JSON together (the
    first always, so a page is never empty while there is something to show)."""
    spent = 0
    for n, (line, item) in enumerate(zip(lines, items, strict=True)):
        spent += estimate_tokens(line) + json_tokens(item) + 1
        if n and spent > budget:
            return n
    return len(items)


def budget_page(
    page: P,
    where: Page,
    field: str,
    lines: list[str],
    noun: str,
    tool: str,
    head: list[str] = (),  # type: ignore[assignment]
) -> CallToolResult:
    """The page cut to the items that fit LIST_BUDGET (fitting), flagged `truncated` when more follow, and
    its text with the footer saying how many it shows and where the next page starts (`where`: the page's
    total and offset). head: lines before the items (and what the page holds beside them), counted first."""
    data = page.to_json()
    items = data[field]
    beside = json_tokens({k: v for k, v in data.items() if k != field}) if head else 0
    spent = sum(estimate_tokens(line) for line in head) + beside
    shown = fitting(lines, items, LIST_BUDGET - FOOTER_ROOM - spent)
    more = where.offset + shown < where.total
    cut = page.model_copy(update={field: getattr(page, field)[:shown], "truncated": more})
    return result(paged([*head, *lines[:shown]], where, shown, noun, tool, cut=shown < len(items)), cut)


def brackets(*marks: str | None) -> str:
    """'finding, confirmed, other': a line's marks, the applicability one only when there is one."""
    return ", ".join(m for m in marks if m)


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def cut_notice(shown: int, found: int, budget: int) -> str:
    return (
        f"{shown} of {found} hits shown (the text and the structured content are each cut to budget={budget} "
        "characters); raise budget, lower k or narrow the query to see the rest"
    )


# --- reading ---------------------------------------------------------------------------------

# characters of a search answer's text, and as many of its structured content (its `budget` argument, in
# characters: what an agent can reason about); ~1.8k tokens of o200k_base in all on the 851-card KB (issue 45)
SEARCH_BUDGET = 4000
SEARCH_FOOTER_ROOM = 300  # characters of the cut notice's room and the page's own fields (query, found, offset)
MIN_SNIPPET = 24  # a snippet shorter than this says nothing: the hit's line goes without one


def search_page(found: SearchPage, k: int, budget: int) -> CallToolResult:
    """The hits one line each, the text and the structured content each within `budget` characters: each hit
    gets an equal share of what is left of both, its snippet (in both) cut to fit, so `k` hits are `k` hits; a
    hit is left out only when even its line without a snippet does not fit (then the answer says so). One
    budget for both, spent first come first served, showed 7 of 10 hits on an 851-card KB (issue 45)."""
    # room for the line that says the answer was cut, so the whole text stays within the budget
    room = max(budget - len(cut_notice(found.found, found.found, budget)) - SEARCH_FOOTER_ROOM, 0)
    data_room = max(budget - SEARCH_FOOTER_ROOM, 0)  # the page's own fields (query, found, offset) beside the hits
    lines: list[str] = []
    hits: list[Any] = []
    spent = data_spent = 0
    for n, (hit, data) in enumerate(zip(found.hits, found.to_json()["hits"], strict=True)):
        left = len(found.hits) - n
        bare = hit_line(hit, "")
        bare_data = len(json.dumps({**data, "snippet": ""})) + 2
        if lines and (spent + len(bare) + 1 > room or data_spent + bare_data > data_room):
            break
        text_share = (room - spent) // left - len(bare) - 4
        data_share = (data_room - data_spent) // left - bare_data
        snippet = one_line(hit.snippet, min(SNIPPET_CHARS, text_share, data_share))
        snippet = snippet if len(snippet) >= MIN_SNIPPET or snippet == hit.snippet else ""
        line = hit_line(hit, snippet)
        if not lines and len(line) > room:  # the best hit always, cut to fit
            line = one_line(line, max(room, 80))
        whole = len(hit.snippet) <= data_share  # the structured snippet is the whole passage when it fits
        kept = hit if whole else hit.model_copy(update={"snippet": snippet})
        lines.append(line)
        hits.append(kept)
        spent += len(line) + 1
        data_spent += len(json.dumps(kept.to_json())) + 2
    shown = len(lines)
    truncated = shown < found.found
    page = found.model_copy(update={"hits": hits, "truncated": truncated, "shown": shown})
    past = f" past the first {found.offset}" if found.offset else ""
    text = "\n".join(lines) if lines else f"no cards match {found.query!r}{past}"
    if truncated:
        text += "\n" + cut_notice(shown, found.found, budget)
    elif found.found == k:
        text += f"\n{shown} hits shown; search again with offset={found.offset + shown} for the next ones"
    return result(text, page)


def hit_line(hit: Any, snippet: str) -> str:
    """'ID [kind, status, standing, applies] title — snippet (may not apply here: ...)', a search hit's line."""
    line = f"{hit.id} [{brackets(hit.kind, hit.status, hit.standing, hit.applies)}] {hit.title}"
    line += f" — {snippet}" if snippet else ""
    if hit.may_not_apply:
        line += f" (may not apply here: {'; '.join(hit.may_not_apply)})"
    return line


def headline_evidence(stored: StoredCard, document: Document) -> tuple[Any, Document, str, str]:
    """A finding's evidence cut to its headline metrics (kbtool.evidence.headline.headline_evidence, as
    `kb show` cuts it), its body's verdict lines cut the same way (headline_body), and the line saying how to
    get them all: (card, document, body, note)."""
    card, document, total = headline_cut(stored, document)
    if not total:
        return card, document, stored.body, ""
    body, left = headline_body(stored.body, stored.card, card)
    lines = f" and {left} of the body's metric lines left out" if left else ""
    note = (
        f"\n(evidence: {len(card.evidence)} of {total} entries shown, the headline metrics, rounded, without the "
        f"runs' exports and recorded_on{lines}; get again with all_metrics=true for all)"
    )
    return card, document, body, note


SKILL_PAGE = 6000  # characters of a skill's text a get shows (~1.5k tokens): kb's own SKILL.md is 10.5k


def skill_page(text: str, offset: int) -> tuple[str, int | None]:
    """The skill's text from `offset`, cut at the last line break within SKILL_PAGE characters, with a line
    saying where the next page starts; (the page, the next page's offset, None on the last)."""
    if offset >= len(text) and offset:
        raise BadInput(f"offset {offset}: the skill's text has {len(text)} characters")
    end = offset + SKILL_PAGE
    if end >= len(text):
        return text[offset:], None
    end = max(text.rfind("\n\n", offset, end), text.rfind("\n", offset, end)) + 1 or end
    end = end if end > offset + SKILL_PAGE // 2 else offset + SKILL_PAGE  # no line break near: cut mid-line
    note = f"\n(characters {offset + 1}-{end} of {len(text)} shown; get again with offset={end} for the next page)"
    return text[offset:end] + note, end


def documents(found: Documents, texts: list[str]) -> CallToolResult:
    missing = f"\nno card or skill with id {', '.join(found.missing)}" if found.missing else ""
    return result("\n".join(texts) + missing, found)


def card_page(page: CardPage, fields: Sequence[str] = ("all",)) -> CallToolResult:
    """The page's cards, each with what ListedCard always has and the frontmatter `fields` named (all of it
    for "all", as `kb list --json` prints it): a whole frontmatter costs ~200 tokens, ten times its line."""
    if "all" not in fields:
        always = set(ListedCard.model_fields)
        page = page.model_copy(
            update={
                "cards": [
                    ListedCard.model_validate({k: v for k, v in c.to_json().items() if k in always or k in fields})
                    for c in page.cards
                ]
            }
        )
    if not page.cards:
        return result(paged(["no cards match"], page, 0, "cards", "list"), page)
    lines = [f"{c.id} [{brackets(c.kind, c.status, c.standing, c.applies)}] {c.title}" for c in page.cards]
    return budget_page(page, page, "cards", lines, "cards", "list")


def open_gaps(page: OpenGaps) -> CallToolResult:
    if not page.gaps:
        return result(paged(["no open gaps"], page, 0, "open gaps", "gaps"), page)
    lines = [
        f"{g.id} [{brackets(g.priority, g.applies)}] {g.question}" + (f" ({g.note()})" if g.note() else "")
        for g in page.gaps
    ]
    return budget_page(page, page, "gaps", lines, "open gaps", "gaps")


def lint_page(page: LintPage) -> CallToolResult:
    summary = f"{page.errors} error(s), {page.count - page.errors} warning(s)" if page.count else "ok"
    if not page.problems:
        shown = Page(total=page.count, offset=page.offset, truncated=page.truncated)
        return result(paged([summary], shown, 0, "problems", "lint"), page)
    where = Page(total=page.count, offset=page.offset, truncated=page.truncated)
    answer = budget_page(page, where, "problems", [p.line() for p in page.problems], "problems", "lint")
    text = answer.content[0]
    assert isinstance(text, TextContent)
    text.text = summary + "\n" + text.text  # the counts of all problems first: they are not cut
    return answer


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
    if not page.skills:
        return result(paged(["no skills in this knowledge base"], page, 0, "skills", "skills"), page)
    lines = [f"{s.name}: {s.description}" for s in page.skills]
    return budget_page(page, page, "skills", lines, "skills", "skills")


def card_log(page: CardLog) -> CallToolResult:
    """The commits, each with its reason when one was given; a gate's newest runs first of all (its verdicts)."""
    runs = [f"run {r.line()}" for r in page.runs or []]
    if runs and page.runs_total and page.runs_total > len(runs):
        runs.append(f"({len(runs)} of {page.runs_total} runs shown: the newest; all in runs/gates/{page.id}.jsonl)")
    if not page.commits:
        return result(paged([*runs, "no commits"], page, 0, "commits", "log"), page)
    lines = [
        f"{c.sha[:10]} {c.date} {c.author}: {c.subject}{f' — {c.reason}' if c.reason else ''}" for c in page.commits
    ]
    return budget_page(page, page, "commits", lines, "commits", "log", head=runs)


def _by_agent(agent: str | None) -> str:
    """Who among agents made a change, after its author: an agent knows its own writes from a person's."""
    return f" (agent {agent})" if agent else ""


def recent_changes(page: RecentChanges) -> CallToolResult:
    if not page.changes:
        none = f"no changes{f' since {page.since}' if page.since else ''}"
        return result(paged([none], page, 0, "changes", "recent"), page)
    lines = [f"{c.date} {c.author}{_by_agent(c.agent)} {c.op or 'commit'}: {c.what()}" for c in page.changes]
    return budget_page(page, page, "changes", lines, "changes", "recent")


def served_kbs(served: ServedKbs) -> CallToolResult:
    lines = [
        f"{s.name}{' (default)' if s.default else ''}: {s.path} — {s.cards} cards, {s.skills} skills, "
        f"{s.open_gaps} open gaps{'' if s.writable else ', read-only'}"
        for s in served.kbs
    ]
    return result("\n".join(lines), served)


def comparison(compared: Comparison, whole: Comparison) -> CallToolResult:
    """The rows shown (Comparison.only) and, when some are left out, which: their names, to ask for by name;
    its notes in the MCP tools' words."""
    compared = compared.model_copy(update={"notes": [in_mcp_words(n) for n in compared.notes]})
    lines = compared.lines()
    if compared.total is not None:
        shown = {m.metric for m in compared.metrics}
        others = [name for name in dict.fromkeys(m.metric for m in whole.metrics) if name not in shown]
        lines.append(
            f"{len(compared.metrics)} of {compared.total} metrics shown; compare again with metrics=[...] "
            f"naming those wanted, of: {', '.join(others)}"
        )
    return result("\n".join(lines), compared)


def lock_check(check: LockCheck) -> CallToolResult:
    lines = [p.line() for p in check.problems]
    lines.append(f"{check.locked} locked gates match kb.lock" if check.ok else f"{len(check.problems)} mismatch(es)")
    return result("\n".join(lines), check)


# --- writing and curating ------------------------------------------------------------------------


def finding_added(added: FindingAdded) -> CallToolResult:
    added = added.model_copy(update={"notes": [in_mcp_words(n) for n in added.notes]})
    notes = added.related.notes()
    judged = f", {added.judged} judged against the baseline" if added.judged else ""
    text = (
        f"added {added.id} ({added.path}) as {added.status} with {added.evidence} evidence entries{judged}, "
        "awaiting review by a person" + ("; " + "; ".join(notes) if notes else "")
    )
    return result(text, added)


def card_added(added: CardAdded) -> CallToolResult:
    return result(f"added {added.id} ({added.path}) as a draft, awaiting review by a person", added)


def card_edited(edited: CardEdited) -> CallToolResult:
    if not edited.changed:
        return result(f"{edited.id} already says that: nothing committed", edited)
    links = [
        f"{name} {', '.join(ids)}"
        for name, ids in (("related", edited.related), ("contradicts", edited.contradicts))
        if ids
    ]
    return result(f"{edited.id} changed (one commit){'; links: ' + '; '.join(links) if links else ''}", edited)


def skill_packed(packed: SkillPacked) -> CallToolResult:
    return result(
        f"{packed.path}/SKILL.md: {packed.cards} cards ({packed.description}); get {packed.name} to read it", packed
    )


def superseded(old: StatusChange) -> CallToolResult:
    return result(f"{old.id} superseded by {old.superseded_by}; search now ranks {old.id} last", old)


def status_set(changed: StatusChange) -> CallToolResult:
    return result(f"{changed.id} is {'open again' if changed.status == 'open' else changed.status}", changed)


def gate_run(run: GateRunResult) -> CallToolResult:
    return result(run.line(), run)
