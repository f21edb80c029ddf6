"""A copy and its original are one card.

A card copied from a source (`kb import --from-kb`, `kb new-project`, or made on write by a local verdict on
SOURCE:ID) records provenance.origin: the knowledge base it came from and its id there. Where this knowledge base
reads that source too, the original is the copy's shadow: search, list and gaps show the copy alone, with its status
and scope, so what the project says of a team card wins.

Pure: the facade hands in its own cards' summaries and, for each source, the places it is known by."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kbtool.model.records import CardSummary

if TYPE_CHECKING:
    from kbtool.store.repository import Store


class CardsById(Protocol):
    def cards_with(self, path: tuple[str, ...], value: str) -> set[int]: ...


@dataclass(frozen=True)
class KnownSource:
    """A source as copies may name it: its kb.toml name, the places its origin may be recorded as (its folder,
    its URL or path in kb.toml, its git remote, its knowledge base name), and its index (which ids it holds)."""

    name: str
    places: frozenset[str]
    index: CardsById

    def holds(self, card_id: str) -> bool:
        return bool(self.index.cards_with(("id",), card_id))


def same_place(recorded: str) -> str:
    """An origin's location in the form sources are compared by: a folder on this machine resolved, a URL as
    written without a trailing slash or `.git`."""
    text = recorded.rstrip("/")
    if "://" not in text and not text.partition(":")[0].count("@"):
        path = Path(text).expanduser()
        if path.is_absolute() and path.exists():
            return str(path.resolve())
    return text.removesuffix(".git")


def copied_originals(own: Iterable[CardSummary], sources: list[KnownSource]) -> dict[str, str]:
    """SOURCE:ID of each source card this knowledge base holds a copy of -> the copy's id. The copy's origin
    names the source by one of its places; an origin recorded on another machine (a teammate's folder) that
    names no source here is matched by its id alone when exactly one source holds that id."""
    found: dict[str, str] = {}
    by_place = {same_place(place): source for source in sources for place in source.places if place}
    for summary in own:
        origin = summary.get("provenance", "origin")
        if not isinstance(origin, dict) or not origin.get("id"):
            continue
        original = str(origin["id"])
        source = by_place.get(same_place(str(origin.get("kb", ""))))
        if source is None:
            holding = [s for s in sources if s.holds(original)]
            source = holding[0] if len(holding) == 1 else None
        if source is not None and source.holds(original):
            found.setdefault(f"{source.name}:{original}", summary.id)
    return found


def remote_urls(store: Store) -> list[str]:
    """The URLs a knowledge base's git remotes name: a copy's origin may be recorded as one of them."""
    import git

    try:
        return [url for remote in store.repo.remotes for url in remote.urls]
    except (git.GitError, ValueError):
        return []


def shadow_data(data: dict[str, Any], source: str, place: str, commit: str) -> dict[str, Any]:
    """A source card's frontmatter as this knowledge base's copy of it, made when the project gives its own
    verdict on it (supersedes, refutes, retires it, or closes it): the same card, its origin recorded (so it
    stands for the original in search, list and gaps, and lint's drift check follows the original), its links
    naming the source's cards as SOURCE:ID. What closed a gap there is the source's affair: not carried."""
    links = {
        field: [target if ":" in target else f"{source}:{target}" for target in targets]
        for field, targets in (data.get("links") or {}).items()
    }
    provenance = {**(data.get("provenance") or {}), "origin": {"kb": place, "id": data["id"], "commit": commit}}
    out = {**data, "links": links, "provenance": provenance}
    if "closed_by" in out:
        out["closed_by"] = []
    return out


def known_sources(core: Any, waiting: bool = True) -> list[KnownSource]:
    """Each source core reads that is there, as copies may name it (core: a KnowledgeBaseCore; this module sits
    below it): its kb.toml name, the places its origin may be recorded as, its index refreshed (its ids now).
    waiting: False leaves out a source whose keyword rows are still being read (a search leaves it out too)."""
    from kbtool.store.sources import source_root

    bases = dict(core.source_bases(waiting))
    known = []
    for source in core.config.sources:
        base = bases.get(source.name)
        if base is not None and base.warm_up.rows_ready.is_set():
            base.index.refresh_if_stale(None)
            where = source_root(core.root, core.store.state_dir, source)
            places = {source.url, source.path, str(where), base.config.kb.name, *remote_urls(base.store)}
            known.append(KnownSource(source.name, frozenset(p for p in places if p), base.index))
    return known
