"""Cards in bulk: `kb import` of documents (kbtool.store.importer) and cards as JSON Lines, out and back in
(kbtool.store.exchange), each import one commit."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from datetime import date
from pathlib import Path

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model import markdown
from kbtool.model.applicability import Environment, nothing_to_judge
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

    def export_cards(
        self,
        fmt: str = "jsonl",
        where: Iterable[str] = (),
        applies_for: Environment = None,
        only_applying: bool = False,
    ) -> Iterator[str]:
        """Every card (matching where) as a line of JSON (kbtool.store.exchange), in path order; for an
        environment (applies_for over kb.toml [environment]) each line says how its card applies, those
        scoped elsewhere last (or left out, only_applying)."""
        from kbtool.store.exchange import FORMATS, export_lines

        if fmt not in FORMATS:
            raise BadInput(f"--format {fmt}: kb exports {', '.join(FORMATS)}")
        cards = sorted(self.list(where=where), key=lambda c: c.path)
        environment = self.environment_for(applies_for)
        if not environment:
            if only_applying:
                raise nothing_to_judge()
            return export_lines(cards)
        judged = self.judge(cards, lambda c: c.card.applies_to.model_dump(), environment, only_applying)
        return export_lines([c for c, _ in judged], {c.id: how for c, how in judged})

    def import_cards(self, path: str | os.PathLike[str]) -> ImportSummary:
        """Cards from a JSON Lines export, in one commit: new ones added, changed ones updated (never a
        locked gate), the rest left as they are; a bad line refuses the whole file."""
        from kbtool.store.exchange import read_lines

        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"{path}: cannot read ({exc})") from None
        records = read_lines(text, source.name, self.config.limits.import_bytes)
        with self.store.lock():
            existing = {s.id: s for s in self.cards()}
            locked = self.gate_locks()
            writes: dict[str, str] = {}
            added = updated = unchanged = 0
            for card, body in records:
                rel = self.store.relative(self.store.card_path(card.kind, card.id))
                text_of = self._render(card, body, f"{source.name}: {card.id}")
                old = existing.get(card.id)
                if old is not None and old.path != rel:
                    raise Conflict(f"{source.name}: card {card.id!r} is a {card.kind} there, {old.path} here")
                if old is not None and markdown.render(old.card, old.body) == text_of:
                    unchanged += 1
                    continue
                if old is not None and card.kind == "gate" and card.id in locked:
                    raise Conflict(f"{source.name}: gate {card.id!r} differs from the locked one here; nothing written")
                writes[rel] = text_of
                added, updated = (added, updated + 1) if old else (added + 1, updated)
            commit = None
            if writes:
                message = commit_message(f"kb import {source.name}: {added} added, {updated} updated", "import")
                commit = self.store.write(writes, message)
        if writes:
            self._refresh_lexical()
        return ImportSummary(
            collection=source.name, added=added, updated=updated, unchanged=unchanged, retired=0, commit=commit
        )
