"""The part of the facade that keeps a knowledge base sound: lint, stats, gaps and history.

Lint runs every curation check (kbtool.curation.lint_checks), and with --env warns of cards that may not apply
where the project runs. The open gaps are judged from what closed them, here and in the sources. History and recent
changes say what changed, and a gate's log adds its 10 newest runs. `kb list`'s pages of cards, each with its
standing, are made here too."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING, Any, Unpack

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model.applicability import Environment
from kbtool.model.contracts import (
    CardLog,
    CardPage,
    Change,
    GateRunEntry,
    LintPage,
    LintReport,
    ListedCard,
    OpenGap,
    OpenGaps,
    RecentChanges,
    Stats,
    page_of,
)
from kbtool.model.contracts.base import CardQuery, GapsRequest, Judging, Listing, ListRequest
from kbtool.model.contracts.reading import BULK
from kbtool.model.errors import BadInput, CardNotFound
from kbtool.model.records import CardSummary, Problem
from kbtool.model.vocabulary import INACTIVE_STATUSES
from kbtool.store.git_log import Commit

RUNS_SHOWN = 10  # a gate's newest runs in its log: what a verdict's history needs, not every run since

if TYPE_CHECKING:
    import numpy as np


def _as_standing(
    gap: CardSummary, closed_by: builtins.list[str], closers: dict[str, CardSummary]
) -> CardSummary | None:
    """The gap as the cards that closed it leave it (gap_standing): None when closed; else a copy saying which
    answers await review (`awaiting_review`) or why it is open again (`reopened`). A copy: the summary's data
    is the index's own."""
    from kbtool.curation.gap_standing import gap_standing

    if not closed_by:
        return gap
    standing = gap_standing(closed_by, closers)
    if standing.closed:
        return None
    said = {"awaiting_review": list(standing.awaiting)} if standing.awaiting else {"reopened": standing.reopened}
    return _saying(gap, said)


def _saying(gap: CardSummary, said: dict[str, Any]) -> CardSummary:
    """A copy of gap whose data says why it is open by said alone (awaiting_review or reopened): a source's
    word on its own gap gives way to what closed it here."""
    data = {k: v for k, v in gap.data.items() if k not in ("awaiting_review", "reopened")}
    return CardSummary(gap.id, gap.kind, gap.title, gap.status, gap.path, {**data, **said})


def _from_source(gap: CardSummary, name: str) -> CardSummary:
    """A source's open gap as this knowledge base lists it (SOURCE:ID): the answers it awaits named so too."""
    listed = gap.from_source(name)
    if listed.get("awaiting_review"):
        listed.data["awaiting_review"] = [f"{name}:{ref}" for ref in listed.get("awaiting_review")]
    return listed


def _shown(scope: object) -> str:
    return ", ".join(str(v) for v in scope) if isinstance(scope, list) else str(scope)


