"""The contracts of reads: pages of cards and gaps, related cards, skills, logs and stats.

Every list-shaped answer is a Page (how many match, where it starts, whether more follow). Beside the pages:
a card's neighbourhood (Related), a card's log and recent changes (commits and what they changed), whole
cards and skills as documents (`kb show`, the MCP get tool, cut to the fields asked for the same way), the
knowledge bases a `kb serve` serves, and what `kb stats` counts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
)

from kbtool.model.contracts.base import Payload, SearchKind, StatusName, T
from kbtool.model.contracts.search import STANDING, AppliesMark, CardBrief

# --- reading -----------------------------------------------------------------------------------


class Page(Payload):
    """What every list-shaped answer (an MCP tool's, the CLI's --json) says of its page: how many there are,
    where this page starts, and whether more follow (call again with offset = offset + the items shown)."""

    total: int = Field(description="how many match in all")
    offset: int = Field(description="how many were skipped before this page")
    truncated: bool = Field(description="true when more match than this page shows")


def page_of(items: Sequence[T], offset: int = 0, limit: int | None = None) -> tuple[list[T], dict[str, Any]]:
    """The items of one page and its Page fields (total, offset, truncated); no limit: all from offset."""
    shown = list(items[offset:] if limit is None else items[offset : offset + limit])
    return shown, {"total": len(items), "offset": offset, "truncated": offset + len(shown) < len(items)}


class ListedCard(CardBrief):
    """A card as `list` shows it: its frontmatter (every field its kind has, tags, applies_to, links,
    provenance, ...) without the body, its file, and how it applies to the environment asked for."""

    model_config = ConfigDict(extra="allow", frozen=True)

    path: str
    kb: str | None = Field(None, exclude_if=lambda value: value is None, description="its source, if not this one")
    applies: AppliesMark = None
    standing: str | None = Field(None, exclude_if=lambda value: value is None, description=STANDING)


class CardPage(Page):
    cards: list[ListedCard]


def gap_note(data: dict[str, Any]) -> str | None:
    """Why a gap that findings answered is still listed, in the few words every surface shows after it: the
    answers awaiting a verdict, or why it is open again; None for a gap nothing answered."""
    if data.get("awaiting_review"):
        return f"answered by {', '.join(data['awaiting_review'])}, awaiting review"
    return f"reopened: {data['reopened']}" if data.get("reopened") else None


class OpenGap(Payload):
    """An open gap as `gaps` shows it: its frontmatter without the body (tags, applies_to, links, closed_by,
    provenance, ...), its question and priority always set, and, when findings answered it, which of them
    await review or why it is open again. closed_by is the record of what answered it, not a verdict: a gap
    closes only when one of those findings is confirmed (kbtool/curation/gap_standing.py)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    kind: Literal["gap"] = "gap"
    title: str
    path: str
    question: str
    priority: Literal["high", "medium", "low"]
    status: StatusName
    kb: str | None = Field(None, exclude_if=lambda value: value is None, description="its source, if not this one")
    reopened: str | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="why a gap findings once closed is open again: each since refuted, superseded, retired or deleted",
    )
    awaiting_review: list[str] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="the findings that answered it and await a verdict (kb confirm, or a locked gate's pass)",
    )
    applies: AppliesMark = None

    def note(self) -> str | None:
        return gap_note({"awaiting_review": self.awaiting_review, "reopened": self.reopened})


class OpenGaps(Page):
    gaps: list[OpenGap]


class Link(Payload):
    """One link of a card's neighbourhood; a target that does not exist is named and marked missing."""

    rel: str
    id: str
    kind: SearchKind | None = Field(None, exclude_if=lambda value: value is None)
    title: str | None = Field(None, exclude_if=lambda value: value is None)
    status: StatusName | None = Field(None, exclude_if=lambda value: value is None)
    missing: bool | None = Field(None, exclude_if=lambda value: value is None)


class Similar(CardBrief):
    similarity: float = Field(description="cosine similarity of the best-matching chunk")


