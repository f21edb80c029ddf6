"""Ranking, pure: FTS5 query parsing, fusion of the two legs, chunks grouped into cards.

Ranking, pure: query parsing for FTS5, fusion of the two legs, grouping chunks into
cards, demotion, snippets. The index supplies the legs' candidate lists; this module
decides the order.

Fusion is a convex combination of the legs' scores, each divided by its best candidate's so
both run up to 1 (Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", 2023,
found it better than reciprocal rank fusion and cheaper to tune). Measured on the dev splits of
the shared corpora's gold sets (bench/bench_quality.py, bench/bench_fusion.py, bench/RESULTS.md), it beat
RRF (k 5-60, weighted or not), min-max, z-score and distribution-based normalisation, language-dependent
weights, rank bonuses, and fixed scales of MiniLM's cosine (a `Scale`, which fuse() takes for a model whose
cosines bunch too much to divide by their best; MiniLM has none).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kbtool.model.cards import INACTIVE_STATUSES
from kbtool.model.parsing import has_cjk
from kbtool.search.embeddings import cjk_bigrams, without_cjk

MAX_QUERY_TERMS = 64  # a pasted 100 KB log is a query of its first words, not a 20k-term OR
# the keyword leg's share of the fused score, the vector leg's the rest: best on the dev splits,
# within a plateau of 0.55-0.65 on both corpora
LEG_WEIGHTS = {"bm25": 0.6, "vector": 0.4}
# USE multilingual's cosine that counts as its leg's best when no card reaches it (with_multilingual): 0.5 kept
# metainfer's dev MRR@10 over all queries at 0.790; 0.4 and below found one English->Chinese answer more and lost
# 0.009 there, 0.6 lost 0.03 of English->Chinese recall@10
MULTILINGUAL_FLOOR = 0.5
INACTIVE_FACTOR = 0.5  # superseded, refuted and retired cards still show, below current ones
# the keyword index's columns and their BM25 weights: a title word counts 4 times, a heading word twice; gloss
# holds the English gloss of the chunk's Chinese (kbtool.search.translation)
KEYWORD_COLUMNS = ("title", "heading", "body", "cjk", "gloss")
COLUMN_WEIGHTS = (4.0, 2.0, 1.0, 1.0, 1.0)

# Words that carry no topic; in an OR query they would match nearly every chunk.
STOPWORDS = frozenset(
    """
a an and are as at be by can do does for from has have how i if in into is it its me my of on or our so
that the their then there these this to use used using was we what when where which who why will with
you your should would could than them they been being not no yes vs via about
""".split()
)

IDENTIFIER = re.compile(r"[._]")  # what makes a word an identifier worth a phrase of its own
_NUMBER = re.compile(r"[\d._-]+")  # a version (3.4, 22.05) is no identifier: its parts are not words
_WORD = re.compile(r"[^\W_]+(?:[._-][^\W_]+)*", re.UNICODE)


def clean_query(text: str) -> str:
    """Control characters out, whitespace collapsed."""
    text = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in text)
    return " ".join(text.split())


def query_terms(text: str) -> list[str]:
    """Latin words (stopwords dropped, deduplicated) then CJK bigrams, capped. An identifier
    (`slot_mapping`, `torch.compile`) gives its words and itself, which FTS5 looks up as a phrase: the
    words in that order, side by side."""
    words = []
    for match in _WORD.findall(without_cjk(text)):
        parts = [w for w in re.split(r"[._-]", match) if w and w.lower() not in STOPWORDS]
        words += [w.lower() for w in parts]
        if len(parts) > 1 and IDENTIFIER.search(match) and not _NUMBER.fullmatch(match):
            words.append(match.lower())
    grams = cjk_bigrams(text)
    return list(dict.fromkeys(words + grams))[:MAX_QUERY_TERMS]


def with_chinese_terms(terms: list[str]) -> list[str]:
    """An English query's terms and the CJK bigrams of their Chinese translations (kbtool.search.translation),
    which only the bigram column holds; capped, the query's own terms first."""
    from kbtool.search.translation import in_chinese

    grams = [gram for head in in_chinese(terms) for gram in cjk_bigrams(head)]
    return list(dict.fromkeys(terms + grams))[:MAX_QUERY_TERMS]


Phrase = tuple["str | None", str]  # (the one keyword column it is looked up in, or None for all; its text)


def phrases(terms: Iterable[str]) -> list[Phrase]:
    """The keyword leg's OR-ed phrases: a CJK bigram only in the bigram column, a word anywhere."""
    return [("cjk" if has_cjk(term) else None, term) for term in terms]


def fts_match(query: Iterable[Phrase]) -> str | None:
    """An FTS5 MATCH expression: every phrase quoted (so nothing is FTS syntax), OR-ed."""
    quoted = []
    for column, text in query:
        phrase = '"' + text.replace('"', '""') + '"'
        quoted.append(f"{column}:{phrase}" if column else phrase)
    return " OR ".join(quoted) or None


@dataclass(frozen=True)
class Scale:
    """A fixed map of a leg's raw score onto 0-1: `low` and below is 0, `high` and above is 1, linear between."""

    low: float
    high: float

    def of(self, score: float) -> float:
        return min(1.0, max(0.0, (score - self.low) / (self.high - self.low)))


