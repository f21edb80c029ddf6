"""Queries embedded through onnxruntime agree with PyTorch, are cached once per model, and anything
missing or different leaves queries on PyTorch. Real model (all-MiniLM-L6-v2)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import kbtool
from conftest import REPO_ROOT
from kbtool.search import onnx_queries
from kbtool.search.embeddings import SentenceTransformerEmbedder
from kbtool.search.evaluation import load_gold

QUERIES = [q.q for q in load_gold(REPO_ROOT / "tests" / "gold" / "starter.jsonl")]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kb-cache")


@pytest.fixture
def embedder(cache: Path, monkeypatch) -> SentenceTransformerEmbedder:
    monkeypatch.setenv("KB_CACHE_DIR", str(cache))
    return SentenceTransformerEmbedder()


def test_onnx_query_vectors_agree_with_pytorch(embedder):
    reference = np.stack([embedder.embed_query(q) for q in QUERIES])
    embedder.prepare_for_queries()
    assert embedder.fast_queries
    fast = np.stack([embedder.embed_query(q) for q in QUERIES])
    assert fast.dtype == np.float32 and fast.shape == reference.shape
    assert (fast * reference).sum(1).min() >= onnx_queries.AGREEMENT


def test_the_export_is_made_once_and_reused(embedder, cache):
    embedder.prepare_for_queries()
    exports = list((cache / "onnx").glob("*.onnx"))
    assert len(exports) == 1 and not list((cache / "onnx").glob("*.tmp"))
    made = exports[0].stat().st_mtime_ns
    again = SentenceTransformerEmbedder()
    again.prepare_for_queries()
    assert again.fast_queries and exports[0].stat().st_mtime_ns == made


def test_an_encoder_that_disagrees_is_not_used(embedder, monkeypatch):
    real = onnx_queries.OnnxQueryEncoder.encode
    monkeypatch.setattr(onnx_queries.OnnxQueryEncoder, "encode", lambda self, text: np.roll(real(self, text), 1))
    embedder.prepare_for_queries()
    assert not embedder.fast_queries
    assert (
        embedder.embed_query("paged attention") @ SentenceTransformerEmbedder().embed_query("paged attention") > 0.9999
    )


def test_without_onnxruntime_queries_stay_on_pytorch(embedder, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails, as in an install without it
    embedder.prepare_for_queries()
    assert not embedder.fast_queries
    assert embedder.embed_query("paged attention").shape == (embedder.dimension,)


def test_a_warm_process_ranks_as_a_cold_one(cache, monkeypatch, tmp_path):
    """The daemon's path (warm_in_background: fast queries, BM25 from postings in memory) returns what a
    one-shot search (PyTorch, FTS5) returns."""
    monkeypatch.setenv("KB_CACHE_DIR", str(cache))
    monkeypatch.delenv("KB_EMBEDDER", raising=False)
    cold = kbtool.open(REPO_ROOT, embedder=SentenceTransformerEmbedder())
    expected = {q: [h.id for h in cold.search(q).hits] for q in QUERIES}
    warm = kbtool.open(REPO_ROOT, embedder=SentenceTransformerEmbedder())
    warm.warm_in_background()
    warm._vectors_building.join()
    warm._preparing_queries.join()
    warm.index._postings_reading.join()
    assert warm.embedder.fast_queries and warm.index._postings is not None  # BM25 from memory too
    assert {q: [h.id for h in warm.search(q).hits] for q in QUERIES} == expected
