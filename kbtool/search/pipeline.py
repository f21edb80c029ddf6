"""One query against the index: filters, the BM25 and vector legs, fusion, a SearchResult.

Filters narrow the cards, the two legs rank chunks (CANDIDATES each at first; a leg whose candidates hold too
few distinct cards asks again for WIDEN times as many), and fusion ranks cards. Searcher holds the embedder, so
a warm process embeds fast. The answer is a SearchResult (kbtool.model.contracts), whose JSON is what other
tools read:

    {"query": str, "hits": [{"id", "kind", "title", "status", "score", "path",
                             "source": {"path", "heading", "url"} | null, "snippet"}]}
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any

from kbtool.model.contracts import HitSource, SearchHit, SearchRequest, SearchResult
from kbtool.model.errors import BadInput
from kbtool.model.parsing import has_cjk
from kbtool.search.embeddings import Embedder
from kbtool.search.index import Index
from kbtool.search.indexed import CardMeta
from kbtool.search.ranking import (
    LEG_WEIGHTS,
    Fused,
    LegHit,
    Phrase,
    card_ranking,
    clean_query,
    fuse,
    keep_each_legs_first,
    phrases,
    query_terms,
    with_chinese_terms,
    with_multilingual,
)
from kbtool.search.snippets import readable_snippet

__all__ = ["CANDIDATES", "SearchRequest", "Searcher"]

CANDIDATES = 200  # chunks each leg hands to fusion, at first
# A leg whose candidates hold fewer distinct cards than the answer needs (one card of thousands of
# chunks can fill them all) asks again for WIDEN times as many, up to MAX_CANDIDATES.
WIDEN = 8
MAX_CANDIDATES = CANDIDATES * WIDEN**3


@dataclass
class Searcher:
    """Runs requests against one index; holds the embedder so a warm process embeds fast."""

    index: Index
    embedder: Embedder | None
    cjk: Embedder | None = None  # the multilingual leg's model: English queries against Chinese chunks
    _query_vectors: dict[str, Any] = field(default_factory=dict)
    _executor: ThreadPoolExecutor | None = None
    _multilingual_pool: ThreadPoolExecutor | None = None

    def _query_vector(self, text: str, embedder: Embedder | None = None) -> Any:
        embedder = embedder or self.embedder
        assert embedder is not None
        key = f"{embedder.model_id}\0{text}"
        vec = self._query_vectors.get(key)
        if vec is None:
            vec = embedder.embed_query(text)
            if len(self._query_vectors) > 2048:
                self._query_vectors.clear()
            self._query_vectors[key] = vec
        return vec

    def _multilingual_query(self, text: str, given: bool) -> Future[Any] | None:
        """The query's multilingual vector, being made on a thread of its own (numpy releases the GIL, so it
        is made while MiniLM embeds the query), or None when the multilingual leg does not run: no model, a
        query with Chinese in it (the BM25 leg's bigrams read it), a query vector given (related's: MiniLM's),
        or no Chinese chunk embedded."""
        cjk = self.cjk
        if cjk is None or given or has_cjk(text) or not self.index.has_vectors(cjk):
            return None
        if self._multilingual_pool is None:
            self._multilingual_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-multilingual")
        return self._multilingual_pool.submit(self._query_vector, text[:2000], cjk)

    def _has_chinese(self, text: str) -> bool:
        """Whether an English query searches Chinese text: the knowledge base has Chinese chunks and the query has
        none (with or without the multilingual leg's model: the keyword leg is the same in every install)."""
        return not has_cjk(text) and self.index.holds_cjk()

    def _multilingual_leg(self, query: Future[Any], allowed: set[int] | None, k: int) -> dict[int, LegHit]:
        """The multilingual leg: the query's cosine with the Chinese chunks' multilingual vectors (only those
        chunks have one)."""
        cjk = self.cjk
        assert cjk is not None
        mask = self.index.allowed_mask(cjk, allowed) if allowed is not None else None
        vector = query.result()
        ranking, _ = self._leg(lambda limit: self.index.vector(cjk, vector, mask, limit), k)
        return ranking

    def search(self, request: SearchRequest, vector: Any = None, multilingual_leg: bool = True) -> SearchResult:
        """vector: the query's for the vector leg, already made (a card's stored one); else its text embedded.
        multilingual_leg: False leaves the multilingual leg out of this search (its model not loaded yet)."""
        text = clean_query(request.query)
        if not text:
            raise BadInput("empty query: say what to look for")
        cards = self.index.cards
        allowed = self.index.matching(request.conditions())

        terms = query_terms(text)
        if request.mode in ("hybrid", "bm25") and self._has_chinese(text):
            terms = with_chinese_terms(terms)  # an English query asks the Chinese text for its words too
        legs: dict[str, dict[int, Any]] = {}
        truncated: set[str] = set()  # legs cut at their candidate limit: more matched than they returned
        multilingual: dict[int, LegHit] | None = None
        lexical = None
        words: list[Phrase] = []
        if request.mode in ("hybrid", "bm25"):
            chunk_filter = self.index.chunks_of(allowed) if allowed is not None else None
            if terms and allowed != set():
                # SQLite, numpy and torch release the GIL: the BM25 leg runs while the query is embedded
                words = phrases(terms)
                lexical = self._pool().submit(
                    self._leg, lambda limit: self.index.lexical(words, chunk_filter, limit), request.k
                )
            else:
                legs["bm25"] = {}
        if request.mode in ("hybrid", "vector") and self.embedder is not None and allowed != set():
            mask = self.index.allowed_mask(self.embedder, allowed) if allowed is not None else None
            # the model reads at most ~256 word pieces; embedding a 100 KB query would only cost time
            other = self._multilingual_query(text, vector is not None) if multilingual_leg else None
            if vector is None:
                vector = self._query_vector(text[:2000])
            embedder = self.embedder
            legs["vector"], cut = self._leg(lambda limit: self.index.vector(embedder, vector, mask, limit), request.k)
            truncated |= {"vector"} if cut else set()
            if other is not None:
                multilingual = self._multilingual_leg(other, allowed, request.k)
                legs["vector"] = with_multilingual(legs["vector"], multilingual)
        if lexical is not None:
            ranking, cut = lexical.result()
            legs = {"bm25": ranking, **legs}
            truncated |= {"bm25"} if cut else set()
        # a knowledge pack (kb skill pack) is a digest of cards this search finds themselves: its hit would
        # show them twice; `kb show`, `kb skill list` and the agents that load it still reach it
        fused_all = keep_each_legs_first(fuse(legs, self.index.statuses, truncated))
        ranked = (f for f in fused_all if not _is_pack(cards[f.card]))
        fused = list(islice(ranked, request.k))
        rows = self.index.chunk_rows(f.best_chunk for f in fused)
        # what a merge across knowledge bases puts the keyword scores on a common scale with (kbtool.facade.search):
        # over the query's own words, not their Chinese translations, which stand in for them rather than add to them
        ceiling = None
        if request.explain and words and fused:
            ceiling = self.index.keyword_ceiling(phrases(query_terms(text)))
        hits_out = []
        for f in fused:
            card = cards[f.card]
            heading, chunk_text = rows.get(f.best_chunk, (None, ""))
            source = card.data.get("source")
            explain = _explain(f, legs, heading, multilingual, ceiling) if request.explain else None
            hits_out.append(
                SearchHit(
                    id=card.id,
                    kind=card.kind,
                    title=card.title,
                    status=card.status,
                    score=round(f.score, 6),
                    path=card.path,
                    source=HitSource(path=source.get("path"), heading=source.get("heading"), url=source.get("url"))
                    if source
                    else None,
                    snippet=readable_snippet(
                        chunk_text.split("\n", 1)[-1] if heading else chunk_text,
                        terms,
                        card.title,
                        card.data,
                        partial(self.index.card_texts, card.path),
                        request.query,
                    ),
                    explain=explain,
                )
            )
        return SearchResult(query=request.query, hits=hits_out)

    def _leg(self, run: Callable[[int], list[tuple[int, float]]], needed: int) -> tuple[dict[int, LegHit], bool]:
        """One leg's cards, ranked by their best chunk, from at least `needed` distinct cards when that
        many match; and whether the leg was cut at its candidate limit."""
        limit = CANDIDATES
        while True:
            hits = run(limit)
            ranking = card_ranking(hits, self.index.chunk_card)
            if len(hits) < limit:
                return ranking, False
            if len(ranking) >= needed or limit >= MAX_CANDIDATES:
                return ranking, True
            limit *= WIDEN

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-bm25")
        return self._executor


def _explain(
    f: Fused,
    legs: dict[str, dict[int, LegHit]],
    heading: str | None,
    multilingual: dict[int, LegHit] | None,
    ceiling: float | None = None,
) -> dict[str, Any]:
    """How a hit was ranked: each leg's rank, score and normalised score (and the keyword leg's ceiling, the
    best score this query could reach in this index: Index.keyword_ceiling), the weights, and why it moved."""
    explain: dict[str, Any] = {
        name: (
            {"rank": leg.rank, "score": round(leg.score, 6), "normalized": round(leg.normalized, 4)} if leg else None
        )
        for name in legs
        for leg in [f.legs.get(name)]
    }
    if ceiling is not None and explain.get("bm25"):
        explain["bm25"]["ceiling"] = round(ceiling, 6)
    explain.update({"weights": {n: LEG_WEIGHTS[n] for n in legs}, "demoted": f.demoted, "chunk_heading": heading})
    if f.lifted_by:  # its leg ranked it first: kept within the first places (keep_each_legs_first)
        explain["lifted_by"] = f.lifted_by
    if multilingual is not None:  # its word is in the vector leg's score; its own rank and cosine here
        own = multilingual.get(f.card)
        explain["multilingual"] = {"rank": own.rank, "score": round(own.score, 6)} if own else None
    return explain


def _is_pack(card: CardMeta) -> bool:
    """Whether an indexed card is a knowledge pack: a skill whose metadata says what scope it packs."""
    return bool(card.kind == "skill" and (card.data.get("metadata") or {}).get("kb-pack"))
