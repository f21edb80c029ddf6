"""Cards in bulk: `kb import` of documents (kbtool.store.importer), each import one commit (JSON Lines out and
back in: kbtool.facade.exchange)."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model import markdown
from kbtool.model.contracts import ImportSummary
from kbtool.model.errors import BadInput, Conflict
from kbtool.model.fields import drop_none, merge
from kbtool.model.validation import validate_card
from kbtool.store.commits import commit_message
from kbtool.store.git_identity import author_name
from kbtool.store.repository import CARDS_DIR, SKILLS_DIR


class Imports(KnowledgeBaseCore):
    """Documents and card exports in, cards out."""

    def import_path(self, path: str | os.PathLike[str]) -> ImportSummary:
        """Import documents (see kbtool.store.importer) in one commit; re-importing updates in place.

        Cards an earlier import of the same collection made, whose source section is gone,
        are retired rather than deleted, so links to them stay valid.
        """
        from kbtool.store.importer import plan_import

        source = Path(path).expanduser().resolve()
        own = [self.root / CARDS_DIR, self.root / SKILLS_DIR]
        if any(source == d or source.is_relative_to(d) or d.is_relative_to(source) for d in own):
            raise BadInput(
                f"{path}: holds this knowledge base's own cards or skills; kb import reads documents, and "
                "importing the cards would copy every one as a reference"
            )
        collection, planned = plan_import(source, self.config.limits.import_bytes)
        today, author = date.today(), author_name(self.store.repo)
        with self.store.lock():
            existing = {s.id: s for s in self.cards()}
            writes: dict[str, str] = {}
            added = updated = unchanged = retired = 0
            for plan in planned:
                data = merge(plan.data, {})
                old = existing.get(plan.id)
                created = old.card.provenance.created if old and old.card.provenance.created else today
                data["provenance"] = {**data.get("provenance", {}), "created": created, "author": author}
                if old and old.card.provenance.author:
                    data["provenance"]["author"] = old.card.provenance.author
                origin = f"import {plan.data.get('source', {}).get('path', plan.id)}"
                card = validate_card(drop_none(data), origin)
                text = self._render(card, plan.body, origin)
                rel = self.store.relative(self.store.card_path(card.kind, card.id))
                if old and old.path != rel:
                    raise Conflict(f"import would write {rel} but card {card.id!r} already exists as {old.path}")
                if old and markdown.render(old.card, old.body) == text:
                    unchanged += 1
                    continue
                writes[rel] = text
                added, updated = (added, updated + 1) if old else (added + 1, updated)
            planned_ids = {p.id for p in planned}
            for stored in existing.values():
                card = stored.card
                if (
                    stored.id not in planned_ids
                    and card.provenance.project == collection
                    and "imported" in card.tags
                    and card.source is not None
                    and card.status != "retired"
                ):
                    writes[stored.path] = markdown.render(card.model_copy(update={"status": "retired"}), stored.body)
                    retired += 1
            commit = None
            if writes:
                subject = f"kb import {collection}: {added} added, {updated} updated, {retired} retired"
                message = commit_message(subject, "import", collection=collection)
                commit = self.store.write(writes, message)
        return ImportSummary(
            collection=collection, added=added, updated=updated, unchanged=unchanged, retired=retired, commit=commit
        )
