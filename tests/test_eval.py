"""kb eval: gold queries scored per mode."""

from __future__ import annotations

import json
import math

import pytest

from kbtool.model.errors import BadInput
from kbtool.search.evaluation import GoldQuery, evaluate, hit_keys, load_gold, score_query


def hit(card_id, path=None, heading=None):
    return {
        "id": card_id,
        "path": f"kb/reference/{card_id}.md",
        "source": {"path": path, "heading": heading} if path else None,
    }


def test_a_hit_answers_to_its_id_path_and_section():
    assert hit_keys(hit("a", "guide/x.md", "Intro")) == {"a", "kb/reference/a.md", "guide/x.md", "guide/x.md#Intro"}
    assert hit_keys(hit("b")) == {"b", "kb/reference/b.md"}


def test_scores():
    hits = [hit("x"), hit("a", "g.md", "A"), hit("y"), hit("b", "g.md", "B")]
    scores = score_query(hits, ("g.md#A", "g.md#B", "missing"), k=3)
    assert scores["recall@3"] == pytest.approx(1 / 3) and scores["hit@3"] == 1.0
    assert scores["mrr@10"] == pytest.approx(1 / 2)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert scores["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert score_query([], ("a",), k=10) == {"recall@10": 0.0, "hit@10": 0.0, "mrr@10": 0.0, "ndcg@10": 0.0}


def test_a_file_entry_matches_any_of_its_sections_once():
    hits = [hit("s1", "g.md", "A"), hit("s2", "g.md", "B")]
    assert score_query(hits, ("g.md",), k=10) == {"recall@10": 1.0, "hit@10": 1.0, "mrr@10": 1.0, "ndcg@10": 1.0}


def test_evaluate_reports_each_mode_and_misses():
    gold = [GoldQuery("q1", ("a",)), GoldQuery("q2", ("zzz",))]
    report = evaluate(gold, lambda q, k, mode: [hit("a")] if mode != "vector" else [hit("b"), hit("a")])
    assert report["modes"]["bm25"]["mrr@10"] == 0.5 and report["modes"]["vector"]["mrr@10"] == 0.25
    assert report["modes"]["hybrid"]["missed"] == ["q2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no gold queries"),
        ("not json\n", "not JSON"),
        ('{"q": "x"}\n', "relevant must be"),
        ('{"q": "", "relevant": ["a"]}\n', "expected"),
        ('{"q": "x", "relevant": []}\n', "relevant must be"),
        ('{"q": "x", "relevant": ["a"], "split": "train"}\n', "split must be one of dev, test"),
    ],
)
def test_bad_gold_files(tmp_path, text, message):
    path = tmp_path / "gold.jsonl"
    path.write_text(text)
    with pytest.raises(BadInput, match=message):
        load_gold(path)


def test_eval_cli(cli, kb, tmp_path, monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    cli("add", "gap", "--title", "Chunked prefill at 32k?")
    cli("add", "gap", "--title", "CUDA graphs for decode?")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps({"q": "cuda graph decode", "relevant": ["cuda-graphs-for-decode"], "split": "test"})
        + "\n"
        + json.dumps({"q": "chunked prefill", "relevant": ["chunked-prefill-at-32k"], "split": "dev"})
        + "\n"
    )
    report = json.loads(cli("eval", str(gold), "--json").stdout)
    assert report["queries"] == 2 and set(report["modes"]) == {"hybrid", "bm25", "vector", "plain bm25"}
    assert report["modes"]["hybrid"]["mrr@10"] == 1.0 and report["modes"]["plain bm25"]["mrr@10"] == 1.0
    text = cli("eval", str(gold), "--split", "test").stdout
    assert text.startswith("1 queries, k=10, test split")
    assert "hybrid     recall@10 1.000  hit@10 1.000  MRR@10 1.000" in text and "plain bm25 recall@10" in text
    assert cli("eval", str(tmp_path / "missing.jsonl")).exit_code == 2
    assert cli("eval", str(gold), "--split", "train").exit_code == 2
