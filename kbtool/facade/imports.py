"""The part of the facade that imports cards in bulk and promotes a card into a team's.

Cards in bulk: `kb import` of documents (kbtool.store.importer), each import one commit (JSON Lines out and
back in: kbtool.facade.exchange); and `kb promote`, a card of this knowledge base up into a team's
(kbtool.store.carry), merged field by field with what the team changed meanwhile."""

from __future__ import annotations

import hashlib
import os
from datetime import date
from pathlib import Path

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model import markdown
from kbtool.model.cards import Gate
from kbtool.model.contracts import ImportSummary
from kbtool.model.errors import BadInput, Conflict, KbError
from kbtool.model.fields import drop_none, merge
from kbtool.model.records import StoredCard, gate_of
from kbtool.model.validation import validate_card
from kbtool.store.carry import (
    CarryConflict,
    Promoted,
    Unmergeable,
    carried,
    changed_at,
    checked_side,
    text_at,
    uncommitted,
)
from kbtool.store.commits import commit_message
from kbtool.store.git_identity import author_name
from kbtool.store.locate import find_root
from kbtool.store.repository import CARDS_DIR, LOCK_FILE, SKILLS_DIR, is_file, locked_in_order
from kbtool.store.sources import team_remote


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
            self.store.refuse_uncommitted(writes, f"kb import {path}")
            commit = None
            if writes:
                subject = f"kb import {collection}: {added} added, {updated} updated, {retired} retired"
                message = commit_message(subject, "import", collection=collection)
                commit = self.store.write(writes, message)
        return ImportSummary(
            collection=collection, added=added, updated=updated, unchanged=unchanged, retired=retired, commit=commit
        )

    def promote(self, ref: str, to: str, take: str | None = None) -> Promoted:
        """The card ref, up into the knowledge base `to` (a source of this one read from a folder, or the path
        of a knowledge base: a clone of the team's), in one commit there, with its provenance (project: this
        one). Promoted before, and changed there since: merged field by field with those changes (base: the
        card as last promoted), a field both changed differently refused (CarryConflict) unless take ("ours":
        the team's value, "theirs": this one's) settles it. This card then becomes a copy of the merged one,
        recording where and at which commit (provenance.origin), so `kb import --from-kb` refreshes it."""
        take = checked_side(take)
        stored = self.get(ref)
        team = self._promotion_target(to)
        # the team's remote when its folder is a clone (as new-project and import --from-kb record an origin), so a
        # re-import through the team's git source, on any teammate's machine, knows the copy for what it is
        recorded = team_remote(team.root) or str(team.root)
        team.store.require_writable()
        with locked_in_order(team.store, self.store):  # one order for every process: opposite promotes never deadlock
            _refuse_uncommitted(team, recorded, [])
            rel = team.store.relative(team.store.card_path(stored.card.kind, stored.id))
            there = team.store.card_file(stored.id)
            if there is not None and team.store.relative(there) != rel:
                raise Conflict(
                    f"{recorded}: {stored.id!r} is {team.store.relative(there)} there, not a {stored.card.kind}"
                )
            then = stored.card.provenance.origin
            same_origin = then is not None and (then.kb in (recorded, str(team.root)) or team.known_as(then.kb_id))
            last = then.commit if then and same_origin and then.id == stored.id else None
            # the project named once, when the card first goes up (a copy of the team's card keeps the team's)
            project = None if last else self.config.kb.name
            names = self._names_of(team)
            incoming = _as_promoted(team, stored, project, set(team.ids()) | {stored.id}, names)
            base = text_at(team.store.repo, last, rel) if last else None
            ours = there.read_text(encoding="utf-8") if there is not None else None
            if ours is None and base is not None:
                raise Conflict(f"{recorded}: {stored.id} was removed there since it was last promoted; nothing written")
            merged = incoming if ours is None else self._merged_up(team, stored, base, ours, incoming, rel, take, to)
            self._promoted_copy(stored, merged, recorded, "0" * 40, None, names)  # checked before either write
            locked_there = stored.id in team.locked_gates()
            if merged != ours and ours is not None and locked_there:
                raise Conflict(f"{recorded}: gate {stored.id!r} is locked there (kb.lock); nothing written")
            writes: dict[str, str | bytes | None] = {rel: merged} if merged != ours else {}
            if not locked_there:
                writes.update(self._lock_carried(stored, team, merged, recorded))
            writes.update(_linked_there(team, stored.id, merged, recorded))
            _refuse_uncommitted(team, recorded, list(writes))
            commit = None
            if writes:
                subject = f"kb promote {stored.id} from {self.config.kb.name}"
                commit = team.store.write(writes, commit_message(subject, "promote", project=self.config.kb.name))
            at = commit or team.store.head()
            assert at is not None  # the team's card is committed there: the base of the next promotion
            copy = self._promoted_copy(stored, merged, recorded, at, team.kb_id, names)
            noted = None
            if copy != markdown.render(stored.card, stored.body):
                message = commit_message(f"kb promote {stored.id} to {recorded}", "promote", to=f"{recorded}@{at}")
                noted = self.store.write({stored.path: copy}, message)
        edited_there = ours is not None and base is not None and ours != base
        return Promoted(stored.id, recorded, commit, noted, merged=edited_there and commit is not None)

    def _lock_carried(
        self, stored: StoredCard, team: KnowledgeBaseCore, merged: str, recorded: str
    ) -> dict[str, str | bytes | None]:
        """A gate locked here goes up locked: the files its lock covers (each under gates/, as locked here) and
        its kb.lock entry, for the card as the team gets it. Refused (Conflict), with nothing written, when its
        lock does not hold here (a file or the card changed since, an entry changed without a relock), or the
        team holds another file where one goes or beside them. Nothing for any other card."""
        from kbtool.curation.gate_lock import GateLock, gate_hash, render_lock

        dropped = self.dropped_locks().get(stored.id)
        lock = self.gate_locks().get(stored.id) or (dropped[1] if dropped else None)
        if stored.card.kind != "gate" or lock is None:
            return {}
        name = f"gate {stored.id!r}"
        tampered = self.lock_history().tampered.get(stored.id)
        if tampered is not None:
            raise Conflict(f"{tampered.message(stored.path)}; a lock that does not hold here is not promoted")
        if gate_hash(gate_of(stored), stored.body) != lock.sha256:
            raise Conflict(f"{name} changed since it was locked (kb gate verify names it); nothing written")
        files: dict[str, str | bytes | None] = {}
        for path, digest in sorted(lock.files.items()):
            if not path.startswith("gates/"):
                raise Conflict(
                    f"{name}: its lock covers {path}; only files under gates/ go up with a gate; nothing written"
                )
            here = self.store.inside(path)
            data = here.read_bytes() if is_file(here) else None
            if data is None or hashlib.sha256(data).hexdigest() != digest:
                raise Conflict(
                    f"{name}: {path} changed since the gate was locked (kb gate verify names it); nothing written"
                )
            elsewhere = team.store.inside(path)
            if elsewhere.exists() or elsewhere.is_symlink():
                if not is_file(elsewhere) or elsewhere.is_symlink() or elsewhere.read_bytes() != data:
                    raise Conflict(
                        f"{recorded}: {path} there is another file than the one {name} runs here; nothing written"
                    )
                continue
            files[path] = data
        for folder in sorted({str(Path(p).parent) for p in lock.files}):
            for found in sorted((team.root / folder).rglob("*")) if (team.root / folder).is_dir() else []:
                rel = found.relative_to(team.root).as_posix()
                if rel not in lock.files and "__pycache__" not in found.parts and not found.is_dir():
                    raise Conflict(f"{recorded}: {rel} is in the folder {name}'s lock covers; nothing written")
        card, body = markdown.parse(merged, f"kb promote {stored.id}")
        assert isinstance(card, Gate)  # the gate here, as the team gets it
        entry = GateLock(gate_hash(card, body), dict(lock.files))
        return {**files, LOCK_FILE: render_lock({**team.gate_locks(), stored.id: entry})}

    def _promotion_target(self, to: str) -> KnowledgeBaseCore:
        named = {s.name: s for s in self.config.sources}
        if to in named:
            from kbtool.store.sources import source_root

            source = named[to]
            if source.url:
                raise BadInput(
                    f"--to {to}: a source read from {source.url}; kb promote writes a knowledge base on this "
                    f"machine: clone it (git clone {source.url}), kb promote --to THE_CLONE, then kb sync there"
                )
            where = source_root(self.root, self.store.state_dir, source)
        else:
            where = Path(to).expanduser()
        if not where.is_dir() or find_root(where) != where.resolve():
            sources = ", ".join(named) or "none"
            raise BadInput(f"--to {to}: not a source of this knowledge base ({sources}) nor a knowledge base folder")
        if where.resolve() == self.root:
            raise BadInput(f"--to {to}: this very knowledge base")
        return type(self)(where.resolve())

    def _merged_up(
        self,
        team: KnowledgeBaseCore,
        stored: StoredCard,
        base: str | None,
        ours: str,
        incoming: str,
        rel: str,
        take: str | None,
        to: str,
    ) -> str:
        """The team's card (ours) with this one's changes since it was last promoted (incoming), field by field."""
        theirs_later = changed_at(self.store.repo, stored.path) > changed_at(team.store.repo, rel)
        try:
            merged = carried(stored.id, base, ours, incoming, "theirs" if theirs_later else "ours", take)
        except Unmergeable as exc:
            raise CarryConflict(exc.clashes, f"in {to}", "here", f"kb promote {stored.id} --to {to}") from None
        card, body = markdown.parse(merged, f"{team.root}: {rel}")
        return team._render(card, body, f"{team.root}: {rel}")

    def _names_of(self, team: KnowledgeBaseCore) -> set[str]:
        """The names this knowledge base's sources give the team's (SOURCE:ID links to its cards): those of the
        same identity or folder."""
        return {name for name, base in self.source_bases() if base.root == team.root or base.known_as(team.kb_id)}

    def _promoted_copy(
        self,
        stored: StoredCard,
        merged: str,
        recorded: str,
        commit: str,
        kb_id: str | None,
        names: set[str],
    ) -> str:
        """This knowledge base's card after a promotion: the merged card, keeping its own links to cards the team
        lacks, recording where it went (provenance.origin). A link the team's card has as ID is kept as this
        one wrote it (SOURCE:ID), or read through a source when this knowledge base has no card ID."""
        card, body = markdown.parse(merged, f"{recorded}: {stored.id}")
        data = markdown.card_data(card)
        data["provenance"] = {
            **data.get("provenance", {}),
            "origin": {"kb": recorded, "id": stored.id, "commit": commit, "kb_id": kb_id},
        }
        own = markdown.card_data(stored.card).get("links", {})
        held = set(self.ids())
        name = min(names) if names else None
        links: dict[str, list[str]] = {}
        for kind, ids in (data.get("links") or {}).items():
            written = {_on_team(i, names): i for i in own.get(kind, [])}
            here = [written.get(i) or (i if i in held or name is None else f"{name}:{i}") for i in ids]
            links[kind] = list(dict.fromkeys(here))
        for kind, ids in own.items():
            links[kind] = [*links.get(kind, []), *(i for i in ids if i not in links.get(kind, []))]
        if links:
            data["links"] = links
        origin = f"kb promote {stored.id}"
        return self._render(validate_card(drop_none(data), origin), body, origin)


