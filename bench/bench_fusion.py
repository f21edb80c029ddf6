"""Fusion candidates on the gold sets, scored from one capture of each query's two legs.

    .venv/bin/python bench/bench_fusion.py [--split dev|test] [--corpus NAME] [--plain]

Runs every gold query of the split once through kb's hybrid search (the corpora cached by
bench/bench_quality.py under $KB_BENCH_CACHE), keeps what the BM25 and vector legs handed to fusion,
and ranks the cards again with each candidate below: the candidates see exactly the legs kb sees, so
they differ only in how they combine them. Choose on dev; report test once. --plain lists instead the
queries where a plain BM25 ranks the first answer above kb's BM25 leg.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_quality import GOLD, corpus_kb  # noqa: E402

import kbtool.search.pipeline as pipeline  # noqa: E402
from kbtool.search import ranking  # noqa: E402
from kbtool.search.embeddings import SentenceTransformerEmbedder  # noqa: E402
from kbtool.search.evaluation import PlainBM25, hit_keys, load_gold, score_query  # noqa: E402

Legs = dict[str, dict[int, ranking.LegHit]]
Fusion = Callable[[Legs, set[str], list[str]], list[int]]  # (legs, truncated legs, statuses) -> cards, best first


def capture(kb: Any, queries: list[str]) -> list[tuple[Legs, set[str]]]:
    """Each query's legs and truncated set, as kb's pipeline passes them to fuse()."""
    seen: list[tuple[Legs, set[str]]] = []
    original = pipeline.fuse

    def spy(legs: Legs, statuses: list[str], truncated: Any = (), **kw: Any) -> list[ranking.Fused]:
        seen.append((copy.deepcopy(legs), set(truncated)))
        return original(legs, statuses, truncated, **kw)

    pipeline.fuse = spy
    try:
        for q in queries:
            kb.search(q, k=10, mode="hybrid")
    finally:
        pipeline.fuse = original
    return seen


def order(scores: dict[int, float]) -> list[int]:
    return [c for c, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def convex(w: float, scale: ranking.Scale | None = None) -> Fusion:
    """kb's fuse(): BM25 over its best at weight w, the cosine over its best or through a fixed scale."""
    weights = {"bm25": w, "vector": 1 - w}
    scales = {"vector": scale} if scale else None
    return lambda legs, cut, statuses: [
        f.card for f in ranking.fuse(copy.deepcopy(legs), statuses, cut, weights, scales)
    ]


def rrf(k: float) -> Fusion:
    def fused(legs: Legs, cut: set[str], statuses: list[str]) -> list[int]:
        out: dict[int, float] = {}
        for hits in legs.values():
            for card, h in hits.items():
                out[card] = out.get(card, 0.0) + 1 / (k + h.rank)
        return order(out)

    return fused


def _top_stats(hits: dict[int, ranking.LegHit], depth: int = 50) -> tuple[float, float]:
    top = sorted((h.score for h in hits.values()), reverse=True)[:depth]
    mean = sum(top) / len(top)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in top) / len(top)) or 1.0


def zscore(w: float) -> Fusion:
    """Each leg's z-score over its top 50; a card a leg did not return gets the leg's lowest."""

    def fused(legs: Legs, cut: set[str], statuses: list[str]) -> list[int]:
        out: dict[int, float] = {}
        cards = {c for hits in legs.values() for c in hits}
        for name, hits in legs.items():
            if hits:
                mean, sd = _top_stats(hits)
                z = {c: (h.score - mean) / sd for c, h in hits.items()}
                for card in cards:
                    out[card] = out.get(card, 0.0) + (w if name == "bm25" else 1 - w) * z.get(card, min(z.values()))
        return order(out)

    return fused


def dbsf(w: float) -> Fusion:
    """Distribution-based score fusion: each leg's mean +- 3 standard deviations (top 50) mapped to 0-1."""

    def fused(legs: Legs, cut: set[str], statuses: list[str]) -> list[int]:
        out: dict[int, float] = {}
        for name, hits in legs.items():
            if hits:
                mean, sd = _top_stats(hits)
                scale = ranking.Scale(mean - 3 * sd, mean + 3 * sd)
                for card, h in hits.items():
                    out[card] = out.get(card, 0.0) + (w if name == "bm25" else 1 - w) * scale.of(h.score)
        return order(out)

    return fused


