"""Retrieval quality with the real model (all-MiniLM-L6-v2) on the starter KB, both shared corpora and
Hugging Face TGI's documentation (tests/corpus/tgi-docs, kept in the repository, so CI always scores it),
against gold queries in tests/gold/. The floors sit just under what was measured
(bench/RESULTS.md), so a ranking change that loses quality fails here.

Slow (embeds ~4k chunks on the CPU, a few minutes): it runs in CI; `pytest -m "not quality"` skips it.
"""

from __future__ import annotations

import pytest

import kbtool
from conftest import REPO_ROOT
from kbtool.search.embeddings import SentenceTransformerEmbedder
from kbtool.search.evaluation import PlainBM25, evaluate, load_gold, score_query
from kbtool.search.multilingual import cjk_share

pytestmark = pytest.mark.quality
CORPUS = REPO_ROOT.parent / "shared" / "corpus"
CORPORA = {
    "ml-engineering": CORPUS / "ml-engineering",
    "metainfer": CORPUS / "metainfer",
    "tgi-docs": REPO_ROOT / "tests" / "corpus" / "tgi-docs",
}
GOLD = REPO_ROOT / "tests" / "gold"

# (corpus, split) -> hybrid's floors of recall@10, hit@10, MRR@10, just under what was measured
# (bench/RESULTS.md); the starter set has no splits. Fusion was tuned on dev; test is held out.
FLOORS = {
    ("starter", None): (0.98, 1.0, 0.97),
    ("ml-engineering", "dev"): (0.95, 0.98, 0.86),
    ("ml-engineering", "test"): (0.91, 0.98, 0.92),
    # 20 English queries on Chinese-only notes joined the set with the multilingual leg; raised with the English
    # gloss of Chinese in the keyword index (bench/RESULTS.md)
    ("metainfer", "dev"): (0.74, 0.95, 0.80),
    ("metainfer", "test"): (0.74, 0.94, 0.82),
    ("tgi-docs", "dev"): (0.79, 0.82, 0.75),
    ("tgi-docs", "test"): (0.82, 0.91, 0.76),
}


@pytest.fixture(scope="session")
def embedder():
    """Queries embedded as the daemon and `kb serve` embed them (onnxruntime); documents by PyTorch."""
    embedder = SentenceTransformerEmbedder()
    embedder.prepare_for_queries()
    assert embedder.fast_queries
    return embedder


@pytest.fixture(scope="session")
def reports(embedder, tmp_path_factory):
    """(corpus, split) -> (kb's report per mode, the plain BM25 baseline's scores)."""
    out = {}
    kb = kbtool.open(REPO_ROOT, embedder=embedder)
    out[("starter", None)] = (evaluate(load_gold(GOLD / "starter.jsonl"), _searcher(kb)), None)
    for name, folder in CORPORA.items():
        if not folder.is_dir():
            continue
        kb = kbtool.init(tmp_path_factory.mktemp(name) / "kb")
        kb.import_path(folder)
        kb = kbtool.open(kb.root, embedder=embedder)
        kb.refresh_index()
        plain = PlainBM25.of_cards(kb.cards())
        for split in ("dev", "test"):
            gold = load_gold(GOLD / f"{name}.jsonl", split=split)
            scored = evaluate(gold, lambda q, k, mode, plain=plain: plain.search(q, k), modes=("plain",))
            baseline = scored["modes"]["plain"]
            out[(name, split)] = (evaluate(gold, _searcher(kb)), baseline)
        out[(name, "kb")] = kb
    return out


def _searcher(kb):
    return lambda q, k, mode: kb.search(q, k=k, mode=mode).to_json()["hits"]


def _report(reports, corpus, split):
    if (corpus, split) not in reports:
        pytest.skip(f"{CORPORA[corpus]} is not here (it lies beside the repository in CI)")
    return reports[(corpus, split)]


@pytest.mark.parametrize(("corpus", "split"), sorted(FLOORS, key=str))
def test_quality_floors(reports, corpus, split):
    scores = _report(reports, corpus, split)[0]["modes"]["hybrid"]
    recall, hit, mrr = FLOORS[(corpus, split)]
    assert scores["recall@10"] >= recall and scores["hit@10"] >= hit and scores["mrr@10"] >= mrr, scores


@pytest.mark.parametrize(
    ("corpus", "split"),
    [
        ("starter", None),
        ("ml-engineering", "dev"),
        ("metainfer", "dev"),
        ("ml-engineering", "test"),
        ("metainfer", "test"),
        ("tgi-docs", "dev"),
        ("tgi-docs", "test"),
    ],
)
def test_hybrid_is_at_least_as_good_as_the_better_single_mode(reports, corpus, split):
    """On MRR and hit@10, on every split (metainfer's test MRR was 0.004 under BM25's until identifiers were
    looked up as phrases; bench/RESULTS.md)."""
    modes = _report(reports, corpus, split)[0]["modes"]
    for metric in ("mrr@10", "hit@10"):
        best_single = max(modes["bm25"][metric], modes["vector"][metric])
        assert modes["hybrid"][metric] >= best_single, (metric, modes)


# English queries whose answers include sections of MetaInfer's Chinese notebooks: the share of those sections in
# hybrid's top 10, just under what was measured with the English gloss of Chinese in the keyword index (0.761 dev,
# 0.719 test; 0.724 and 0.643 without it: bench/RESULTS.md)
ENGLISH_TO_CHINESE_FLOORS = {"dev": 0.74, "test": 0.69}


@pytest.mark.parametrize("split", sorted(ENGLISH_TO_CHINESE_FLOORS))
def test_english_queries_find_the_chinese_notes(reports, split):
    kb = _report(reports, "metainfer", "kb")
    recalls = []
    for item in load_gold(GOLD / "metainfer.jsonl", split=split):
        chinese = tuple(r for r in item.relevant if r.startswith("notebooks-cn/"))
        if chinese and cjk_share(item.q) == 0:
            hits = kb.search(item.q, k=10, mode="hybrid").to_json()["hits"]
            recalls.append(score_query(hits, chinese, 10)["recall@10"])
    assert len(recalls) > 20 and sum(recalls) / len(recalls) >= ENGLISH_TO_CHINESE_FLOORS[split], recalls


@pytest.mark.parametrize(("corpus", "ratio"), [("ml-engineering", 1.05), ("metainfer", 1.3), ("tgi-docs", 1.15)])
def test_hybrid_beats_a_plain_bm25_baseline_on_held_out_queries(reports, corpus, ratio):
    report, plain = _report(reports, corpus, "test")
    hybrid = report["modes"]["hybrid"]
    assert hybrid["mrr@10"] >= ratio * plain["mrr@10"] and hybrid["hit@10"] >= plain["hit@10"], (hybrid, plain)
