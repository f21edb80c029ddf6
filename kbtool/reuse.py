"""Knowledge carried from one knowledge base into another: `kb import --from-kb` (cards copied with
where they came from, so importing again updates them; `kb lint`'s drift check, in
kbtool.loop.curation, says when an original changed since).

A copy records provenance.origin: the origin's location (a folder or a git URL), the card's id
there and the origin's commit at the copy. A copy is updated only by importing again from the
same origin; a card of the same id that is not such a copy is never overwritten.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import git

from .model import markdown
from .model.contracts import ImportSummary
from .model.errors import BadInput, Conflict, KbError
from .model.records import StoredCard
from .model.validation import validate_card
from .store.locate import find_root

if TYPE_CHECKING:
    from .kb import KnowledgeBase

GIT_ENV = {"GIT_TERMINAL_PROMPT": "0"}


def _is_git_url(location: str) -> bool:
    return "://" in location or location.startswith("git@") or location.endswith(".git")


def open_origin(location: str, scratch: Path) -> tuple[KnowledgeBase, str, str]:
    """(the origin knowledge base, its location as copies record it, its commit): a folder is read in
    place; a git repository (a URL, or a bare repository's path) is cloned into scratch first."""
    from .kb import KnowledgeBase

    path = Path(location).expanduser()
    if path.is_dir() and find_root(path) == path.resolve():
        base = KnowledgeBase.open(path)
        try:
            commit = base.store.repo.head.commit.hexsha
        except (ValueError, KbError):
            raise BadInput(f"{location}: a knowledge base with no commit yet; nothing to copy") from None
        return base, str(base.root), commit
    if not (_is_git_url(location) or path.is_dir()):
        raise BadInput(f"{location}: not a knowledge base (no kb.toml) nor a git repository")
    recorded = str(path.resolve()) if path.is_dir() else location
    clone = scratch / "origin"
    try:
        git.Repo.clone_from(recorded, clone, env=GIT_ENV, depth=1)
    except git.GitCommandError as exc:
        last = (str(exc.stderr or exc).strip().splitlines() or ["failed"])[-1].strip().strip("'")
        raise BadInput(f"{location}: git clone: {last}") from None
    base = KnowledgeBase.open(clone)
    return base, recorded, base.store.repo.head.commit.hexsha


def import_from_kb(
    target: KnowledgeBase, location: str, kind: str | None = None, where: Iterable[str] = ()
) -> ImportSummary:
    """Copy the origin's cards (of kind, matching where) into target in one commit. Links to cards
    neither copied nor already here are left out (kb lint would call them broken)."""
    with tempfile.TemporaryDirectory(prefix="kb-origin-") as scratch:
        origin, recorded, commit = open_origin(location, Path(scratch))
        if origin.root == target.root:
            raise BadInput(f"{location}: this very knowledge base")
        chosen = origin.list(kind=kind, where=list(where))
        if not chosen:
            raise BadInput(f"{location}: no card matches; nothing written")
        with target.store.lock():
            existing = {s.id: s for s in target.cards()}
            known = set(existing) | {c.id for c in chosen}
            locked = target.gate_locks()
            writes: dict[str, str] = {}
            added = updated = unchanged = 0
            for stored in chosen:
                text = _copy_text(target, stored, recorded, commit, known)
                old = existing.get(stored.id)
                if old is not None and not _copied_from(old, recorded):
                    raise Conflict(
                        f"{old.path}: a card {stored.id!r} of this knowledge base's own is here; "
                        f"it is not a copy from {recorded}, so nothing was written"
                    )
                if old is not None and markdown.render(old.card, old.body) == text:
                    unchanged += 1
                    continue
                if old is not None and old.card.kind == "gate" and old.id in locked:
                    raise Conflict(f"{old.path}: a locked gate here; nothing written")
                writes[target.store.relative(target.store.card_path(stored.card.kind, stored.id))] = text
                added, updated = (added, updated + 1) if old else (added + 1, updated)
            sha = None
            if writes:
                message = (
                    f"kb import --from-kb {recorded}: {added} added, {updated} updated\n\n"
                    f"kb-op: import\nkb-origin: {recorded}@{commit}\n"
                )
                sha = target.store.write(writes, message)
    if sha:
        target.refresh_index(semantic=False)  # the copies are in the keyword leg at once; vectors follow
    return ImportSummary(collection=recorded, added=added, updated=updated, unchanged=unchanged, retired=0, commit=sha)


def _copied_from(stored: StoredCard, recorded: str) -> bool:
    origin = stored.card.provenance.origin
    return origin is not None and origin.kb == recorded and origin.id == stored.id


def _copy_text(target: KnowledgeBase, stored: StoredCard, recorded: str, commit: str, known: set[str]) -> str:
    data = markdown.card_data(stored.card)
    provenance = dict(data.get("provenance") or {})
    provenance["origin"] = {"kb": recorded, "id": stored.id, "commit": commit}
    data["provenance"] = provenance
    links = {rel: [i for i in ids if i in known] for rel, ids in (data.get("links") or {}).items()}
    data["links"] = {rel: ids for rel, ids in links.items() if ids}
    if not data["links"]:
        del data["links"]
    card = validate_card(data, f"{recorded}: {stored.path}")
    return target._render(card, stored.body, f"{recorded}: {stored.path}")
