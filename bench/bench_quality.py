"""Retrieval quality on the shared corpora's gold sets, per split, against a plain BM25 baseline.

    .venv/bin/python bench/bench_quality.py [--split test] [--rebuild]

Imports each corpus (../shared/corpus/ml-engineering, metainfer; tests/corpus/tgi-docs) into a knowledge
base cached under $KB_BENCH_CACHE (default: the temp folder), indexes it with the real model, and scores bm25,
vector and hybrid search, and the plain BM25 baseline (one document per section, no stemming,
fields or vectors), on the gold queries of one split: dev is for tuning, test for reporting.
The targets: hybrid MRR@10 >= 1.15x plain BM25, recall@10 >= 0.95, and hybrid at least as good as
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
from kbtool.search.evaluation import evaluate_kb, load_gold  # noqa: E402
from kbtool.surfaces.cli.search import report_lines  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
CORPORA = {
    "ml-engineering": CORPUS / "ml-engineering",
    "metainfer": CORPUS / "metainfer",
    "tgi-docs": REPO / "tests" / "corpus" / "tgi-docs",  # Hugging Face TGI's documentation, Apache-2.0
}
GOLD = REPO / "tests" / "gold"


def corpus_kb(name: str, embedder, rebuild: bool) -> kbtool.KnowledgeBase:
    cache = Path(os.environ.get("KB_BENCH_CACHE", Path(tempfile.gettempdir()) / "kb-bench-cache")) / name
    if rebuild and cache.exists():
        shutil.rmtree(cache)
    if not (cache / "kb.toml").exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        kbtool.init(cache, name=name).import_path(CORPORA[name])
    kb = kbtool.open(cache, embedder=embedder)
    kb.refresh_index()
    return kb


def report(name: str, kb: kbtool.KnowledgeBase, split: str | None) -> None:
    """kb eval's report, overall and per query class with 95% bootstrap intervals, then the targets."""
    result = evaluate_kb(kb, load_gold(GOLD / f"{name}.jsonl", split=split), split=split)
    print(f"{name}: " + "\n".join(report_lines(result)))
    modes = result.overall.modes
    ratio = result.overall.ratio["mrr@10"]
    best = max(modes["bm25"].metrics["mrr@10"].value, modes["vector"].metrics["mrr@10"].value)
    print(
        f"  targets: hybrid/plain BM25 MRR@10 {ratio.value if ratio else 0:.2f}x (>= 1.15x), recall@10 "
        f"{modes['hybrid'].metrics['recall@10'].value:.3f} (>= 0.95); hybrid vs its better leg "
        f"{modes['hybrid'].metrics['mrr@10'].value - best:+.3f} (>= 0)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--rebuild", action="store_true", help="re-import and re-index the cached corpora")
    parser.add_argument("--corpus", action="append", help=f"one of {', '.join(CORPORA)} (default: all)")
    args = parser.parse_args()
    embedder = SentenceTransformerEmbedder()
    for name in args.corpus or list(CORPORA):
        started = time.perf_counter()
        kb = corpus_kb(name, embedder, args.rebuild)
        report(name, kb, None if args.split == "all" else args.split)
        print(f"  ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
