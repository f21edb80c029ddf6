"""Ranking across knowledge bases of different sizes (issue 45): a project of a dozen cards reading a large source.

    .venv/bin/python bench/bench_cross_kb_ranking.py [--corpus /work/shared/corpus/ml-engineering] [--cache DIR]

The project is tests/gold/cross-kb-project.json's (12 cards), its source a clone of the starter KB with the
corpus imported (~850 cards, ~2,100 chunks for ml-engineering), the real embedding model. Scored with MRR@10 and
recall@10 on two gold sets: tests/gold/cross-kb.jsonl (the project's cards, by exact title and by paraphrase)
and the corpus's own gold queries (tests/gold/ml-engineering.jsonl: the source's sections), the latter also on
the source searched alone, which the merge should not make worse. Three rankings of the merge: before (each leg
over its best raw score across the knowledge bases), with each knowledge base's BM25 over its own ceiling for
the query (kbtool.search.ranking.common_factors), and with exact titles first too (what kb does now).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean, median

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "process"))  # the test module whose helpers it uses

from kbtool.store.locate import cache_dir  # noqa: E402

# the tests' conftest (imported with the gold set's builder) points the model's ONNX export at a fresh temp folder:
# this bench uses the user's, made once
os.environ.setdefault("KB_CACHE_DIR", str(cache_dir()))

from test_cross_kb_ranking import project_with_source  # noqa: E402

import kbtool  # noqa: E402
import kbtool.search.across as across  # noqa: E402
import kbtool.search.ranking as ranking  # noqa: E402
from kbtool.search.evaluation import load_gold, score_query  # noqa: E402

GOLD = REPO / "tests" / "gold"
CEILINGS = ranking.common_factors
EXACT_TITLES = across.exact_titles_first


def scores(kb: kbtool.KnowledgeBase, gold: Path, by_class: bool = False) -> str:
    rows, took = [], []
    for item in load_gold(gold):
        started = time.perf_counter()
        hits = [h.model_dump() for h in kb.search(item.q, k=10).hits]
        took.append(time.perf_counter() - started)
        rows.append((item.kind, score_query(hits, item.relevant, 10)))
    groups = {"all": [s for _, s in rows]}
    if by_class:
        for kind in sorted({k for k, _ in rows if k}):
            groups["titles" if kind == "keyword" else kind + "s"] = [s for k, s in rows if k == kind]
    return (
        ", ".join(
            f"{name} (n={len(group)}) MRR@10 {mean(s['mrr@10'] for s in group):.3f} "
            f"recall@10 {mean(s['recall@10'] for s in group):.3f}"
            for name, group in groups.items()
        )
        + f"; a search {1000 * median(took):.0f} ms (p50)"
    )


def ranked_as(name: str) -> None:
    """Put the merge's ranking in one of the three states this bench compares."""

    def over_best_raw(tops: list[dict[str, float]], ceilings: list[float | None]) -> list[dict[str, float]]:
        return CEILINGS(tops, [None] * len(tops))  # no ceiling: each leg over its best raw score of all

    def as_scored(hits: list, query: str, own: str) -> list:
        return hits

    ranking.common_factors = over_best_raw if name == "before" else CEILINGS
    across.exact_titles_first = EXACT_TITLES if name == "now" else as_scored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus" / "ml-engineering")
    parser.add_argument("--cache", type=Path, help="keep the knowledge bases (and their vectors) here between runs")
    args = parser.parse_args()
    load = os.getloadavg()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
          f"{load[0]:.1f}; Python {platform.python_version()}; {when}")  # fmt: skip
    where = args.cache or Path(tempfile.mkdtemp(prefix="kb-cross-kb-"))
    started = time.monotonic()
    if (where / "project" / "kb.toml").exists():
        project = kbtool.open(where / "project")
    else:
        where.mkdir(parents=True, exist_ok=True)
        project = project_with_source(where, args.corpus, embedder=None)
    source = kbtool.open(where / "team")
    project.search("warm up: embeds what has no vector yet", k=1)
    source.search("warm up", k=1)
    print(f"{len(project.index.cards)} project cards, {len(source.index.cards)} source cards; "
          f"set up and embedded in {time.monotonic() - started:.0f} s\n")  # fmt: skip
    corpus_gold = GOLD / f"{args.corpus.name}.jsonl"
    print(f"source alone, {corpus_gold.name}: {scores(source, corpus_gold)}")
    for name in ("before", "ceilings", "now"):
        ranked_as(name)
        print(f"\n{name}:\n  project's cards: {scores(project, GOLD / 'cross-kb.jsonl', by_class=True)}")
        print(f"  source's sections ({corpus_gold.name}): {scores(project, corpus_gold)}")
    print(f"\n({time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