class Neighbour(CardBrief):
    """A card more than one link away from the card asked about."""

    depth: int = Field(description="how many links away")
    via: str = Field(description="the card one link nearer, through which it was reached")
    rel: str = Field(description="the link between them: rel -> (from via) or rel <- (to via)")


class Related(Payload):
    id: str
    title: str
    links_out: list[Link]
    links_in: list[Link]
    similar: list[Similar]
    beyond: list[Neighbour] = Field([], description="cards two or more links away, when asked for (depth)")


class SkillBrief(Payload):
    """A skill as `skills` lists it: its frontmatter (license, compatibility, metadata, ...), its id and
    kind as a search hit names them, its folder and its files, without the body."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    description: str
    path: str


class SkillList(Page):
    skills: list[SkillBrief]


# --- history -----------------------------------------------------------------------------------


class CommitEntry(Payload):
    """One commit of the knowledge base: every kb write is one, its trailers say what it did."""

    sha: str
    date: str = Field(description="the author date, ISO 8601")
    author: str
    subject: str
    op: str | None = Field(None, description="what kb did (the kb-op trailer): add, edit, supersede, confirm, ...")
    agent: str | None = Field(
        None, exclude_if=lambda value: value is None, description="the agent that made it (the kb-agent trailer)"
    )
    message: str | None = Field(
        None, exclude_if=lambda value: value is None, description="the whole commit message (a card's log)"
    )
    reason: str | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="why, as given to supersede, refute, retire or reopen: the message's body (a card's log)",
    )


class ChangedCard(Payload):
    id: str
    kind: SearchKind
    change: Literal["added", "modified", "deleted"]
    title: str | None = Field(None, description="as it stands now; none for a deleted card")


BULK = 10  # a commit that changed more cards than this (an import) is counted by kind, not listed card by card


class Change(CommitEntry):
    """A commit and the cards and skills it changed; a bulk one (over BULK cards, an import) counted instead."""

    cards: list[ChangedCard]
    counted: dict[str, int] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="a bulk commit's cards counted by change and kind ('added reference': 760) instead of listed",
    )

    def summarised(self, bulk: int = BULK) -> Change:
        """This change, its cards counted by change and kind when there are more than `bulk` of them."""
        if len(self.cards) <= bulk:
            return self
        counted: dict[str, int] = {}
        for card in self.cards:
            key = f"{card.change} {card.kind}"
            counted[key] = counted.get(key, 0) + 1
        return self.model_copy(update={"cards": [], "counted": counted})

    def what(self, titles: bool = True) -> str:
        """'added a1 [finding] Title, modified b2 [gap]' (the titles when asked) or, for a bulk commit,
        'added 760 reference'."""
        if self.counted:
            return ", ".join(f"{key.split(' ')[0]} {n} {key.split(' ')[1]}" for key, n in self.counted.items())
        return ", ".join(
            f"{card.change} {card.id} [{card.kind}]" + (f" {card.title}" if titles and card.title else "")
            for card in self.cards
        )


class GateRunEntry(Payload):
    """One recorded run of a gate (runs/gates/ID.jsonl): when, the verdict, the value against the threshold,
    why, and the commit of the project it judged."""

    time: str | None = Field(description="when it ran, UTC")
    passed: bool
    value: float | None
    op: str | None = None
    threshold: float | None = None
    unit: str | None = None
    detail: str = Field("", description="why it failed, or what it read")
    commit: str | None = Field(None, description="the judged project's commit")

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> GateRunEntry:
        repo = record.get("repo")
        commit = repo.get("commit") if isinstance(repo, dict) else None
        fields = ("time", "passed", "value", "op", "threshold", "unit", "detail")
        known = {k: record[k] for k in fields if record.get(k) is not None}
        return cls(**{"time": None, "passed": False, "value": None, **known, "commit": commit})

    def line(self) -> str:
        shown = "no value" if self.value is None else f"{self.value:g}"
        against = f" {self.op} {self.threshold:g}" if self.op and self.threshold is not None else ""
        at = f" at {self.commit[:10]}" if self.commit else ""
        verdict = "pass" if self.passed else "fail"
        return f"{self.time} {verdict}: {shown}{against}{f' {self.unit}' if self.unit else ''}{at} ({self.detail})"


class CardLog(Page):
    id: str
    commits: list[CommitEntry]
    runs: list[GateRunEntry] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="a gate's recorded runs, newest first (at most 10; runs_total counts them all)",
    )
    runs_total: int | None = Field(None, exclude_if=lambda value: value is None)


class RecentChanges(Page):
    since: str | None = Field(description="as asked: a date, an age (7d) or a commit; none for all history")
    changes: list[Change]


class Document(Payload):
    """A whole card or skill as JSON: a card's frontmatter fields (title, status, its kind's fields,
    links, provenance, ...) or a skill's (name, description, files, ...), beside these four."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    kind: SearchKind
    path: str = Field(description="its file, relative to the knowledge base")
    body: str | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="the markdown after the frontmatter (MCP get: in the text, here only when asked in fields)",
    )

    def lock_line(self) -> str:
        """A gate's line saying whether it is locked (its `locked`, set by KnowledgeBase.documents); '' for
        any other card: whether a gate is the goal is in no field of its file."""
        locked = (self.model_extra or {}).get("locked")
        if locked is None:
            return ""
        if locked:
            return "\nlocked: yes (kb.lock holds its hash: it is the goal, and a change to it is named)\n"
        return f"\nlocked: no (a person's `kb gate lock {self.id}` makes it the goal)\n"


