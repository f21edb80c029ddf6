"""Whether a gap is answered: judged at read time from the cards that closed it, never from the gap alone.

A finding written with `--closes GAP` names itself in the gap's closed_by in the same commit: that is the
record of what answered it, and it is never rewritten by a verdict. Whether the gap counts as closed is
decided here, each time a gap is listed, from those cards as they stand now:

- closed: one of them carries a verdict, confirmed by a person (a person's own confirmed finding is their
  verdict: they wrote it and vouch for it) or, for an agent's card, reviewed by a person or by a locked gate
  that passed (provenance.reviewed_by). An agent's claim is a lead, and a lead must not close a team's
  question for every later session.
- open, answered and awaiting review: one of them still stands but nobody has given it a verdict (an agent's
  tentative finding, a person's draft or tentative one). The gap says which, so a person can judge them.
- open again: every one of them fell (refuted, superseded, retired, deleted, or a finding that measured
  nothing). A refuted finding answers nothing.

So confirming a finding closes its gap without another write, and refuting it reopens the gap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kbtool.model.records import CardSummary
from kbtool.model.vocabulary import INACTIVE_STATUSES, words


@dataclass(frozen=True)
class GapStanding:
    """How the cards in a gap's closed_by leave it: closed, or open with the answers awaiting a verdict
    (awaiting) or, when none stands, why it is open again (reopened)."""

    closed: bool
    awaiting: tuple[str, ...] = ()
    reopened: str | None = None


def has_verdict(card: CardSummary) -> bool:
    """Confirmed, and vouched for: written by a person, or an agent's card a person or a locked gate reviewed."""
    if card.status != "confirmed":
        return False
    return not card.get("provenance", "agent") or bool(card.get("provenance", "reviewed_by"))


def gap_standing(closed_by: list[str], closers: Mapping[str, CardSummary]) -> GapStanding:
    """The standing of a gap that closed_by names cards for. closers: those cards by id, as the index holds
    them; one missing was deleted. An answer awaiting review is said rather than earlier answers that fell:
    it was measured anew, and the review queue holds it."""
    awaiting, fell = [], []
    for ref in closed_by:
        closer = closers.get(ref)
        if closer is None:
            fell.append(f"{ref} (no such card)")
        elif closer.kind == "finding" and not closer.get("evidence"):
            fell.append(f"finding {ref}, which measured nothing")
        elif closer.status in INACTIVE_STATUSES:
            successors = (closer.get("links", "superseded_by") or []) if closer.status == "superseded" else []
            by = f" (by {', '.join(successors)})" if successors else ""  # where the answer may be now
            fell.append(f"{closer.status} {closer.kind} {ref}{by}")
        elif has_verdict(closer):
            return GapStanding(closed=True)
        else:
            awaiting.append(ref)
    if awaiting:
        return GapStanding(closed=False, awaiting=tuple(awaiting))
    return GapStanding(closed=False, reopened=f"closed only by {words(tuple(fell), 'and')}" if fell else None)
