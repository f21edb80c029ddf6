"""The part of the facade where a person, or a gate, decides what an agent wrote becomes a fact.

Review (kbtool.curation.review): a person, or a gate, decides what an agent wrote becomes a fact: the queue of
agent-written cards nobody has reviewed, confirm and refute, one commit each."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import date

from kbtool.curation.review import (
    AGENT_SETTABLE,
    SETTABLE_STATUSES,
    check_agent_edit,
    check_agent_status,
    check_agent_supersede,
    is_unreviewed,
    reviewed_card,
)
from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model import markdown
from kbtool.model.errors import BadInput, Changed, Conflict, InvalidCard
from kbtool.model.fields import drop_none
from kbtool.model.records import StoredCard
from kbtool.model.validation import validate_card
from kbtool.model.vocabulary import INACTIVE_STATUSES
from kbtool.store.commits import card_message, checked_reason, commit_message
from kbtool.store.git_identity import author_name


class Review(KnowledgeBaseCore):
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
            current = self.get(ref) if status == "confirmed" else self.own_or_shadow(ref)
            card = reviewed_card(current, status, reviewer or author_name(self.store.repo) or "unknown")
            message = card_message(verb, card, reason, reviewed_by=card.provenance.reviewed_by)
            self.store.write({current.path: self._render(card, current.body, current.path)}, message)
        self._refresh_lexical()
        return StoredCard(card, current.body, current.path)

    def supersede(
        self, old_ref: str, new_ref: str, reason: str | None = None, agent: str | None = None
    ) -> tuple[StoredCard, StoredCard]:
        """OLD is superseded by NEW: links both ways and OLD's status, in one commit (the reason in its
        message). An agent may not supersede a gate, nor a confirmed card by an unconfirmed one."""
        checked_reason(reason)
        with self.store.lock():
            old, new = self.own_or_shadow(old_ref), self._by_link(new_ref)
            new_id = self._link_target(old.id, new_ref, False) if ":" in new_ref else new.id
            if old.id == new_id:
                raise InvalidCard("a card cannot supersede itself")
            if old.card.kind != new.card.kind:
                raise InvalidCard(
                    f"{new.id} is a {new.card.kind} and {old.id} a {old.card.kind}; supersede within one kind"
                )
            if agent is not None:
                check_agent_supersede(old.card, new.card, agent)
            old_links = old.card.links.model_copy(
                update={"superseded_by": [*dict.fromkeys([*old.card.links.superseded_by, new_id])]}
            )
            new_links = new.card.links.model_copy(
                update={"supersedes": [*dict.fromkeys([*new.card.links.supersedes, old.id])]}
            )
            old_card = old.card.model_copy(update={"status": "superseded", "links": old_links})
            new_card = new.card.model_copy(update={"links": new_links})
            # the reason goes in the commit, not the body: a locked gate's body is part of its hash
            old_body = old.body
            subject = f"kb supersede {old.card.kind}: {old.id} -> {new_id}"
            message = commit_message(subject, "supersede", reason, id=old.id, superseded_by=new_id, agent=agent)
            writes = {old.path: self._render(old_card, old_body, old.path)}
            if new_id == new.id:  # a source's card (SOURCE:ID) is never written: only the link names it
                writes[new.path] = self._render(new_card, new.body, new.path)
            self.store.write(writes, message)
        self._refresh_lexical()
        return StoredCard(old_card, markdown.normalize_body(old_body), old.path), StoredCard(
            new_card, new.body, new.path
        )

    def own_or_shadow(self, ref: str) -> StoredCard:
        """The card a verdict is given on: this knowledge base's (ID); for a source's card (SOURCE:ID), this
        knowledge base's copy of it, or, when it has none, one made now and written with the verdict, in its
        commit (kbtool.facade.shadows): the project's word on a team card, the team's card never written."""
        if ":" not in ref:
            return self.get(ref)
        from kbtool.facade.shadows import shadow_data
        from kbtool.store.sources import source_root

        name = ref.partition(":")[0]
        base, rest = self.owner_of(ref)
        theirs = base.get(rest)
        copy = self.copied_originals().get(f"{name}:{theirs.id}")
        if copy is not None:
            return self.get(copy)
        if self.store.card_file(theirs.id) is not None:
            raise Conflict(
                f"{ref}: a card {theirs.id!r} of this knowledge base's own is here, not a copy of {name}'s; "
                "nothing written (rename one of them)"
            )
        if theirs.card.kind == "gate":
            raise BadInput(f"{ref}: a source's gate; copy it (kb import --from-kb) and lock it here to judge it")
        section = next(s for s in self.config.sources if s.name == name)
        place = section.url or str(source_root(self.root, self.store.state_dir, section))
        data = shadow_data(theirs.card.model_dump(mode="python"), name, place, base.store.head() or "")
        path = self.store.relative(self.store.card_path(theirs.card.kind, theirs.id))
        return StoredCard(validate_card(drop_none(data), path), theirs.body, path)

    def _by_link(self, ref: str) -> StoredCard:
        """A card here, or a source's (SOURCE:ID, read there: to judge it, never to write it)."""
        if ":" not in ref:
            return self.get(ref)
        base, rest = self.owner_of(ref)
        return base.get(rest)

    def link(
        self,
        ref: str,
        targets: Iterable[str],
        relation: str = "related",
        remove: bool = False,
        agent: str | None = None,
    ) -> StoredCard:
        """Add (or, with remove, take away) `related` or `contradicts` links from one card to others, one commit
        (none when nothing changes). Targets must exist; each is resolved from a unique prefix too. An agent links
        the unreviewed cards it wrote (a finding that contradicts another says so on itself)."""
        if relation not in AGENT_SETTABLE["links"]:
            raise BadInput(
                f"link: {relation!r} is not a link kb lets you set; one of {', '.join(AGENT_SETTABLE['links'])}"
            )
        wanted = list(targets)
        if not wanted:
            raise BadInput("link: name at least one card to link to")
        with self.store.lock():
            current = self.get(ref)
            self._check_editable(current)
            if agent is not None:
                check_agent_edit(current.card, agent)
            ids = [self._link_target(current.id, target, remove) for target in wanted]
            had = list(getattr(current.card.links, relation))
            now = [i for i in had if i not in ids] if remove else [*dict.fromkeys([*had, *ids])]
            if now == had:
                return current
            card = current.card.model_copy(update={"links": current.card.links.model_copy(update={relation: now})})
            op = "unlink" if remove else "link"
            message = card_message(op, card, None, **{relation: ", ".join(ids)}, agent=agent)
            self.store.write({current.path: self._render(card, current.body, current.path)}, message)
        self._refresh_lexical()
        return StoredCard(card, current.body, current.path)

    def set_status(self, ref: str, status: str, reason: str | None = None, agent: str | None = None) -> StoredCard:
        """Move a card to confirmed, refuted or retired, or reopen a gap ("open": what closed it is
        cleared), in one commit with the reason. A person's confirm and refute are `confirm` and
        `refute`; an agent may only withdraw its own unreviewed cards and reopen gaps
        (kbtool.curation.review.check_agent_status). A locked gate's status is its lock's: supersede it."""
        if status not in SETTABLE_STATUSES:
            raise BadInput(f"status {status!r}: one of {', '.join(SETTABLE_STATUSES)}")
        if status != "confirmed" and not (reason and reason.strip()):
            raise BadInput(f"say why it is {status}: a reason (it goes into the commit, for kb log)")
        checked_reason(reason)
        if agent is None and status in ("confirmed", "refuted"):
            return self.confirm(ref, reason) if status == "confirmed" else self.refute(ref, reason or "")
        with self.store.lock():
            current = self.own_or_shadow(ref)
            self._check_editable(current)
            if agent is not None:
                check_agent_status(current.card, status, agent)
            data = current.card.model_dump(mode="python")
            if status == "open":
                if current.card.kind != "gap":
                    raise InvalidCard(f"{current.id} is a {current.card.kind}; only a gap is reopened")
                data["closed_by"] = []
                data["status"] = "draft" if current.card.status in INACTIVE_STATUSES else current.card.status
            else:
                data["status"] = status
            card = validate_card(drop_none(data), current.path)
            verb = "reopen" if status == "open" else "set-status"
            subject = f"kb {verb} {card.kind}: {card.title} ({card.status})"
            message = commit_message(subject, verb, reason, kind=card.kind, id=card.id, status=card.status, agent=agent)
            self.store.write({current.path: self._render(card, current.body, current.path)}, message)
        self._refresh_lexical()
        return StoredCard(card, current.body, current.path)