def _refuse_uncommitted(team: KnowledgeBaseCore, recorded: str, writes: list[str]) -> None:
    """A promote commits its own change there and nothing else: a tracked file changed and not committed, or an
    untracked file where it writes, is refused, naming them."""
    found = uncommitted(team.store.repo, writes)
    if found:
        shown = ", ".join(found[:5]) + (f" (and {len(found) - 5} more)" if len(found) > 5 else "")
        raise BadInput(
            f"{recorded}: uncommitted changes there ({shown}); kb promote commits only what it carries: commit "
            "or stash them there first; nothing written"
        )


def _on_team(link: str, names: set[str]) -> str:
    """A link as the team's knowledge base names it: SOURCE:ID, where SOURCE is the team, is its own ID there."""
    source, sep, rest = link.partition(":")
    return rest if sep and source in names else link


def _linked_there(team: KnowledgeBaseCore, promoted: str, merged: str, recorded: str) -> dict[str, str | None]:
    """The team's cards the promoted one links to, written as kb writes them when such a link is made there, so
    each link holds on both sides: a gap it closes names it in closed_by (closed once a person confirms it
    there, kbtool.curation.gap_standing), a card it supersedes is superseded by it (as kb supersede does)."""
    from kbtool.model.records import gap_of

    card, _ = markdown.parse(merged, f"{recorded}: {promoted}")
    writes: dict[str, str | None] = {}
    for gap_id in card.links.closes:
        gap = team.get(gap_id)
        if gap.card.kind == "gap" and promoted not in gap_of(gap).closed_by:
            named = gap.card.model_copy(update={"closed_by": [*gap_of(gap).closed_by, promoted]})
            writes[gap.path] = team._render(named, gap.body, f"{recorded}: {gap.path}")
    for old_id in card.links.supersedes:
        old = team.get(old_id)
        if promoted in old.card.links.superseded_by and old.card.status == "superseded":
            continue
        links = old.card.links.model_copy(update={"superseded_by": [*old.card.links.superseded_by, promoted]})
        marked = old.card.model_copy(update={"status": "superseded", "links": links})
        writes[old.path] = team._render(marked, old.body, f"{recorded}: {old.path}")
    return writes


def _as_promoted(
    team: KnowledgeBaseCore, stored: StoredCard, project: str | None, known: set[str], names: set[str]
) -> str:
    """The card as the team's knowledge base takes it: its provenance saying which project it came from,
    not whose copy it is, and links only to cards the team holds (kb lint there would call others broken),
    a link to the team's card through a source (SOURCE:ID, names: the team's names here) as its own ID there."""
    data = markdown.card_data(stored.card)
    provenance = {k: v for k, v in (data.get("provenance") or {}).items() if k != "origin"}
    data["provenance"] = {**provenance, "project": provenance.get("project") or project}
    if data["provenance"]["project"] is None:
        del data["provenance"]["project"]
    links = {
        kind: list(dict.fromkeys(t for t in (_on_team(i, names) for i in ids) if t in known))
        for kind, ids in (data.get("links") or {}).items()
    }
    data["links"] = {kind: ids for kind, ids in links.items() if ids}
    if not data["links"]:
        del data["links"]
    origin = f"kb promote {stored.id}"
    try:
        card = validate_card(drop_none(data), origin)
    except KbError as exc:
        raise BadInput(f"{stored.id}: {exc}") from None
    return team._render(card, stored.body, origin)
