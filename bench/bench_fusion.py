"""Fusion candidates on the gold sets, scored from one capture of each query's two legs.

    .venv/bin/python bench/bench_fusion.py [--split dev|test] [--corpus NAME]

Runs every gold query of the split once through kb's hybrid search (the corpora cached by
bench/bench_quality.py under $KB_BENCH_CACHE), keeps what the BM25 and vector legs handed to fusion,
and ranks the cards again with each fusion candidate below: the candidates see exactly the legs kb
sees, so they differ only in how they combine them. Choose on dev; report test once.
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


def capture(kb: Any, queries: list[str]) -> list[tuple[Legs, set[str]]]:
    """Each query's legs and truncated set, as kb's pipeline passes them to fuse()."""
    seen: list[tuple[Legs, set[str]]] = []
    original = pipeline.fuse

    def spy(legs: Legs, statuses: list[str], truncated: Any = (), **kw: Any) -> list[ranking.Fused]:
        seen.append((copy.deepcopy(legs), set(truncated)))
        return original(legs, statuses, truncated, **kw)

    pipeline.fuse = spy  # type: ignore[assignment]
    try:
        for q in queries:
            kb.search(q, k=10, mode="hybrid")
    finally:
        pipeline.fuse = original
    return seen


def order(scores: dict[int, float]) -> list[int]:
    return [c for c, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def convex_max(legs: Legs, w: float = 0.6) -> list[int]:
    """Today's: each leg over its best, 0.6 / 0.4."""
    out: dict[int, float] = {}
    for name, weight in (("bm25", w), ("vector", 1 - w)):
        hits = legs.get(name) or {}
        top = max((h.score for h in hits.values()), default=0.0)
        for card, h in hits.items():
            out[card] = out.get(card, 0.0) + weight * (h.score / top if top > 0 else 0.0)
    return order(out)


def rrf(legs: Legs, k: float = 60, w: float = 0.5) -> list[int]:
    out: dict[int, float] = {}
    for name, weight in (("bm25", w), ("vector", 1 - w)):
        for card, h in (legs.get(name) or {}).items():
            out[card] = out.get(card, 0.0) + weight / (k + h.rank)
    return order(out)


def _stats(values: list[float], depth: int) -> tuple[float, float]:
    top = sorted(values, reverse=True)[:depth]
    mean = sum(top) / len(top)
    sd = math.sqrt(sum((v - mean) ** 2 for v in top) / len(top)) or 1.0
    return mean, sd


def zscore(legs: Legs, w: float = 0.5, depth: int = 50) -> list[int]:
    out: dict[int, float] = {}
    for name, weight in (("bm25", w), ("vector", 1 - w)):
        hits = legs.get(name) or {}
        if not hits:
            continue
        mean, sd = _stats([h.score for h in hits.values()], depth)
        floor = min((h.score - mean) / sd for h in hits.values())
        for card in set(out) | set(hits):
            z = (hits[card].score - mean) / sd if card in hits else floor
            out[card] = out.get(card, 0.0) + weight * z
    return order(out)


def calibrated(legs: Legs, w: float = 0.6, lo: float = 0.2, hi: float = 0.7, bm25_norm: str = "max") -> list[int]:
    """BM25 over its best; cosine mapped by a fixed per-model line from lo (0) to hi (1), clipped."""
    out: dict[int, float] = {}
    hits = legs.get("bm25") or {}
    top = max((h.score for h in hits.values()), default=0.0)
    for card, h in hits.items():
        out[card] = w * (h.score / top if top > 0 else 0.0)
    for card, h in (legs.get("vector") or {}).items():
        out[card] = out.get(card, 0.0) + (1 - w) * min(1.0, max(0.0, (h.score - lo) / (hi - lo)))
    return order(out)


def dbsf(legs: Legs, w: float = 0.5, depth: int = 50) -> list[int]:
    """Distribution-based score fusion: each leg's mean +- 3 standard deviations mapped to 0-1."""
    out: dict[int, float] = {}
    for name, weight in (("bm25", w), ("vector", 1 - w)):
        hits = legs.get(name) or {}
        if not hits:
            continue
        mean, sd = _stats([h.score for h in hits.values()], depth)
        lo, hi = mean - 3 * sd, mean + 3 * sd
        for card, h in hits.items():
            out[card] = out.get(card, 0.0) + weight * min(1.0, max(0.0, (h.score - lo) / (hi - lo)))
    return order(out)


