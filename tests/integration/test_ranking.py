"""Ranking, pure: the keyword leg's query terms and the fusion of the two legs; and an identifier found
through a real index (hashing embedder, no model)."""

from __future__ import annotations

import pytest

import kbtool
from kbtool.search.embeddings import HashingEmbedder
from kbtool.search.ranking import LegHit, Scale, fts_match, fuse, keep_each_legs_first, phrases, query_terms


def test_an_identifier_gives_its_words_and_itself_as_a_phrase():
    terms = query_terms("slot_mapping from block_table")
    assert terms == ["slot", "mapping", "slot_mapping", "block", "table", "block_table"]
    assert query_terms("torch.compile recompiles") == ["torch", "compile", "torch.compile", "recompiles"]
    assert fts_match(phrases(["slot", "slot_mapping"])) == '"slot" OR "slot_mapping"'


@pytest.mark.parametrize("query", ["SLURM 22.05", "all-reduce", "nano-vllm", "a_"])
def test_versions_hyphenated_words_and_lone_parts_are_words_only(query):
    assert all("." not in t and "_" not in t and "-" not in t for t in query_terms(query))


def test_a_fixed_scale_maps_a_leg_onto_0_to_1_whatever_its_best():
    scale = Scale(0.3, 0.8)
    assert (scale.of(0.2), scale.of(0.55), scale.of(0.9)) == pytest.approx((0.0, 0.5, 1.0))
    legs = {"bm25": {0: LegHit(1, 10.0, 100), 1: LegHit(2, 5.0, 101)}, "vector": {1: LegHit(1, 0.55, 101)}}
    by_max = fuse({k: dict(v) for k, v in legs.items()}, ["confirmed", "confirmed"])
    scaled = fuse(legs, ["confirmed", "confirmed"], scales={"vector": scale})
    # over its best, a weak cosine of 0.55 counts as 1.0; through the scale as 0.5
    assert [round(f.score, 3) for f in by_max] == [0.7, 0.6]
    assert [(f.card, round(f.score, 3)) for f in scaled] == [(0, 0.6), (1, 0.5)]


def test_the_card_holding_the_identifier_ranks_above_one_with_its_words_apart(kb):
    kb.add(
        "failure-mode",
        "Decode writes to the wrong cache slot",
        fields=["symptom=garbage after the first decode step", "fix=rebuild the mapping of each slot"],
        body="## Details\n\nThe slot of every token and the mapping of blocks must agree; a stale mapping "
        "of a slot writes into another request's block. Check the slot, check the mapping.\n",
    )
    kb.add(
        "contract",
        "Paged attention inputs",
        fields=["component=model runner"],
        body="## Inputs\n\nThe runner passes slot_mapping and block tables to every attention layer.\n",
    )
    found = kbtool.open(kb.root, embedder=HashingEmbedder()).search("slot_mapping", k=2, mode="bm25")
    assert [h.title for h in found.hits] == ["Paged attention inputs", "Decode writes to the wrong cache slot"]


def _legs(bm25: list[int], vector: list[int]) -> dict[str, dict[int, LegHit]]:
    """Two legs from cards in rank order; scores fall from 10 by 1 a place."""
    return {
        name: {card: LegHit(rank=r + 1, score=10.0 - r, chunk_id=card) for r, card in enumerate(cards)}
        for name, cards in (("bm25", bm25), ("vector", vector))
    }


def test_a_card_one_leg_ranks_first_is_kept_within_the_first_places():
    # card 99 is the vector leg's first and unknown to BM25, which ranks twelve cards the vector leg also holds
    shared = list(range(12))
    legs = _legs(bm25=shared, vector=[99, *shared])
    fused = fuse(legs, ["active"] * 100)
    assert [f.card for f in fused].index(99) >= 5  # outvoted: 0.4 of the weight against cards both legs know
    kept = keep_each_legs_first(fused)
    order = [f.card for f in kept]
    assert order.index(99) == 4 and kept[4].lifted_by == "vector"
    assert [f.score for f in kept] == sorted((f.score for f in kept), reverse=True)  # still in score order
    assert sorted(order) == sorted(f.card for f in fused)  # nothing lost, nothing added


def test_a_leg_first_already_high_or_inactive_stays_where_fusion_put_it():
    legs = _legs(bm25=[1, 2, 3], vector=[1, 3, 2])
    fused = fuse(legs, ["active"] * 10)
    assert [f.card for f in keep_each_legs_first(fused)] == [f.card for f in fused]
    shared = list(range(12))
    statuses = ["active"] * 100
    statuses[99] = "superseded"
    demoted = fuse(_legs(bm25=shared, vector=[99, *shared]), statuses)
    assert [f.card for f in keep_each_legs_first(demoted)] == [f.card for f in demoted]
