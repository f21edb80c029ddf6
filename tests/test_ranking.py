"""Ranking, pure: the keyword leg's query terms and the fusion of the two legs; and an identifier found
through a real index (hashing embedder, no model)."""

from __future__ import annotations

import pytest

import kbtool
from kbtool.search.embeddings import HashingEmbedder
from kbtool.search.ranking import LegHit, Scale, fts_match, fuse, phrases, query_terms


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