def with_bonus(legs: Legs, cut: set[str], statuses: list[str], first: float, rrf_weight: float, k: int = 10) -> list[int]:
    """kb's fusion plus a bonus for each leg's first card and a share of reciprocal rank."""
    fused = ranking.fuse(copy.deepcopy(legs), statuses, cut)
    out = {}
    for f in fused:
        extra = sum(first * (h.rank == 1) + rrf_weight / (k + h.rank) for h in f.legs.values())
        out[f.card] = f.score + extra
    return order(out)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--corpus", action="append")
    parser.add_argument("--plain", action="store_true", help="list where plain BM25 beats kb's BM25 leg")
    args = parser.parse_args()
    embedder = SentenceTransformerEmbedder()
    candidates: dict[str, Callable[[Legs], list[int]] | None] = {"kb fuse": None, "convex max 0.6": convex_max}
    for w in (0.4, 0.5, 0.7):
        candidates[f"convex max {w}"] = lambda legs, w=w: convex_max(legs, w)
    for k in (10, 60):
        candidates[f"rrf k{k}"] = lambda legs, k=k: rrf(legs, k)
    for w in (0.5, 0.6):
        candidates[f"zscore {w}"] = lambda legs, w=w: zscore(legs, w)
    for lo, hi in ((0.1, 0.7), (0.2, 0.7), (0.2, 0.8), (0.3, 0.8)):
        for w in (0.5, 0.6):
            candidates[f"cal {lo}-{hi} w{w}"] = lambda legs, lo=lo, hi=hi, w=w: calibrated(legs, w, lo, hi)
    for w in (0.5, 0.6):
        candidates[f"dbsf {w}"] = lambda legs, w=w: dbsf(legs, w)
    for w in (0.65, 0.7):
        candidates[f"cal 0.2-0.8 w{w}"] = lambda legs, w=w: calibrated(legs, w, 0.2, 0.8)
    for lo, hi in ((0.3, 0.8), (0.35, 0.75)):
        for w in (0.5, 0.6):
            scale = {"vector": ranking.Scale(lo, hi)}
            weights = {"bm25": w, "vector": 1 - w}
            candidates[f"fuse scale {lo}-{hi} w{w}"] = (weights, scale)  # type: ignore[assignment]
    bonuses = [(b, 0.0) for b in (0.05, 0.1, 0.2)] + [(0.0, r) for r in (0.5, 1.0, 2.0)]
    for name in args.corpus or ["ml-engineering", "metainfer"]:
        kb = corpus_kb(name, embedder, False)
        gold = load_gold(GOLD / f"{name}.jsonl", split=args.split)
        if args.plain:
            bm25_against_plain(kb, gold)
            continue
        captured = capture(kb, [g.q for g in gold])
        cards = kb.index.cards

        def hit(i: int) -> dict[str, Any]:
            c = cards[i]
            return {"id": c.id, "path": c.path, "source": c.data.get("source")}

        print(f"{name} ({args.split}: {len(gold)} queries)")
        for b, r in bonuses:
            candidates[f"bonus first {b} rrf {r}"] = f"{b} {r}"  # type: ignore[assignment]
        for label, fusion in candidates.items():
            totals = {"mrr@10": 0.0, "recall@10": 0.0}
            for g, (legs, cut) in zip(gold, captured, strict=True):
                if isinstance(fusion, str):
                    b, r = map(float, fusion.split())
                    ranked = with_bonus(legs, cut, kb.index.statuses, b, r)
                elif fusion is None or isinstance(fusion, tuple):
                    weights, scales = fusion or (ranking.LEG_WEIGHTS, None)
                    ranked = [f.card for f in ranking.fuse(copy.deepcopy(legs), kb.index.statuses, cut, weights, scales)]
                else:
                    ranked = fusion(legs)
                scores = score_query([hit(i) for i in ranked[:10]], g.relevant, 10)
                for key in totals:
                    totals[key] += scores[key]
            print(f"  {label:<22} MRR@10 {totals['mrr@10'] / len(gold):.3f}  R@10 {totals['recall@10'] / len(gold):.3f}")


if __name__ == "__main__":
    main()
