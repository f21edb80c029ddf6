"""`kb lint`: what makes a knowledge base untrustworthy, as a list of problems.

Checks: cards that do not parse or validate, a file whose id or folder disagrees with its
frontmatter, two cards with one id, links to cards that do not exist, and files in kb/
that are not cards of a known kind.
"""

from __future__ import annotations

from .cards import KINDS
from .errors import InvalidCard
from .records import Problem, StoredCard
from .store import CARDS_DIR, Store

LINK_FIELDS = ("supersedes", "superseded_by", "related", "contradicts", "closes")


def lint(store: Store) -> list[Problem]:
    problems: list[Problem] = []
    loaded: list[StoredCard] = []
    seen: dict[str, str] = {}
    cards_dir = store.root / CARDS_DIR
    for path in sorted(cards_dir.rglob("*")) if cards_dir.is_dir() else []:
        rel = store.relative(path)
        if path.is_dir() or path.name.startswith("."):
            continue
        parts = path.relative_to(cards_dir).parts
        if len(parts) != 2 or parts[0] not in KINDS or path.suffix != ".md":
            problems.append(Problem(rel, "stray-file", f"not a card: cards live in kb/<kind>/<id>.md with kind one of {', '.join(KINDS)}"))
            continue
        stem = path.stem
        if stem in seen:
            problems.append(Problem(rel, "duplicate-id", f"id {stem!r} is also used by {seen[stem]}", stem))
        seen.setdefault(stem, rel)
        try:
            stored = StoredCard.read(path, store.root)
        except InvalidCard as exc:
            problems.append(Problem(rel, "invalid", str(exc).removeprefix(f"{rel}: "), stem))
            continue
        if stored.card.id != stem:
            problems.append(Problem(rel, "id-mismatch", f"id {stored.card.id!r} differs from the file name; the file stem is the id", stem))
        if stored.card.kind != parts[0]:
            problems.append(Problem(rel, "kind-mismatch", f"a {stored.card.kind} card in the {parts[0]} folder", stem))
        loaded.append(stored)
    problems.extend(_broken_links(loaded, set(seen)))
    return problems


def _broken_links(cards: list[StoredCard], ids: set[str]) -> list[Problem]:
    out = []
    for stored in cards:
        targets = [(f"links.{name}", t) for name in LINK_FIELDS for t in getattr(stored.card.links, name)]
        targets += [("closed_by", t) for t in getattr(stored.card, "closed_by", [])]
        for field, target in targets:
            if target not in ids:
                out.append(Problem(stored.path, "broken-link", f"{field}: no card with id {target!r}", stored.id))
    return out
