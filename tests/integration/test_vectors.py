"""The vector leg's matrix (kbtool/search/vectors.py) follows every write by patching itself, and ranks
as a freshly read one does."""

from __future__ import annotations

import pytest

import kbtool
from kbtool.search import vectors
from kbtool.search.embeddings import HashingEmbedder

QUERIES = [
    "NVFP4 MoE decode",
    "why does the all-reduce hang",
    "grouped GEMM memory bound",
    "KV 缓存 量化",
    "speculative decoding acceptance rate",
    "B200 tensor cores FP4",
]


@pytest.fixture
def starter(starter_clone):
    return starter_clone


def vector_hits(kb: kbtool.KnowledgeBase, where=()):
    return {q: [(h.id, h.score) for h in kb.search(q, k=20, mode="vector", where=list(where)).hits] for q in QUERIES}


def read_afresh(kb: kbtool.KnowledgeBase, where=()):
    return vector_hits(kbtool.open(kb.root, embedder=HashingEmbedder()), where)


def test_writes_are_patched_into_the_matrix_not_read_again(starter, monkeypatch):
    vector_hits(starter)
    matrix = starter.index._matrices[starter.embedder.model_id]
    reads = []
    real = matrix._replace
    monkeypatch.setattr(matrix, "_replace", lambda rows: (reads.append(len(rows)), real(rows)))
    rows_before = matrix.n
    starter.add(
        "finding",
        "NVFP4 grouped GEMM decode is memory bound on B200",
        body="Decode of the MoE experts at batch 1 reads every expert weight once.",
        fields=["applies_to.hardware=B200"],
    )
    edited = next(s for s in starter.cards() if s.card.kind == "failure-mode")
    starter.edit(edited.id, body="The all-reduce hangs when NCCL_P2P_DISABLE differs between ranks.")
    for where in ((), ("applies_to.hardware=B200",)):
        assert vector_hits(starter, where) == read_afresh(starter, where)
    assert not reads and matrix.n > rows_before and matrix.live is not None  # appended; the edit's old rows dead
    assert "nvfp4-grouped-gemm-decode-is-memory-bound-on-b200" in [i for i, _ in vector_hits(starter)[QUERIES[2]]]


def test_dead_rows_are_dropped_once_they_are_a_quarter(starter):
    vector_hits(starter)
    matrix = starter.index._matrices[starter.embedder.model_id]
    findings = [s for s in starter.cards() if s.card.kind in ("finding", "reference", "contract")]
    for stored in findings[: len(findings) // 2]:
        (starter.root / stored.path).unlink()
    assert vector_hits(starter) == read_afresh(starter)
    assert matrix.live is None and matrix.n == len(starter.index.chunk_card)


def test_a_large_change_reads_everything_again(starter, monkeypatch):
    vector_hits(starter)
    monkeypatch.setattr(vectors, "RELOAD_AFTER", 0)
    matrix = starter.index._matrices[starter.embedder.model_id]
    for i in range(40):
        starter.add("gap", f"Does change {i} help decode?", body="## Question\n\nIt may.\n\n## Why\n\nIt reads less.")
    assert vector_hits(starter) == read_afresh(starter)
    assert matrix.n == len(starter.index.chunk_card) and matrix.live is None
