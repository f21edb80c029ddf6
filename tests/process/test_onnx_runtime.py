"""One embedding runtime a process: with onnxruntime installed and its export agreeing with PyTorch,
documents and queries are embedded through it and torch is never imported; the vectors are PyTorch's
within cosine 0.9999, so the index (keyed by model, not runtime) keeps them; anything missing or
different leaves the process on PyTorch. Real model (all-MiniLM-L6-v2) on the starter KB's cards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kbtool
from conftest import REPO_ROOT
from kbtool.search import onnx_encoder
from kbtool.search.embeddings import SentenceTransformerEmbedder
from kbtool.search.evaluation import load_gold

QUERIES = [q.q for q in load_gold(REPO_ROOT / "tests" / "gold" / "starter.jsonl")]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kb-cache")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    kb = kbtool.open(REPO_ROOT)
    kb.refresh_index(semantic=False)
    return [row[0] for row in kb.index.db.execute("SELECT text FROM chunks ORDER BY id")]


@pytest.fixture
def embedder(cache: Path, monkeypatch) -> SentenceTransformerEmbedder:
    monkeypatch.setenv("KB_CACHE_DIR", str(cache))
    return SentenceTransformerEmbedder()


def test_document_vectors_agree_with_pytorch_on_every_card(embedder, texts):
    onnx = embedder.embed_documents(texts)
    assert embedder.runtime == "onnxruntime"
    torch = SentenceTransformerEmbedder(runtime="torch")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KB_EMBED_PRECISION", "fp32")
        reference = torch.embed_documents(texts)
    assert onnx.dtype == np.float32 and onnx.shape == reference.shape == (len(texts), embedder.dimension)
    assert (onnx * reference).sum(1).min() >= 0.9999
    queries = np.stack([embedder.embed_query(q) for q in QUERIES])
    assert (queries * np.stack([torch.embed_query(q) for q in QUERIES])).sum(1).min() >= 0.9999
    assert embedder.model_id == torch.model_id  # stored vectors are keyed alike: a runtime switch re-embeds nothing


def test_a_process_on_onnxruntime_never_imports_torch(cache, tmp_path):
    """Vectors built and a hybrid search answered, as a daemon does; sys.modules checked at the end."""
    clone = tmp_path / "starter"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    script = (
        "import json, sys, kbtool\n"
        f"kb = kbtool.open({str(clone)!r})\n"
        "kb.refresh_index()\n"
        "assert kb.index.db.execute('SELECT count(*) FROM vectors').fetchone()[0] > 0\n"
        "hits = kb.search('NVFP4 MoE decode throughput').hits\n"
        "torch = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'sentence_transformers'))\n"
        "print(json.dumps({'hits': len(hits), 'runtime': kb.embedder.runtime, 'torch': torch}))\n"
    )
    env = {**os.environ, "KB_CACHE_DIR": str(cache), "KB_DAEMON": "0"}
    env.pop("KB_EMBEDDER", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {"hits": seen["hits"], "runtime": "onnxruntime", "torch": []} and seen["hits"] > 0


def test_the_export_is_made_once_and_reused(embedder, cache):
    embedder.prepare_for_queries()
    exports = list((cache / "onnx").glob("*.onnx"))
    assert len(exports) == 1 and len(list((cache / "onnx").glob("*.probes.npy"))) == 1
    assert not list((cache / "onnx").glob("*.tmp"))
    made = exports[0].stat().st_mtime_ns
    again = SentenceTransformerEmbedder()
    again.prepare_for_queries()
    assert again.fast_queries and exports[0].stat().st_mtime_ns == made


def test_an_encoder_that_disagrees_is_not_used(embedder, monkeypatch):
    real = onnx_encoder.OnnxEncoder.encode_many
    monkeypatch.setattr(onnx_encoder.OnnxEncoder, "encode_many", lambda self, texts: np.roll(real(self, texts), 1))
    assert embedder.embed_documents(["paged attention"]).shape == (1, embedder.dimension)
    assert embedder.runtime == "torch"
    reference = SentenceTransformerEmbedder(runtime="torch").embed_query("paged attention")
    assert embedder.embed_query("paged attention") @ reference > 0.9999


def test_without_onnxruntime_the_process_stays_on_pytorch(embedder, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails, as in an install without it
    vectors = embedder.embed_documents(["paged attention", "KV cache quantization"])
    assert embedder.runtime == "torch" and not embedder.fast_queries
    assert vectors.shape == (2, embedder.dimension)
    assert embedder.embed_query("paged attention").shape == (embedder.dimension,)


def test_without_onnx_no_export_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnx", None)
    embedder = SentenceTransformerEmbedder()
    embedder.prepare_for_queries()
    assert embedder.runtime == "torch" and not (tmp_path / "onnx").exists()


def test_a_damaged_export_leaves_the_process_on_pytorch(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path))
    model_path = SentenceTransformerEmbedder(runtime="torch").path
    onnx_path, reference_path = onnx_encoder.export_paths(model_path)
    onnx_path.parent.mkdir(parents=True)
    onnx_path.write_bytes(b"not an onnx graph")
    np.save(reference_path, np.zeros((len(onnx_encoder.PROBES), 384), dtype=np.float32))
    embedder = SentenceTransformerEmbedder()
    embedder.prepare_for_queries()
    assert embedder.runtime == "torch"


def test_a_warm_process_ranks_as_a_cold_one(cache, monkeypatch):
    """The daemon's path (warm_in_background: onnxruntime, BM25 from postings in memory) returns what a
    one-shot search on PyTorch with FTS5 returns."""
    monkeypatch.setenv("KB_CACHE_DIR", str(cache))
    monkeypatch.delenv("KB_EMBEDDER", raising=False)
    cold = kbtool.open(REPO_ROOT, embedder=SentenceTransformerEmbedder(runtime="torch"))
    expected = {q: [h.id for h in cold.search(q).hits] for q in QUERIES}
    warm = kbtool.open(REPO_ROOT, embedder=SentenceTransformerEmbedder())
    warm.warm_in_background()
    warm.warm_up.join()
    warm.index._postings_reading.join()
    assert warm.embedder.runtime == "onnxruntime" and warm.index._postings is not None  # BM25 from memory too
    assert {q: [h.id for h in warm.search(q).hits] for q in QUERIES} == expected


def test_the_export_is_named_by_the_model_files_content_not_their_mtime(tmp_path, monkeypatch):
    """A fresh clone's `make install` writes the same model files anew: it must find the export made before."""
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path / "cache"))
    first, second = tmp_path / "venv-a" / "model", tmp_path / "venv-b" / "model"
    for folder in (first, second):
        (folder / "1_Pooling").mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"weights" * 1000)
        (folder / "1_Pooling" / "config.json").write_text("{}")
    os.utime(second / "model.safetensors", (1, 1))
    assert onnx_encoder.weights_key(str(first)) == onnx_encoder.weights_key(str(second))
    assert (tmp_path / "cache" / "model-content.json").is_file()  # hashed once per file and stat
    (second / "model.safetensors").write_bytes(b"other weights" * 1000)
    assert onnx_encoder.weights_key(str(first)) != onnx_encoder.weights_key(str(second))


def test_drafts_are_the_model_run_on_a_long_texts_first_128_word_pieces(embedder, texts):
    """A draft (kbtool/search/vector_rows.py) is what PyTorch's model makes of the text cut at 128 word pieces;
    a text no longer than that gets its whole vector, marked as no draft."""
    drafts, cut = embedder.embed_drafts(texts)
    assert any(cut) and not all(cut)
    torch = SentenceTransformerEmbedder(runtime="torch")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KB_EMBED_PRECISION", "fp32")
        whole = torch.embed_documents(texts)
        torch._model().max_seq_length = 128
        first_pieces = torch.embed_documents(texts)
    cut = np.array(cut)
    assert (drafts[cut] * first_pieces[cut]).sum(1).min() >= 0.9999
    assert (drafts[cut] * whole[cut]).sum(1).min() < 0.9999  # a draft is not the whole vector
    assert (drafts[~cut] * whole[~cut]).sum(1).min() >= 0.9999
