"""One query against the index: filters narrow the cards, the BM25 and vector legs rank
chunks, fusion ranks cards, and the result is the stable JSON that other tools read:

    {"query": str, "hits": [{"id", "kind", "title", "status", "score", "path",
                             "source": {"path", "heading"} | null, "snippet"}]}
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .cards import STATUSES
from .embeddings import Embedder
from .errors import BadInput
from .fields import card_conditions, parse_filters
from .index import Index
from .search import LEG_WEIGHTS, card_ranking, clean_query, fuse, phrases, query_terms, snippet
from .validation import model_for
from .vocabulary import MODES

CANDIDATES = 200  # chunks each leg hands to fusion
MAX_K = 1000


@dataclass(frozen=True)
class SearchRequest:
    query: str
    k: int = 10
    kind: str | None = None
    status: str | None = None
    tags: tuple[str, ...] = ()
    where: tuple[str, ...] = ()
    mode: str = "hybrid"
    explain: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchRequest:
        """From JSON (a --batch line, an MCP call): unknown keys and wrong types are refused."""
        known = {f for f in cls.__dataclass_fields__}
        extra = set(data) - known - {"q"}
        if extra:
            raise BadInput(f"unknown search option(s): {', '.join(sorted(extra))}")
        data = dict(data)
        if "q" in data:
            data["query"] = data.pop("q")
        for key in ("tags", "where"):
            value = data.get(key, ())
            data[key] = (value,) if isinstance(value, str) else tuple(value)
        request = cls(**data)
        request.validate()
        return request

    def validate(self) -> None:
        if not isinstance(self.query, str):
            raise BadInput("the query must be a string")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= MAX_K:
            raise BadInput(f"k must be a whole number from 1 to {MAX_K}")
        if self.mode not in MODES:
            raise BadInput(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.kind is not None and self.kind != "skill":  # skills are indexed beside the cards
            model_for(self.kind)
        if self.status is not None and self.status not in STATUSES:
            raise BadInput(f"status {self.status!r} is not one of {', '.join(STATUSES)}")


@dataclass
class Searcher:
    """Runs requests against one index; holds the embedder so a warm process embeds fast."""

    index: Index
    embedder: Embedder | None
    _query_vectors: dict[str, Any] = field(default_factory=dict)
    _executor: ThreadPoolExecutor | None = None

    def _query_vector(self, text: str) -> Any:
        vec = self._query_vectors.get(text)
        if vec is None:
            assert self.embedder is not None
            vec = self.embedder.embed_query(text)
            if len(self._query_vectors) > 2048:
                self._query_vectors.clear()
            self._query_vectors[text] = vec
        return vec

    def search(self, request: SearchRequest) -> dict[str, Any]:
        request.validate()
        text = clean_query(request.query)
        if not text:
            raise BadInput("empty query: say what to look for")
        filters = parse_filters(request.where)
        cards = self.index.cards
        allowed = self.index.matching(card_conditions(request.kind, request.status, request.tags, filters))

        terms = query_terms(text)
        legs: dict[str, dict[int, Any]] = {}
        truncated: set[str] = set()  # legs cut at CANDIDATES chunks: more matched than they returned
        lexical = None
        if request.mode in ("hybrid", "bm25"):
            chunk_filter = self.index.chunks_of(allowed) if allowed is not None else None
            if terms and allowed != set():
                # SQLite, numpy and torch release the GIL: the BM25 leg runs while the query is embedded
                lexical = self._pool().submit(self.index.lexical, phrases(terms), chunk_filter, CANDIDATES)
            else:
                legs["bm25"] = {}
        if request.mode in ("hybrid", "vector") and self.embedder is not None and allowed != set():
            mask = self.index.allowed_mask(self.embedder, allowed) if allowed is not None else None
            # the model reads at most ~256 word pieces; embedding a 100 KB query would only cost time
            hits = self.index.vector(self.embedder, self._query_vector(text[:2000]), mask, CANDIDATES)
            legs["vector"] = card_ranking(hits, self.index.chunk_card)
            truncated |= {"vector"} if len(hits) >= CANDIDATES else set()
        if lexical is not None:
            chunks = lexical.result()
            legs = {"bm25": card_ranking(chunks, self.index.chunk_card), **legs}
            truncated |= {"bm25"} if len(chunks) >= CANDIDATES else set()
        fused = fuse(legs, self.index.statuses, truncated)[: request.k]
        rows = self.index.chunk_rows(f.best_chunk for f in fused)
        hits_out = []
        for f in fused:
            card = cards[f.card]
            heading, chunk_text = rows.get(f.best_chunk, (None, ""))
            source = card.data.get("source")
            hit: dict[str, Any] = {
                "id": card.id,
                "kind": card.kind,
                "title": card.title,
                "status": card.status,
                "score": round(f.score, 6),
                "path": card.path,
                "source": {key: source.get(key) for key in ("path", "heading", "url")} if source else None,
                "snippet": snippet(chunk_text.split("\n", 1)[-1] if heading else chunk_text, terms),
            }
            if request.explain:
                hit["explain"] = {
                    name: (
                        {"rank": leg.rank, "score": round(leg.score, 6), "normalized": round(leg.normalized, 4)}
                        if leg
                        else None
                    )
                    for name in legs
                    for leg in [f.legs.get(name)]
                }
                hit["explain"].update(
                    {"weights": {n: LEG_WEIGHTS[n] for n in legs}, "demoted": f.demoted, "chunk_heading": heading}
                )
            hits_out.append(hit)
        return {"query": request.query, "hits": hits_out}

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-bm25")
        return self._executor