@dataclass
class LegHit:
    rank: int  # 1-based, among cards
    score: float  # the leg's own score of the card's best chunk (BM25, or cosine similarity)
    chunk_id: int
    normalized: float = 0.0  # score / the leg's best score: what fusion adds up


@dataclass
class Fused:
    card: int  # index into the caller's card list
    score: float
    legs: dict[str, LegHit] = field(default_factory=dict)
    demoted: bool = False
    lifted_by: str | None = None  # the leg that ranked it first, when keep_each_legs_first moved it up

    @property
    def best_chunk(self) -> int:
        return min(self.legs.values(), key=lambda h: h.rank).chunk_id


def card_ranking(chunk_hits: Iterable[tuple[int, float]], card_of: dict[int, int]) -> dict[int, LegHit]:
    """Chunks (best first) -> each card's rank by its best chunk."""
    ranking: dict[int, LegHit] = {}
    for chunk_id, score in chunk_hits:
        card = card_of.get(chunk_id)
        if card is not None and card not in ranking:
            ranking[card] = LegHit(len(ranking) + 1, score, chunk_id)
    return ranking


def with_multilingual(vector: dict[int, LegHit], multilingual: dict[int, LegHit]) -> dict[int, LegHit]:
    """The vector leg with the multilingual leg's word on the cards it ranks (the Chinese ones): each card scores
    the higher of its two cosines, each over its leg's best (MiniLM's best is the unit, so the leg still reads
    as MiniLM's cosine), its best chunk the one that scored it. The multilingual leg's best counts as at least
    MULTILINGUAL_FLOOR: in a knowledge base with a few Chinese chunks, none of them about the query, the best
    of them would otherwise score as high as the best English card. Chosen on metainfer's dev split against
    adding the multilingual leg as a third term (weights 0.1-0.6, over its best, fixed cosine scales, only its
    top 5-20 cards), which found more English->Chinese answers but ranked the rest lower, and floors 0.3-0.6
    (bench/bench_cjkleg.py, bench/RESULTS.md)."""
    if not multilingual:
        return vector
    unit = max((hit.score for hit in vector.values()), default=1.0)
    top = max(MULTILINGUAL_FLOOR, *(hit.score for hit in multilingual.values()))
    merged = dict(vector)
    for card, hit in multilingual.items():
        score = hit.score / top * unit
        if card not in merged or score > merged[card].score:
            merged[card] = LegHit(0, score, hit.chunk_id)
    ranked = sorted(merged.items(), key=lambda item: -item[1].score)
    return {card: LegHit(rank, hit.score, hit.chunk_id) for rank, (card, hit) in enumerate(ranked, 1)}


def normalize(ranking: dict[int, LegHit], scale: Scale | None) -> None:
    """Each hit's normalised score: through the leg's fixed scale when it has one, else over its best."""
    if scale is not None:
        for hit in ranking.values():
            hit.normalized = scale.of(hit.score)
        return
    top = max(hit.score for hit in ranking.values())
    for hit in ranking.values():
        hit.normalized = hit.score / top if top > 0 else 0.0


def fuse(
    legs: dict[str, dict[int, LegHit]],
    statuses: list[str],
    truncated: Iterable[str] = (),
    weights: dict[str, float] = LEG_WEIGHTS,
    scales: dict[str, Scale] | None = None,
) -> list[Fused]:
    """The convex combination of each leg's normalised scores, inactive cards demoted, best first.

    A leg with a fixed scale (`scales`: the vector leg of a calibrated model) is normalised through
    it, any other over its best candidate. A card one leg did not return scores 0 there when the leg
    returned everything it matched, and counts as the leg's weakest candidate when the leg was cut at
    its candidate limit (`truncated`): absent from the top few hundred says no better than them, and no
    worse is known."""
    cut = set(truncated)
    fused: dict[int, Fused] = {}
    floors: dict[str, float] = {}
    for name, ranking in legs.items():
        if not ranking:
            continue
        normalize(ranking, (scales or {}).get(name))
        floors[name] = min(hit.normalized for hit in ranking.values()) if name in cut else 0.0
        for card, hit in ranking.items():
            fused.setdefault(card, Fused(card, 0.0)).legs[name] = hit
    for entry in fused.values():
        entry.score = sum(
            weights.get(name, 1.0) * (entry.legs[name].normalized if name in entry.legs else floor)
            for name, floor in floors.items()
        )
        if statuses[entry.card] in INACTIVE_STATUSES:
            entry.score *= INACTIVE_FACTOR
            entry.demoted = True
    return sorted(fused.values(), key=lambda f: (-f.score, f.card))


# Each leg's first card is shown within the first LEG_FIRST_WITHIN places: a card one leg ranks first and
# the other leg does not know (a paraphrase only the vector leg understands, an identifier only BM25 matches)
# is otherwise outvoted past the tenth place. Chosen on the dev splits among 1 or 2 first cards of the
# vector leg or of both, kept within 3, 5, 8 or 10 places (bench/RESULTS.md).
LEG_FIRST_WITHIN = 5


