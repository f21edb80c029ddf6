"""Document embeddings in bfloat16 where the CPU runs it natively: the same vectors as fp32 within
cosine 0.9999, checked on the batch's own texts before use, and fp32 whenever asked or in doubt.
Real model (all-MiniLM-L6-v2) on the starter KB's chunk texts, on the PyTorch runtime (what a process
uses when onnxruntime is not installed or its export disagrees; tests/process/test_onnx_runtime.py is the other)."""

from __future__ import annotations

import numpy as np
import pytest

import kbtool
from conftest import REPO_ROOT, tree_state
from kbtool.model.errors import BadInput
from kbtool.search import embeddings
from kbtool.search.embeddings import BF16_AGREEMENT, BF16_MIN_TEXTS, SentenceTransformerEmbedder, native_bf16


@pytest.fixture(scope="module")
def texts() -> list[str]:
    kb = kbtool.open(REPO_ROOT)
    kb.refresh_index(semantic=False)
    return [row[0] for row in kb.index.db.execute("SELECT text FROM chunks ORDER BY id LIMIT 64")]


@pytest.fixture(scope="module")
def fp32_vectors(texts) -> np.ndarray:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KB_EMBED_PRECISION", "fp32")
        return SentenceTransformerEmbedder(runtime="torch").embed_documents(texts)


def test_bf16_documents_agree_with_fp32(texts, fp32_vectors, monkeypatch):
    if not native_bf16():  # asked here, not in a skipif: collecting the suite never imports torch
        pytest.skip("this CPU has no native bfloat16: kb stays on fp32 here")
    monkeypatch.delenv("KB_EMBED_PRECISION", raising=False)
    embedder = SentenceTransformerEmbedder(runtime="torch")
    vectors = embedder.embed_documents(texts)
    assert embedder.documents_in_bf16 is True
    assert vectors.dtype == np.float32 and vectors.shape == fp32_vectors.shape
    assert (vectors * fp32_vectors).sum(1).min() >= BF16_AGREEMENT


def test_fp32_when_asked(texts, fp32_vectors, monkeypatch):
    monkeypatch.setenv("KB_EMBED_PRECISION", "fp32")
    embedder = SentenceTransformerEmbedder(runtime="torch")
    assert np.array_equal(embedder.embed_documents(texts), fp32_vectors)
    assert embedder.documents_in_bf16 is False


def test_a_few_texts_are_embedded_in_fp32_without_a_probe(texts, fp32_vectors, monkeypatch):
    monkeypatch.delenv("KB_EMBED_PRECISION", raising=False)
    embedder = SentenceTransformerEmbedder(runtime="torch")
    few = embedder.embed_documents(texts[: BF16_MIN_TEXTS - 1])
    assert embedder.documents_in_bf16 is None  # undecided: no probe was run
    assert np.allclose(few, fp32_vectors[: BF16_MIN_TEXTS - 1], atol=1e-5)


def test_bf16_that_disagrees_is_not_used(texts, fp32_vectors, monkeypatch):
    monkeypatch.delenv("KB_EMBED_PRECISION", raising=False)
    monkeypatch.setattr(embeddings, "native_bf16", lambda: True)
    monkeypatch.setattr(embeddings, "BF16_AGREEMENT", 1.0001)  # no rounding at all would pass this
    embedder = SentenceTransformerEmbedder(runtime="torch")
    assert np.allclose(embedder.embed_documents(texts), fp32_vectors, atol=1e-5)
    assert embedder.documents_in_bf16 is False


def test_no_bf16_without_native_support(texts, monkeypatch):
    monkeypatch.delenv("KB_EMBED_PRECISION", raising=False)
    monkeypatch.setattr(embeddings, "native_bf16", lambda: False)
    embedder = SentenceTransformerEmbedder(runtime="torch")
    embedder.embed_documents(texts)
    assert embedder.documents_in_bf16 is False


def test_an_unknown_precision_is_refused_before_anything_runs(monkeypatch):
    monkeypatch.setenv("KB_EMBED_PRECISION", "int4")
    with pytest.raises(BadInput, match="KB_EMBED_PRECISION='int4' is not one of auto, fp32, bf16"):
        SentenceTransformerEmbedder()


def test_the_cli_refuses_an_unknown_precision_in_one_line(cli, kb, monkeypatch):
    monkeypatch.setenv("KB_DAEMON", "0")
    monkeypatch.setenv("KB_EMBED_PRECISION", "int4")
    before = tree_state(kb.root)
    result = cli("search", "paged attention")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == ["kb: error: KB_EMBED_PRECISION='int4' is not one of auto, fp32, bf16"]
    assert tree_state(kb.root) == before


def test_knowledge_bases_served_together_share_one_model(tmp_path, monkeypatch):
    """kb serve --kb a=... --kb b=...: one copy of the model, loaded once, however many ask at once."""
    import threading

    monkeypatch.delenv("KB_EMBEDDER", raising=False)
    team, project = (kbtool.init(tmp_path / name, name=name) for name in ("team", "project"))
    opened = kbtool.KnowledgeBase.open_several([team.root, project.root])
    assert [b.root for b in opened] == [team.root, project.root]
    assert opened[0].embedder is opened[1].embedder
    shared = opened[0].embedder
    assert isinstance(shared, SentenceTransformerEmbedder)
    models = []
    threads = [threading.Thread(target=lambda: models.append(shared._model())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(m) for m in models}) == 1
