"""Review (kbtool.loop.review): a person, or a gate, decides what an agent wrote becomes a fact: the queue of
agent-written cards nobody has reviewed, confirm and refute, one commit each."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date

from .kb_core import _drop_none, checked_reason
from .kb_imports import Importing
from .loop.review import is_unreviewed
from .model.cards import INACTIVE_STATUSES, CardBase
from .model.errors import BadInput, Changed
from .model.records import StoredCard
from .model.validation import validate_card
from .store.repository import author_name


class Reviewing(Importing):
    """The review queue, confirm and refute."""

    def review_queue(self) -> builtins.list[StoredCard]:
        """Agent-written cards nobody has confirmed or refuted yet, oldest first."""
        # the index narrows it to agents' unreviewed cards; only those files are read
        named = [
            s.id
            for s in self.summaries()
            if s.get("provenance", "agent")
            and not s.get("provenance", "reviewed_by")
            and s.status not in INACTIVE_STATUSES
        ]
        waiting = [c for c in (self.get(ref) for ref in named) if is_unreviewed(c.card)]
        return sorted(waiting, key=lambda c: (c.card.provenance.created or date.min, c.id))

    @contextmanager
    def unchanged_since(self, ref: str, version: str) -> Iterator[StoredCard]:
        """For a change a person made looking at a card (the web view's edit form, confirm, refute): the write
        lock held, and the card as it stands. Changed, and nothing written, when the card is no longer what
        they saw at `version` (StoredCard.version): an edit or a review since would be overwritten unseen."""
        with self.store.lock():  # the change itself takes it again: no writer gets in between
            current = self.get(ref)
            if current.version != version:
                raise Changed(
                    f"{current.id} changed since this page showed it (edited, confirmed or refuted since); nothing "
                    "was saved: reload it, look again, and redo the change"
                )
            yield current

    def confirm(
        self, ref: str, reason: str | None = None, reviewer: str | None = None, agent: str | None = None
    ) -> StoredCard:
        """A person vouches for a card: status confirmed, their name and the date recorded, one commit."""
        return self._review(ref, "confirmed", reason, reviewer, agent)

    def refute(self, ref: str, reason: str, reviewer: str | None = None, agent: str | None = None) -> StoredCard:
        """A person rejects a card: status refuted (search demotes it, packs leave it out), one commit with the
        reason."""
        if not reason or not reason.strip():
            raise BadInput("say why it is refuted: --reason TEXT (it goes into the commit, for kb log)")
        return self._review(ref, "refuted", reason, reviewer, agent)

    def _review(self, ref: str, status: str, reason: str | None, reviewer: str | None, agent: str | None) -> StoredCard:
        if agent is not None:
            raise BadInput(f"{agent} is an agent: a person reviews cards (an agent may not confirm or refute them)")
        checked_reason(reason)
        verb = "confirm" if status == "confirmed" else "refute"
        with self.store.lock():
            current = self.get(ref)
            card = self._reviewed(current, status, reviewer or author_name(self.store) or "unknown")
            message = (
                f"kb {verb} {card.kind}: {card.title}\n\n{reason.strip() + chr(10) + chr(10) if reason else ''}"
                f"kb-op: {verb}\nkb-kind: {card.kind}\nkb-id: {card.id}\n"
                f"kb-reviewed-by: {card.provenance.reviewed_by}\n"
            )
            self.store.write({current.path: self._render(card, current.body, current.path)}, message)
        self._refresh_lexical()
        return StoredCard(card, current.body, current.path)

    @staticmethod
    def _reviewed(stored: StoredCard, status: str, reviewer: str) -> CardBase:
        """The card with the verdict applied, validated (a finding is confirmed only with evidence)."""
        provenance = stored.card.provenance.model_dump(mode="python")
        data = {
            **stored.card.model_dump(mode="python"),
            "status": status,
            "provenance": {**provenance, "reviewed_by": reviewer, "reviewed": date.today()},
        }
        return validate_card(_drop_none(data), stored.path)
