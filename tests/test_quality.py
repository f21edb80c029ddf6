"""Retrieval quality with the real model (all-MiniLM-L6-v2) on the starter KB and both shared
corpora, against gold queries in tests/gold/. The floors sit just under what was measured
(bench/RESULTS.md), so a ranking change that loses quality fails here.

Slow (embeds ~4k chunks on the CPU, a few minutes): it runs in CI; `pytest -m "not quality"` skips it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import kbtool
from conftest import REPO_ROOT
from kbtool.embeddings import SentenceTransformerEmbedder
from kbtool.evaluation import PlainBM25, evaluate, load_gold

pytestmark = pytest.mark.quality
CORPUS = REPO_ROOT.parent / "shared" / "corpus"
GOLD = REPO_ROOT / "tests" / "gold"

# (corpus, mode) -> floors of recall@10, hit@10, MRR@10
FLOORS = {
    ("starter", "hybrid"): (0.9, 1.0, 0.9),
    ("ml-engineering", "hybrid"): (0.95, 0.97, 0.78),
    ("metainfer", "hybrid"): (0.66, 0.97, 0.78),
}


@pytest.fixture(scope="session")
def embedder():
    return SentenceTransformerEmbedder()


@pytest.fixture(scope="session")
def reports(embedder, tmp_path_factory):
    out = {}
    kb = kbtool.open(REPO_ROOT, embedder=embedder)
    out["starter"] = (evaluate(load_gold(GOLD / "starter.jsonl"), _searcher(kb)), None)
    for name in ("ml-engineering", "metainfer"):
        if not (CORPUS / name).is_dir():
            continue
        kb = kbtool.init(tmp_path_factory.mktemp(name) / "kb")
        kb.import_path(CORPUS / name)
        kb = kbtool.open(kb.root, embedder=embedder)
        kb.refresh_index()
        gold = load_gold(GOLD / f"{name}.jsonl")
        plain = PlainBM25([({"id": s.id, "path": s.path, "source": s.to_dict(body=False).get("source")},
                            f"{s.card.title}\n{s.body}") for s in kb.cards()])
        baseline = evaluate(gold, lambda q, k, mode: plain.search(q, k), modes=("plain",))["modes"]["plain"]
        out[name] = (evaluate(gold, _searcher(kb)), baseline)
    return out


def _searcher(kb):
    return lambda q, k, mode: kb.search(q, k=k, mode=mode)["hits"]


@pytest.mark.parametrize(("corpus", "mode"), sorted(FLOORS))
def test_quality_floors(reports, corpus, mode):
    if corpus not in reports:
        pytest.skip(f"{CORPUS / corpus} is not here (it lies beside the repository in CI)")
    report, _ = reports[corpus]
    scores = report["modes"][mode]
    recall, hit, mrr = FLOORS[(corpus, mode)]
    assert scores["recall@10"] >= recall and scores["hit@10"] >= hit and scores["mrr@10"] >= mrr, scores


# Not asserted on the starter gold set: with 19 queries one tie-break moves MRR by 0.026, so
# the comparison says nothing there (measured: hybrid 0.947, bm25 0.974, vector 0.879 MRR@10;
# bench/RESULTS.md). Its floors above still hold it to recall 0.9, hit 1.0, MRR 0.9.
@pytest.mark.parametrize("corpus", ["ml-engineering", "metainfer"])
def test_hybrid_is_at_least_as_good_as_the_better_single_mode(reports, corpus):
    if corpus not in reports:
        pytest.skip(f"{CORPUS / corpus} is not here")
    modes = reports[corpus][0]["modes"]
    for metric in ("mrr@10", "hit@10"):
        best_single = max(modes["bm25"][metric], modes["vector"][metric])
        assert modes["hybrid"][metric] >= best_single, (metric, modes)


@pytest.mark.parametrize("corpus", ["ml-engineering", "metainfer"])
def test_hybrid_beats_a_plain_bm25_baseline(reports, corpus):
    if corpus not in reports:
        pytest.skip(f"{CORPUS / corpus} is not here")
    report, plain = reports[corpus]
    hybrid = report["modes"]["hybrid"]
    assert hybrid["mrr@10"] > plain["mrr@10"] and hybrid["recall@10"] > plain["recall@10"], (hybrid, plain)
