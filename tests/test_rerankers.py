"""The reranker stage (kbtool/search/rerankers.py): none by default; one named in kb.toml reorders the
fused top cards, keeps their fused scores and says so in --explain; a broken one or an unknown name
is a clear error, never a silently different answer."""

from __future__ import annotations

import pytest

import kbtool
from kbtool import HashingEmbedder, KbError
from kbtool.search import rerankers

CARDS = [
    ("gap", "Chunked prefill at 32k context?"),
    ("gap", "Chunked prefill and decode interference?"),
    ("gap", "Prefill chunk size for long prompts?"),
]


class ShortestTitleFirst:
    """A real, if simple, judgement fusion does not make: the tersest card first."""

    name = "shortest-title"

    def rerank(self, query, candidates):
        return sorted(candidates, key=lambda c: (len(c.title), c.id))


class DropsOne:
    name = "drops-one"

    def rerank(self, query, candidates):
        return list(candidates)[1:]


def with_reranker(kb: kbtool.KnowledgeBase, name: str) -> kbtool.KnowledgeBase:
    for kind, title in CARDS:
        kb.add(kind, title)
    (kb.root / "kb.toml").write_text((kb.root / "kb.toml").read_text() + f'\n[search]\nreranker = "{name}"\n')
    return kbtool.open(kb.root, embedder=HashingEmbedder())


def test_without_a_reranker_fusion_order_stands_and_explain_names_none(kb):
    for kind, title in CARDS:
        kb.add(kind, title)
    hits = kbtool.open(kb.root, embedder=HashingEmbedder()).search("chunked prefill", explain=True).hits
    assert hits and all("reranker" not in h.explain for h in hits)


def test_a_registered_reranker_reorders_the_fused_cards_and_keeps_their_scores(kb, monkeypatch):
    plain = with_reranker(kb, "none").search("chunked prefill", mode="bm25", explain=True).hits
    monkeypatch.setitem(rerankers.RERANKERS, "shortest-title", ShortestTitleFirst)
    text = (kb.root / "kb.toml").read_text().replace('reranker = "none"', 'reranker = "shortest-title"')
    (kb.root / "kb.toml").write_text(text)
    reranked = kbtool.open(kb.root, embedder=HashingEmbedder()).search("chunked prefill", mode="bm25", explain=True)
    assert [h.id for h in reranked.hits] == sorted((h.id for h in plain), key=lambda i: (len(kb.get(i).card.title), i))
    assert [h.id for h in reranked.hits] != [h.id for h in plain]
    fused = {h.id: (h.score, n) for n, h in enumerate(plain, 1)}
    for hit in reranked.hits:
        assert hit.score == fused[hit.id][0]
        assert hit.explain["reranker"] == {"name": "shortest-title", "fused_rank": fused[hit.id][1]}


def test_a_reranker_that_loses_a_card_is_an_error(kb, monkeypatch):
    monkeypatch.setitem(rerankers.RERANKERS, "drops-one", DropsOne)
    base = with_reranker(kb, "drops-one")
    with pytest.raises(KbError, match="reranker 'drops-one' must return each candidate it was given exactly once"):
        base.search("chunked prefill", mode="bm25")


def test_an_unknown_reranker_in_kb_toml_is_one_line_and_exit_2(kb, cli, monkeypatch):
    monkeypatch.setenv("KB_DAEMON", "0")
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    with_reranker(kb, "cross-encoder")
    result = cli("search", "chunked prefill")
    assert result.exit_code == 2
    assert result.stderr.strip() == "kb: error: kb.toml: search.reranker 'cross-encoder' is not one of none"