def with_bonus(first: float, rrf_share: float, k: int = 10) -> Fusion:
    """kb's fusion plus a bonus for each leg's first card, or a share of reciprocal rank."""

    def fused(legs: Legs, cut: set[str], statuses: list[str]) -> list[int]:
        out = {}
        for f in ranking.fuse(copy.deepcopy(legs), statuses, cut):
            out[f.card] = f.score + sum(first * (h.rank == 1) + rrf_share / (k + h.rank) for h in f.legs.values())
        return order(out)

    return fused


CANDIDATES: dict[str, Fusion] = {
    "kb: convex, each over its best, 0.6/0.4": convex(0.6),
    **{f"convex over best {w}/{1 - w:.1f}": convex(w) for w in (0.5, 0.7)},
    **{
        f"cosine through {lo}-{hi}, {w}/{1 - w:.1f}": convex(w, ranking.Scale(lo, hi))
        for lo, hi in ((0.2, 0.8), (0.3, 0.8), (0.35, 0.75), (0.4, 0.8))
        for w in (0.5, 0.6)
    },
    **{f"rrf k{k}": rrf(k) for k in (10, 60)},
    **{f"z-score {w}/{1 - w:.1f}": zscore(w) for w in (0.5, 0.6)},
    **{f"dbsf {w}/{1 - w:.1f}": dbsf(w) for w in (0.5, 0.6)},
    **{f"kb + first-place bonus {b}": with_bonus(b, 0.0) for b in (0.05, 0.1)},
    **{f"kb + rrf share {r}": with_bonus(0.0, r) for r in (0.5, 1.0)},
}


def first_rank(hits: list[dict[str, Any]], relevant: tuple[str, ...]) -> int | None:
    for rank, found in enumerate(hits, 1):
        if hit_keys(found) & set(relevant):
            return rank
    return None


def bm25_against_plain(kb: Any, gold: list[Any]) -> None:
    """The queries where the plain BM25 ranks the first answer higher than kb's BM25 leg."""
    plain = PlainBM25.of_cards(kb.cards())
    for g in gold:
        ours = first_rank(kb.search(g.q, k=20, mode="bm25").to_json()["hits"], g.relevant)
        theirs = first_rank(plain.search(g.q, 20), g.relevant)
        if theirs is not None and (ours is None or ours > theirs):
            print(f"  plain {theirs} kb {ours}: {g.q}  -> {g.relevant[0]}")


def score(kb: Any, gold: list[Any]) -> None:
    captured = capture(kb, [g.q for g in gold])
    cards, statuses = kb.index.cards, kb.index.statuses

    def hit(i: int) -> dict[str, Any]:
        return {"id": cards[i].id, "path": cards[i].path, "source": cards[i].data.get("source")}

    for label, fusion in CANDIDATES.items():
        mrr = recall = 0.0
        for g, (legs, cut) in zip(gold, captured, strict=True):
            scores = score_query([hit(i) for i in fusion(legs, cut, statuses)[:10]], g.relevant, 10)
            mrr, recall = mrr + scores["mrr@10"], recall + scores["recall@10"]
        print(f"  {label:<40} MRR@10 {mrr / len(gold):.3f}  R@10 {recall / len(gold):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--corpus", action="append", help="ml-engineering and/or metainfer (default: both)")
    parser.add_argument("--plain", action="store_true", help="list where a plain BM25 beats kb's BM25 leg")
    args = parser.parse_args()
    embedder = SentenceTransformerEmbedder()
    for name in args.corpus or ["ml-engineering", "metainfer"]:
        kb = corpus_kb(name, embedder, False)
        gold = load_gold(GOLD / f"{name}.jsonl", split=args.split)
        print(f"{name} ({args.split}: {len(gold)} queries)")
        (bm25_against_plain if args.plain else score)(kb, gold)


if __name__ == "__main__":
    main()