class Documents(Payload):
    """Whole cards or skills, in the order asked for, and the ids that match nothing."""

    cards: list[Document]
    missing: list[str]
    next_offset: int | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="a skill's text goes on past this page: get it again with this offset for the next",
    )


# --- what of a document to show: `kb show` and the MCP get tool cut it the same way ------------------
# (a finding's evidence to its headline: kbtool.evidence.headline)


def only_fields(document: Document, fields: Sequence[str]) -> tuple[Document, str]:
    """The document with only the fields asked for (and id, kind, path; body when asked), and its
    text: a line a field, and one naming the fields it does not have (not an error: of several documents
    asked for at once, a skill has no evidence and a finding no description)."""
    data = document.to_json()
    kept = {key: data[key] for key in fields if key in data and key not in ("id", "kind", "path", "body")}
    body = data.get("body", "") if "body" in fields else None
    missing = [key for key in fields if key not in data]
    lines = [f"{data['id']} [{data['kind']}]", *(f"{key}: {json.dumps(value)}" for key, value in kept.items())]
    if missing:
        lines.append(f"(no field {', '.join(missing)})")
    text = "\n".join(lines) + (f"\n\n{body}" if body else "")
    trimmed = Document.model_validate(
        {"id": data["id"], "kind": data["kind"], "path": data["path"], "body": body, **kept}
    )
    return trimmed, text


class ServedKb(Payload):
    """One of the knowledge bases a `kb serve` serves, as its `kbs` tool lists them."""

    name: str = Field(description="what a tool's `kb` argument calls it")
    title: str = Field(description="its kb.toml name")
    path: str
    cards: int
    skills: int
    open_gaps: int
    default: bool = Field(description="the one a tool uses when no `kb` is given")
    writable: bool = Field(description="whether this server may write to it (not --read-only, not a read-only mount)")


class ServedKbs(Payload):
    kbs: list[ServedKb]


class Stats(Payload):
    """What `kb stats` counts, from the index."""

    cards: int
    by_kind: dict[str, int]
    by_status: dict[str, int]
    by_project: dict[str, int] = Field(description='cards per provenance.project; "(none)" for those without')
    open_gaps: int
    stale_findings: list[str] = Field(description="ids of findings older than curation.max_finding_age_days")
    locked_gates: int
