"""The BM25 leg from memory (kbtool/search/lexical.py) gives FTS5's bm25() scores exactly, follows every
write, and hands back to FTS5 whenever it cannot answer."""

from __future__ import annotations

import sqlite3

import pytest

import kbtool
from conftest import REPO_ROOT
from kbtool.search import lexical
from kbtool.search.embeddings import HashingEmbedder
from kbtool.search.evaluation import load_gold
from kbtool.search.ranking import phrases, query_terms

QUERIES = [g.q for g in load_gold(REPO_ROOT / "tests" / "gold" / "starter.jsonl")] + [
    "KV 缓存 量化 精度",
    "NVFP4 MoE decode",
    "why does the all-reduce hang",
    "B200 tensor cores FP4",
    "zzzz-unknown-word",
]
FILTERS = [None, ["applies_to.hardware=B200"], ["applies_to.precision=nvfp4"]]


@pytest.fixture
def starter(starter_clone):
    return starter_clone


def warm(kb: kbtool.KnowledgeBase) -> kbtool.KnowledgeBase:
    kb.index.read_postings_in_background()
    kb.index._postings_reading.join()
    assert kb.index._postings is not None
    return kb


def fts5_only(kb: kbtool.KnowledgeBase, query: str, where=None, limit: int = 200):
    """What a one-shot process ranks: FTS5's bm25(), no postings."""
    index = kbtool.open(kb.root, embedder=HashingEmbedder()).index
    index.refresh(None)
    allowed = index.chunks_of(index.matching(_conditions(where))) if where else None
    return index.lexical(phrases(query_terms(query)), allowed, limit)


def _conditions(where):
    from kbtool.model.fields import card_conditions, parse_filters

    return card_conditions(None, None, (), parse_filters(where))


def from_postings(kb: kbtool.KnowledgeBase, query: str, where=None, limit: int = 200):
    index = kb.index
    index.refresh_if_stale(None)
    postings = index._current_postings()
    assert postings is not None and postings.generation == index.generation()
    allowed = index.chunks_of(index.matching(_conditions(where))) if where else None
    hits = postings.search(phrases(query_terms(query)), allowed, limit, index.phrase_scores)
    assert hits is not None
    return hits


def test_postings_give_fts5_scores_exactly(starter):
    warm(starter)
    for query in QUERIES:
        for where in FILTERS:
            assert from_postings(starter, query, where) == fts5_only(starter, query, where), (query, where)


def test_the_limit_keeps_ties_in_fts5_order(starter):
    warm(starter)
    for query in ("gate", "decode throughput", "the model"):
        for limit in (1, 3, 7):
            assert from_postings(starter, query, limit=limit) == fts5_only(starter, query, limit=limit)


def test_postings_follow_adds_edits_and_removals(starter):
    warm(starter)
    before = starter.index._postings
    starter.add(
        "finding",
        "NVFP4 grouped GEMM decode is memory bound on B200",
        body="Decode of the MoE experts at batch 1 reads every expert weight once.",
        fields=["applies_to.hardware=B200", "applies_to.precision=nvfp4"],
    )
    target = next(s for s in starter.cards() if s.card.kind == "failure-mode")
    starter.edit(target.id, body="The all-reduce hangs when NCCL_P2P_DISABLE differs between ranks.")
    (starter.root / next(s for s in starter.cards() if s.card.kind == "gap").path).unlink()
    for query in QUERIES + ["grouped GEMM memory bound", "NCCL_P2P_DISABLE ranks"]:
        for where in FILTERS:
            assert from_postings(starter, query, where) == fts5_only(starter, query, where), (query, where)
    assert starter.index._postings is before  # patched in place, not read again
    assert before.delta is not None and before.delta_ids


def test_too_many_changes_at_once_go_back_to_fts5_then_read_again(starter, monkeypatch):
    warm(starter)
    monkeypatch.setattr(lexical, "REBUILD_AFTER", 1)
    starter.add("gap", "Does FP8 attention keep accuracy at 128k?", body="## Question\n\nOne.\n\n## Why\n\nTwo.")
    starter.index.refresh_if_stale(None)
    query = phrases(query_terms("FP8 attention accuracy"))
    assert starter.index.lexical(query, None, 50) == fts5_only(starter, "FP8 attention accuracy", limit=50)
    starter.index._postings_reading.join()
    assert starter.index._postings.generation == starter.index.generation()
    assert from_postings(starter, "FP8 attention accuracy", limit=50) == fts5_only(
        starter, "FP8 attention accuracy", limit=50
    )


def test_a_phrase_of_several_tokens_is_left_to_fts5(starter):
    postings = warm(starter).index._postings
    assert postings.tokens("decoding") == ["decod"]  # FTS5's porter stemmer
    assert postings.search([(None, "paged attention")], None, 10) is None


def test_an_identifier_is_scored_from_memory_with_fts5_giving_its_phrase(starter):
    """`num_kv_heads` is a phrase of three tokens: FTS5 scores the phrase alone, the postings the rest."""
    index = warm(starter).index
    asked = []
    query = phrases(query_terms("num_kv_heads of the paged cache"))
    hits = index._postings.search(query, None, 50, lambda p: asked.append(p) or index.phrase_scores(p))
    assert asked == [(None, "num_kv_heads")]
    assert len(index.phrase_scores(asked[0])) > 5
    assert hits == fts5_only(starter, "num_kv_heads of the paged cache", limit=50)


def test_chunk_ids_are_never_reused(kb):
    kb.add("gap", "First question?")
    last = kb.add("gap", "Second question?")
    kb.index.refresh(None)
    top = max(kb.index.chunk_card)
    (kb.root / last.path).unlink()
    kb.add("gap", "Third question?")
    kb.index.refresh(None)
    assert min(set(kb.index.chunk_card) - {i for i in kb.index.chunk_card if i <= top}) > top


def test_an_index_made_before_autoincrement_is_upgraded_in_place(starter):
    starter.index.db.conn.close()
    path = starter.root / ".kb" / "index.db"
    conn = sqlite3.connect(path)
    expected = {q: fts5_only(starter, q) for q in QUERIES[:5]}
    ids = conn.execute("SELECT id, hash FROM chunks ORDER BY id").fetchall()
    # the step-1 schema: a rowid table without AUTOINCREMENT, the second step not recorded
    conn.executescript("""
        ALTER TABLE chunks RENAME TO c2;
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, card_path TEXT NOT NULL REFERENCES cards(path),
                             ordinal INTEGER NOT NULL, heading TEXT, text TEXT NOT NULL, hash TEXT NOT NULL);
        INSERT INTO chunks SELECT * FROM c2; DROP TABLE c2;
        DELETE FROM _sqlite_migrations WHERE name = 'm002_chunk_ids_never_reused';
        PRAGMA user_version = 1;""")
    conn.close()
    upgraded = kbtool.open(starter.root, embedder=HashingEmbedder())
    upgraded.index.refresh(None)
    sql = upgraded.index.db.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks'").fetchone()[0]
    assert "AUTOINCREMENT" in sql
    assert upgraded.index.db.execute("SELECT id, hash FROM chunks ORDER BY id").fetchall() == ids
    assert {q: fts5_only(upgraded, q) for q in QUERIES[:5]} == expected
