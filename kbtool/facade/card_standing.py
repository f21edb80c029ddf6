"""How a card stands here when its own status does not say it: list and search show it.

A few words go beside the status (issue 44) for a gap that findings closed (its status stays what it was written
with: closing is judged at read time, kbtool.curation.gap_standing), or whose answer awaits review, or that is open
again; a source's gap a finding of this project closed for it alone (`--closes team:GAP`); a copy of a team card
whose original was retired (or refuted, superseded) there since; and a gate, saying whether it is locked (kb.lock)
where it lives."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kbtool.model.contracts.reading import gap_note
from kbtool.model.records import CardSummary
from kbtool.model.vocabulary import INACTIVE_STATUSES

if TYPE_CHECKING:
    from kbtool.facade.core import KnowledgeBaseCore


def standings(kb: KnowledgeBaseCore, cards: Iterable[CardSummary], waiting: bool = True) -> dict[str, str]:
    """id -> a few words on how each card stands here, for those whose status alone misleads: "closed", "closed
    here", "closed in SOURCE", "answered by F, awaiting review", "reopened: ...", "retired in SOURCE". waiting:
    False judges copies only by the sources read so far (a search's, which says which it left out)."""
    cards = list(cards)
    if not cards:
        return {}
    copied = {copy: original for original, copy in kb.copied_originals(waiting).items()}
    closing: dict[str, list[str]] | None = None
    found: dict[str, str] = {}
    locked: dict[str, set[str]] = {}  # a KB's name ("" here) -> its locked gates, read once per KB listed
    for card in cards:
        said = None
        if card.kind == "gate":
            said = _gate(kb, card, locked)
        elif card.kind == "gap" and card.status not in INACTIVE_STATUSES:
            if ":" in card.id and closing is None:  # SOURCE:ID -> the cards here whose links.closes name it
                closing = {}
                for own in kb.summaries():
                    for target in own.get("links", "closes") or []:
                        closing.setdefault(target, []).append(own.id)
            said = _gap(kb, card, closing or {})
        if said is None and card.id in copied:
            said = _original(kb, card, copied[card.id])
        if said:
            found[card.id] = said
    return found


def _gate(kb: KnowledgeBaseCore, gate: CardSummary, locked: dict[str, set[str]]) -> str:
    """Whether kb.lock holds the gate where it lives (a gate it dropped from kb.lock is still locked)."""
    owner, rest = kb.owner_of(gate.id)
    name = gate.id.partition(":")[0] if owner is not kb else ""
    if name not in locked:
        locked[name] = owner.locked_gates()
    where = f" in {name}" if name else ""
    return f"locked{where}" if rest in locked[name] else f"not locked{where}"


def _gap(kb: KnowledgeBaseCore, gap: CardSummary, closing: dict[str, list[str]]) -> str | None:
    from kbtool.curation.gap_standing import gap_standing

    owner, rest = kb.owner_of(gap.id)
    there = owner.index.by_id(rest)
    closed_by = list((there.get("closed_by") if there else None) or [])
    own = gap_standing(closed_by, owner.index.by_ids(closed_by)) if closed_by else None
    name = gap.id.partition(":")[0] if owner is not kb else None
    if own is not None and own.closed:
        return f"closed in {name}" if name else "closed"
    here = closing.get(gap.id, []) if name else []
    if here:
        standing = gap_standing(here, kb.index.by_ids(here))
        if standing.closed:
            return "closed here"
        if standing.awaiting:
            theirs = [f"{name}:{ref}" for ref in (own.awaiting if own else ())]
            return gap_note({"awaiting_review": [*standing.awaiting, *theirs]})
    if own is None:
        return None
    awaiting = [f"{name}:{ref}" if name else ref for ref in own.awaiting]
    return gap_note({"awaiting_review": awaiting, "reopened": own.reopened})


def _original(kb: KnowledgeBaseCore, copy: CardSummary, original: str) -> str | None:
    """A copy whose original (SOURCE:ID) is no longer standing there while the copy is: its status there."""
    owner, rest = kb.owner_of(original)
    there = owner.index.by_id(rest)
    if there is None or there.status not in INACTIVE_STATUSES or copy.status in INACTIVE_STATUSES:
        return None
    return f"{there.status} in {original.partition(':')[0]}"


def hit_standings(kb: KnowledgeBaseCore, ids: Iterable[str]) -> dict[str, str]:
    """standings() of the cards with these ids (a search's hits: ID here, SOURCE:ID a source's), never waiting for
    a source still being read (its cards are not among the hits)."""
    cards = []
    for ref in ids:
        owner, rest = kb.owner_of(ref)
        found = owner.index.by_id(rest)
        if found is not None:
            cards.append(found if owner is kb else found.from_source(ref.partition(":")[0]))
    return standings(kb, cards, waiting=False)
