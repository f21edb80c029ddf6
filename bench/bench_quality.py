"""Retrieval quality on the shared corpora's gold sets, per split, against a plain BM25 baseline.

    .venv/bin/python bench/bench_quality.py [--split test] [--rebuild]

Imports each corpus (../shared/corpus/ml-engineering, metainfer) into a knowledge base cached under
$KB_BENCH_CACHE (default: the temp folder), indexes it with the real model, and scores bm25,
vector and hybrid search, and the plain BM25 baseline (one document per section, no stemming,
fields or vectors), on the gold queries of one split: dev is for tuning, test for reporting.
The targets: hybrid MRR@10 >= 1.2x plain BM25, recall@10 >= 0.95, and hybrid at least as good as
its better single leg.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import kbtool  # noqa: E402
from kbtool.search.embeddings import SentenceTransformerEmbedder  # noqa: E402
from kbtool.search.evaluation import PlainBM25, evaluate, load_gold  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
GOLD = REPO / "tests" / "gold"


def corpus_kb(name: str, embedder, rebuild: bool) -> kbtool.KnowledgeBase:
    cache = Path(os.environ.get("KB_BENCH_CACHE", Path(tempfile.gettempdir()) / "kb-bench-cache")) / name
    if rebuild and cache.exists():
        shutil.rmtree(cache)
    if not (cache / "kb.toml").exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        kbtool.init(cache, name=name).import_path(CORPUS / name)
    kb = kbtool.open(cache, embedder=embedder)
    kb.refresh_index()
    return kb


def plain_baseline(kb: kbtool.KnowledgeBase) -> PlainBM25:
    return PlainBM25.of_cards(kb.cards())


def report(name: str, kb: kbtool.KnowledgeBase, split: str) -> dict:
    gold = load_gold(GOLD / f"{name}.jsonl", split=split)
    plain = plain_baseline(kb)
    ours = evaluate(gold, lambda q, k, mode: kb.search(q, k=k, mode=mode).to_json()["hits"])["modes"]
    base = evaluate(gold, lambda q, k, mode: plain.search(q, k), modes=("plain",))["modes"]["plain"]
    print(f"{name} ({split}: {len(gold)} queries)")
    for mode, scores in [*ours.items(), ("plain bm25", base)]:
        print(
            f"  {mode:<10} R@10 {scores['recall@10']:.3f}  MRR@10 {scores['mrr@10']:.3f}  "
            f"nDCG@10 {scores['ndcg@10']:.3f}"
            f"  missed {len(scores['missed'])}"
        )
    ratio = ours["hybrid"]["mrr@10"] / base["mrr@10"] if base["mrr@10"] else float("inf")
    best = max(ours["bm25"]["mrr@10"], ours["vector"]["mrr@10"])
    print(
        f"  hybrid / plain BM25 MRR@10: {ratio:.2f}x (target >= 1.2x); hybrid vs its better leg: "
        f"{ours['hybrid']['mrr@10'] - best:+.3f}"
    )
    return ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--rebuild", action="store_true", help="re-import and re-index the cached corpora")
    parser.add_argument("--corpus", action="append", help="ml-engineering and/or metainfer (default: both)")
    args = parser.parse_args()
    embedder = SentenceTransformerEmbedder()
    for name in args.corpus or ["ml-engineering", "metainfer"]:
        started = time.perf_counter()
        kb = corpus_kb(name, embedder, args.rebuild)
        report(name, kb, None if args.split == "all" else args.split)
        print(f"  ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