class Curation(KnowledgeBaseCore):
    """lint, stats, gaps and history."""

    def lint_report(self, skip: Iterable[str] = (), env: bool = False) -> LintReport:
        """`lint` as its surfaces show it: the problems, how many are errors, and whether it passes;
        with env, also the findings that may not apply where this project runs (warnings)."""
        return LintReport.of(self.lint(skip) + (self.environment_problems() if env else []))

    def lint(self, skip: Iterable[str] = ()) -> builtins.list[Problem]:
        """Every curation check (kbtool.curation.lint_checks) except the classes in skip."""
        from kbtool.curation.lint_checks import lint

        return lint(self, skip)

    def stored_vectors(self, skills: bool = False) -> dict[str, np.ndarray]:
        """The stored vectors of each card's lead (with skills, each skill's description), the index refreshed
        first: what lint compares for duplicates, without loading the model."""
        self._refresh_lexical()
        return self.index.lead_vectors(self.embedder.model_id, skills=skills)

    def lint_page(
        self, skip: Iterable[str] = (), limit: int | None = None, offset: int = 0, env: bool = False
    ) -> LintPage:
        """A page of the lint report (the MCP lint tool, `kb lint --json`): count and errors count every problem."""
        report = self.lint_report(skip, env)
        problems, page = page_of(report.problems, offset, limit)
        return LintPage(
            problems=problems,
            count=report.count,
            errors=report.errors,
            ok=report.ok,
            offset=offset,
            truncated=page["truncated"],
        )

    def listing(self, request: ListRequest | None = None, /, **listing: Unpack[Listing]) -> builtins.list[CardSummary]:
        """The cards a listing finds (a ListRequest, or its fields as keywords): here and (sources) in the
        sources (summaries_everywhere), judged against its environment (applying)."""
        request = ListRequest.of(request, **listing)
        found = self.summaries_everywhere(request) if request.sources else self.summaries(request)
        return self.applying(found, request.applies_for, request.only_applying)

    def card_page(
        self,
        request: ListRequest | None = None,
        /,
        limit: int | None = None,
        offset: int = 0,
        **listing: Unpack[Listing],
    ) -> CardPage:
        """A page of the cards a listing finds, as `kb list --json` prints it and the MCP list tool answers it:
        each card's frontmatter, without the body."""
        shown, page = page_of(self.listing(request, **listing), offset, limit)
        from kbtool.facade.card_standing import standings

        said = standings(self, shown)
        listed = [ListedCard.model_validate({**c.to_dict(), "standing": said.get(c.id)}) for c in shown]
        return CardPage(cards=listed, **page)

    def card_page_json(self, query: CardQuery | None = None) -> str:
        """card_page(...).to_json() as JSON text, every card here, made from the JSON the index caches of each
        (summaries_json): `kb list --json` at 10k cards in milliseconds. The same answer only when no source
        and no environment changes the cards (the caller knows)."""
        query = CardQuery.of(query)
        cards = self._gates_standing(self.summaries_json(query), query)
        # one card a line, and a newline inside a card's JSON is escaped: each line that opens an object is a card
        total = cards.count("\n{")
        return f'{{"cards": {cards},\n"total": {total}, "offset": 0, "truncated": false}}'

    def _gates_standing(self, cards: str, query: CardQuery) -> str:
        """The cached JSON with each gate's line given its standing (locked or not, as card_page says): the few
        gates' lines rewritten, the thousands of other cards' lines left as cached."""
        if query.kind not in (None, "gate"):
            return cards
        from kbtool.facade.card_standing import standings

        gates = self.summaries(query, kind="gate")
        said = standings(self, gates)
        for gate in gates:
            cached = json.dumps(gate.to_dict(), ensure_ascii=False)  # the line as the index caches it
            standing = json.dumps({**gate.to_dict(), "standing": said[gate.id]}, ensure_ascii=False)
            cards = cards.replace(f"\n{cached}", f"\n{standing}", 1)
        return cards

    def open_gaps(
        self,
        request: GapsRequest | None = None,
        /,
        limit: int | None = None,
        offset: int = 0,
        **judging: Unpack[Judging],
    ) -> OpenGaps:
        """A page of the open gaps here and (sources) in the sources (gaps_everywhere), as `kb gaps --json`
        prints it and the MCP gaps tool answers it: each gap's frontmatter, its question and priority always set.
        request: a GapsRequest, or its fields as keywords (applies_for=..., only_applying=..., sources=...)."""
        request = GapsRequest.of(request, **judging)
        if request.sources:
            found = self.gaps_everywhere(request.applies_for, request.only_applying)
        else:
            found = self.applying(self.gaps(), request.applies_for, request.only_applying)
        shown, page = page_of(found, offset, limit)
        gaps = [
            OpenGap.model_validate(
                {
                    **g.to_dict(),
                    "question": g.get("question", default=g.title),
                    "priority": g.get("priority", default="medium"),
                }
            )
            for g in shown
        ]
        return OpenGaps(gaps=gaps, **page)

    def stats(self) -> Stats:
        """Counts by kind, status and project, open gaps, stale findings, locked gates: from the index."""
        from collections import Counter

        cards = self.summaries()
        limit, today = self.config.curation.max_finding_age_days, date.today()
        stale = [
            c.id
            for c in cards
            if c.kind == "finding"
            and c.status in ("confirmed", "tentative")
            and c.get("provenance", "created")
            and (today - date.fromisoformat(c.get("provenance", "created"))).days > limit
        ]
        return Stats(
            cards=len(cards),
            by_kind=dict(Counter(c.kind for c in cards)),
            by_status=dict(Counter(c.status for c in cards)),
            by_project=dict(Counter(c.get("provenance", "project") or "(none)" for c in cards)),
            open_gaps=len(self.gaps()),
            stale_findings=stale,
            locked_gates=len(self.gate_locks()),
        )

    def gaps(self) -> builtins.list[CardSummary]:
        """Open gaps, high priority first, oldest first: those nothing closed; those answered by findings nobody
        has given a verdict yet, each with their ids in its data's `awaiting_review`; and those closed only by
        cards that no longer stand (refuted, superseded, retired or deleted), each with why in its data's
        `reopened` (kbtool/curation/gap_standing.py). A gap itself retired or superseded is not open."""
        order = {"high": 0, "medium": 1, "low": 2}
        candidates = [g for g in self.summaries(kind="gap") if g.status not in INACTIVE_STATUSES]
        # what closed them, from the same index in one pass: no card file read
        closers = self.index.by_ids({ref for g in candidates for ref in g.get("closed_by") or []})
        open_gaps = [g for g in (_as_standing(g, g.get("closed_by") or [], closers) for g in candidates) if g]
        # created is an ISO date string in the index: it sorts as the date does
        return sorted(
            open_gaps,
            key=lambda g: (order[g.get("priority", default="medium")], g.get("provenance", "created") or "", g.id),
        )

    def _closed_here(self, gap: CardSummary, closing: dict[str, builtins.list[str]]) -> CardSummary | None:
        """A source's open gap (SOURCE:ID) as this project sees it: None when a card here that closes it (links.closes
        names it) has a verdict; the cards here awaiting one named with the source's own in `awaiting_review`;
        with why in `reopened` when all that closed it here fell."""
        closers = closing.get(gap.id, [])
        if not closers:
            return gap
        here = _as_standing(gap, closers, self.index.by_ids(closers))
        if here is None or not gap.get("awaiting_review"):
            return here
        return _saying(here, {"awaiting_review": [*(here.get("awaiting_review") or []), *gap.get("awaiting_review")]})

    def source_card_ids(self) -> dict[str, set[str] | None]:
        """Each kb.toml source's card ids, None for a source that is not on this machine: what a SOURCE:ID
        link is checked against."""
        held: dict[str, set[str] | None] = {source.name: None for source in self.config.sources}
        for name, base in self.source_bases():
            held[name] = {s.id for s in base.summaries()}
        return held

    def gaps_everywhere(
        self, applies_for: Environment = None, only_applying: bool = False
    ) -> builtins.list[CardSummary]:
        """The open gaps here and in every source, high priority first (those scoped elsewhere than the
        environment after all that apply)."""
        order = {"high": 0, "medium": 1, "low": 2}
        found = self.gaps()
        copied = self.copied_originals()  # a gap copied here is open or closed as its copy says
        closing: dict[str, builtins.list[str]] = {}  # SOURCE:ID -> the cards here whose links.closes name it
        for card in self.summaries() if self.config.sources else []:
            for target in card.get("links", "closes") or []:
                closing.setdefault(target, []).append(card.id)
        for name, base in self.source_bases():
            theirs = (_from_source(g, name) for g in base.gaps() if f"{name}:{g.id}" not in copied)
            found += [g for g in (self._closed_here(g, closing) for g in theirs) if g is not None]
            self.relay_notices(f"source {name}", base)
        found.sort(key=lambda g: order[g.get("priority", default="medium")])
        return self.applying(found, applies_for, only_applying)

    def history(self, ref: str) -> builtins.list[Commit]:
        return self.store.history(self.store.relative(self.resolve_id(ref)))

    def card_log(self, ref: str, limit: int | None = None, offset: int = 0) -> CardLog:
        """A card's history, newest first, as `kb log --json` and the MCP log tool answer it: each commit with
        what kb did (its kb-op trailer) and its whole message; a page of it (limit, offset)."""
        from kbtool.curation.gate_runs import recorded_runs
        from kbtool.store.history import commit_entry, commit_reason

        try:
            found = self.get(ref)
        except CardNotFound:
            if any(skill.name == ref for skill in self.skills()):
                why = "a skill; log takes a card id (a skill's history is in git under skills/)"
                raise BadInput(f"{ref}: {why}") from None
            raise
        entries = [
            commit_entry(c).model_copy(update={"message": c.message, "reason": commit_reason(c.message)})
            for c in self.history(ref)
        ]
        commits, page = page_of(entries, offset, limit)
        if found.card.kind != "gate":
            return CardLog(id=found.id, commits=commits, **page)
        runs = [GateRunEntry.from_record(r) for r in reversed(recorded_runs(self.root, found.id))]
        return CardLog(id=found.id, commits=commits, runs=runs[:RUNS_SHOWN], runs_total=len(runs), **page)

    def recent_changes(
        self,
        since: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        bulk: int | None = BULK,
    ) -> RecentChanges:
        """`recent` as `kb recent --json` and the MCP recent tool answer it: a page of the changes, newest first;
        a commit that changed more than `bulk` cards (an import) counts them by change and kind instead of listing
        each (bulk=None: every card listed)."""
        changes, page = page_of(self.recent(since, kind), offset, limit)
        if bulk is not None:
            changes = [change.summarised(bulk) for change in changes]
        return RecentChanges(since=since, changes=changes, **page)

    def history_with_diffs(self, ref: str, limit: int = 10) -> builtins.list[tuple[Commit, str]]:
        """The card's newest commits with what each changed in its file (the web view's history)."""
        return self.store.history_with_diffs(self.store.relative(self.resolve_id(ref)), limit)

    def recent(
        self, since: str | None = None, kind: str | None = None, limit: int | None = None
    ) -> builtins.list[Change]:
        """What changed, newest first: each commit with the cards and skills it added, modified or
        deleted ("what did the last agent learn?"). since: a date (2026-12-01), an age (7d, 12h, 2w)
        or a commit (everything after it); kind: only changes to cards of this kind (or skills);
        limit: the newest that many commits."""
        from kbtool.store.history import recent_changes

        return recent_changes(self.store, since, kind, {s.id: s.title for s in self.summaries()}, limit)

    def environment_problems(self) -> builtins.list[Problem]:
        """`kb lint --env`: a warning for each active card scoped elsewhere than this project is for (kb.toml
        [environment] and this machine's GPU), and each finding measured with other engine, library or driver
        releases; a note when there is no scope to judge by."""
        from kbtool.evidence.environment import reasons
        from kbtool.model.applicability import environment_of

        target = self.project_environment()
        environment = environment_of(target)
        if not environment:
            self.note(
                "--env: nothing to judge the cards' scope by: kb.toml has no [environment] (hardware, model, "
                "precision, ...) and this machine reports no GPU; findings are checked for package versions only"
            )
        out = []
        active = [s for s in self.summaries() if s.status not in INACTIVE_STATUSES]
        judged = {s.id: how for s, how in self.judge(active, lambda s: s.get("applies_to"), environment, False)}
        for summary in active:
            why = []
            if environment and judged[summary.id] == "other":
                scope = summary.get("applies_to") or {}
                elsewhere = [f"{k}: {_shown(scope.get(k))}" for k in environment if scope.get(k)]
                here = ", ".join(f"{k}={v}" for k, v in environment.items())
                why.append(f"scoped to {'; '.join(elsewhere)}, this project is for {here}")
            why += [w for w in reasons(summary.to_dict(), target) if not w.startswith("scoped to")]
            if why:
                message = f"may not apply here: {'; '.join(why)}"
                out.append(Problem(summary.path, "env", message, summary.id, severity="warning"))
        return out