def keep_each_legs_first(fused: list[Fused], within: int = LEG_FIRST_WITHIN) -> list[Fused]:
    """fused, with each leg's first card moved up to place `within` where fusion ranked it lower. It takes
    the score of the card it passes, so the list stays in score order; an inactive (demoted) card stays
    where its demotion put it."""
    out = list(fused)
    for name in sorted({name for f in fused for name in f.legs}):
        first = next((i for i, f in enumerate(out) if (hit := f.legs.get(name)) and hit.rank == 1), None)
        if first is None or first < within or out[first].demoted:
            continue
        lifted = out.pop(first)
        lifted.score, lifted.lifted_by = out[within - 1].score, name
        out.insert(within - 1, lifted)
    return out


def snippet(text: str, terms: Iterable[str], width: int = 240) -> str:
    """One line of the chunk, around the first query term it contains."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    positions = [p for p in (lower.find(t.lower()) for t in terms) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    piece = flat[start : start + width]
    return ("…" if start else "") + piece.strip() + ("…" if start + width < len(flat) else "")


# --- one scale across knowledge bases ------------------------------------------------------------------------


def leg_tops(explains: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Each leg's best raw score in one knowledge base's search, as its hits' explain gives it back: a hit's
    raw score over its normalised one (normalised = raw / the leg's best)."""
    surest: dict[str, dict[str, float]] = {}  # the hit normalised highest: its ratio has the least rounding in it
    for explain in explains:
        for name in LEG_WEIGHTS:
            leg = explain.get(name)
            if leg and leg["normalized"] > surest.get(name, {"normalized": 0.0})["normalized"]:
                surest[name] = leg
    return {name: leg["score"] / leg["normalized"] for name, leg in surest.items()}


def keyword_ceiling(explains: Iterable[dict[str, Any]]) -> float | None:
    """The keyword leg's ceiling in one knowledge base's search (the best score the query could reach in its
    index, which each keyword hit's explain carries), or None when no hit has one."""
    for explain in explains:
        leg = explain.get("bm25")
        if leg and leg.get("ceiling"):
            return float(leg["ceiling"])
    return None


def common_factors(tops: list[dict[str, float]], ceilings: list[float | None]) -> list[dict[str, float]]:
    """Per knowledge base searched together, what each leg's normalised scores (over that knowledge base's own
    best) are multiplied by to put them on one scale, the best of all at 1.0.

    The vector leg's cosine means the same in any index: over the best cosine of all. The keyword leg's BM25
    does not: its IDF grows with the index (a term in 1 of 12 chunks weighs 2.0, in 1 of 2,000 7.2), so over
    the best raw score of all a big source outscores a small project's exact match. Each knowledge base's
    BM25 is first taken over its own ceiling for the query (Index.keyword_ceiling: how much of the whole query
    a hit matches, whatever the index's size), then over the best of those."""
    best = {leg: max(t.get(leg, 0.0) for t in tops) for leg in {leg for t in tops for leg in t}}
    keyword = [t.get("bm25", 0.0) for t in tops]
    if all(c for top, c in zip(keyword, ceilings, strict=True) if top):
        keyword = [top / c if top and c else 0.0 for top, c in zip(keyword, ceilings, strict=True)]
    # else a keyword hit came without its ceiling: over the best raw score of all, as before
    factors = [{leg: t[leg] / best[leg] for leg in t if best[leg] > 0} for t in tops]
    for factor, share in zip(factors, keyword, strict=True):
        if "bm25" in factor:
            factor["bm25"] = share / max(keyword)
    return factors


def on_common_scale(score: float, explain: dict[str, Any], factors: dict[str, float]) -> tuple[float, dict[str, Any]]:
    """A hit's fused score (and its explain) with each leg's scores divided by the best of that leg across all
    the knowledge bases searched together, not by its own knowledge base's best: factors[leg] = this knowledge
    base's best / the best of all. A leg the hit is missing from counts as fusion counted it (its floor, or
    0), scaled alike: with two legs it is the rest of the score."""
    demoted = explain.get("demoted", False)
    undemoted = score / INACTIVE_FACTOR if demoted else score
    present = {n: explain[n] for n in LEG_WEIGHTS if explain.get(n)}
    rest = undemoted - sum(LEG_WEIGHTS[n] * leg["normalized"] for n, leg in present.items())
    missing = [n for n in LEG_WEIGHTS if n in explain and not explain.get(n)]
    new = sum(LEG_WEIGHTS[n] * leg["normalized"] * factors.get(n, 1.0) for n, leg in present.items())
    new += max(rest, 0.0) * (factors.get(missing[0], 1.0) if len(missing) == 1 else 1.0)
    out = dict(explain)
    for n, leg in present.items():
        out[n] = {**leg, "normalized": round(leg["normalized"] * factors.get(n, 1.0), 4)}
    return (new * INACTIVE_FACTOR if demoted else new), out


def same_words(title: str, query: str) -> bool:
    """Whether a query is a card's title, word for word: case, punctuation and spacing aside."""
    return _words_of(title) == _words_of(query) != ""


def _words_of(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))
