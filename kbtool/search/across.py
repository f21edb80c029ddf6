"""One answer from several knowledge bases' searches: a project's and its sources'.

Three steps, a function each. The hits go on one scale: each leg is divided by its best across all the searches,
so an irrelevant card does not score near 1.0 only for being the best its knowledge base has. A card asked for by
its exact title comes first, this knowledge base's own before a source's. A source's card this knowledge base
holds a copy of is left out for the copy, which keeps the better of the two matches."""

from __future__ import annotations

from kbtool.model.cards import INACTIVE_STATUSES
from kbtool.model.contracts import SearchHit
from kbtool.search.ranking import (
    INACTIVE_FACTOR,
    common_factors,
    keyword_ceiling,
    leg_tops,
    on_common_scale,
    same_words,
)


def on_one_scale(results: list[list[SearchHit]], explain: bool) -> list[SearchHit]:
    """The hits of several knowledge bases' searches (each with its explain), their scores made comparable:
    each leg divided by its best across all of them rather than by each knowledge base's own best, so an
    irrelevant card does not score near 1.0 only for being the best its knowledge base has. A search of
    one knowledge base alone ranks as before. The explain stays only when it was asked for."""
    tops = [leg_tops(h.explain or {} for h in hits) for hits in results]
    ceilings = [keyword_ceiling(h.explain or {} for h in hits) for hits in results]
    out = []
    for hits, factors in zip(results, common_factors(tops, ceilings), strict=True):
        for hit in hits:
            score, explained = on_common_scale(hit.score, hit.explain, factors) if hit.explain else (hit.score, None)
            out.append(hit.model_copy(update={"score": round(score, 6), "explain": explained if explain else None}))
    return out


def exact_titles_first(hits: list[SearchHit], query: str, own: str) -> list[SearchHit]:
    """hits (best first), those whose title is the query word for word moved to the top, this knowledge base's own
    before a source's: asked for by its exact title, a project's card is the answer, however many cards of a large
    source share its words. Each takes the score of the first it passes, so the list stays in score order; an
    inactive card stays where its demotion put it."""

    def exact(hit: SearchHit) -> bool:
        return hit.status not in INACTIVE_STATUSES and same_words(hit.title, query)

    first = sorted((h for h in hits if exact(h)), key=lambda h: h.kb != own)  # stable: by score within each
    if not first:
        return hits
    top = hits[0].score
    lifted = [h.model_copy(update={"score": max(h.score, top)}) for h in first]
    return lifted + [h for h in hits if not exact(h)]


def copies_for_originals(hits: list[SearchHit], copied: dict[str, str]) -> list[SearchHit]:
    """Each source card this knowledge base holds a copy of left out, its copy standing for it: one card, with
    the copy's status (a copy superseded here stays demoted) and the better of the two matches (the same text,
    scored in two indexes of different sizes)."""
    best: dict[str, float] = {}
    for hit in hits:
        copy = copied.get(hit.id)
        if copy is not None:
            demoted = hit.status in INACTIVE_STATUSES
            best[copy] = max(best.get(copy, 0.0), hit.score / INACTIVE_FACTOR if demoted else hit.score)
    out = []
    for hit in hits:
        if hit.id in copied:
            continue
        if hit.kb is not None and ":" not in hit.id and hit.id in best:
            factor = INACTIVE_FACTOR if hit.status in INACTIVE_STATUSES else 1.0
            hit = hit.model_copy(update={"score": round(max(hit.score, best[hit.id] * factor), 6)})
        out.append(hit)
    return out
