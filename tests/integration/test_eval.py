"""kb eval: gold queries scored per mode, overall and per query class, with bootstrap intervals."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from conftest import REPO_ROOT
from kbtool.model.errors import BadInput
from kbtool.search.bootstrap import mean_interval, ratio_interval, resample_indices
from kbtool.search.evaluation import CLASSES, PLAIN, GoldQuery, evaluate, hit_keys, load_gold, report, score_query
from kbtool.surfaces.cli import app


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
        ('{"q": "x", "relevant": ["a"], "class": "trivia"}\n', "class must be one of keyword, paraphrase, symptom"),
    ],
)
def test_bad_gold_files(tmp_path, text, message):
    path = tmp_path / "gold.jsonl"
    path.write_text(text)
    with pytest.raises(BadInput, match=message):
        load_gold(path)


def test_the_class_of_a_gold_line_is_read():
    path = REPO_ROOT / "tests" / "gold" / "metainfer.jsonl"
    gold = load_gold(path)
    assert {g.kind for g in gold} == set(CLASSES)  # every query of the shared gold sets is classed
    assert load_gold(REPO_ROOT / "tests" / "gold" / "starter.jsonl")[0].kind == "keyword"


def test_an_interval_around_a_mean_of_zeros_and_ones():
    """Half of 400 queries found: the mean 0.5, and the 95% interval about ±1.96·sqrt(0.25/400) = ±0.049."""
    scores = [1.0, 0.0] * 200
    value, low, high = mean_interval(scores, resample_indices(len(scores), 1000, seed=0))
    assert value == 0.5 and low == pytest.approx(0.451, abs=0.012) and high == pytest.approx(0.549, abs=0.012)
    assert mean_interval([0.7] * 9, resample_indices(9)) == pytest.approx((0.7, 0.7, 0.7))


def test_a_ratio_is_resampled_in_pairs():
    """Hybrid scores exactly twice the baseline on every query, on very different queries: paired resamples
    (the same queries for both) give 2.0 every time; resampling each system on its own would not."""
    plain = [0.1, 0.9, 0.3, 1.0, 0.05, 0.5, 0.2, 0.45]
    hybrid = [2 * p for p in plain]
    indices = resample_indices(len(plain), 1000, seed=7)
    assert ratio_interval(hybrid, plain, indices) == pytest.approx((2.0, 2.0, 2.0))
    unpaired = [
        mean_interval(hybrid, resample_indices(8, 1000, seed=1))[1] / mean_interval(plain, indices)[1],
        mean_interval(hybrid, resample_indices(8, 1000, seed=1))[2] / mean_interval(plain, indices)[2],
    ]
    assert unpaired != pytest.approx([2.0, 2.0])
    assert ratio_interval([1.0, 0.0], [0.0, 0.0], indices[:, :2] % 2) is None  # a baseline of 0: no ratio


def test_the_same_seed_gives_the_same_intervals():
    scores = [0.0, 0.2, 1.0, 0.5, 0.0, 1.0]
    first = mean_interval(scores, resample_indices(6, 500, seed=3))
    assert mean_interval(scores, resample_indices(6, 500, seed=3)) == first
    assert mean_interval(scores, resample_indices(6, 500, seed=4)) != first


def test_report_per_class_with_intervals_and_the_ratio():
    gold = [GoldQuery("a", ("x",), kind="keyword"), GoldQuery("b", ("x",), kind="keyword")]
    gold += [GoldQuery("c", ("x",), kind="paraphrase"), GoldQuery("d", ("x",))]
    one, none = (
        {"recall@10": 1.0, "hit@10": 1.0, "mrr@10": 1.0, "ndcg@10": 1.0},
        dict.fromkeys(("recall@10", "hit@10", "mrr@10", "ndcg@10"), 0.0),
    )
    scores = {"hybrid": [one, one, one, none], PLAIN: [one, none, none, one]}
    result = report(gold, scores, resamples=200, seed=1)
    assert list(result.classes) == ["keyword", "paraphrase"]  # the unclassed query counts only overall
    keyword = result.classes["keyword"]
    assert keyword.queries == 2 and keyword.modes["hybrid"].metrics["mrr@10"].value == 1.0
    assert keyword.ratio["mrr@10"].value == 2.0 and result.classes["paraphrase"].ratio["mrr@10"] is None
    assert result.overall.modes[PLAIN].missed == ["b", "c"] and result.overall.ratio["hit@10"].value == 1.5
    with pytest.raises(BadInput, match="resamples must be at least 1"):
        report(gold, scores, resamples=0)


def test_eval_on_the_starter_gold_set_per_class(starter_to_read, monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")
    gold = REPO_ROOT / "tests" / "gold" / "starter.jsonl"
    runner = CliRunner()
    out = runner.invoke(app, ["--kb", str(starter_to_read.root), "eval", str(gold), "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["queries"] == 19 and result["seed"] == 0 and result["resamples"] == 1000
    assert set(result["classes"]) == {"keyword", "paraphrase", "symptom"}
    assert sum(c["queries"] for c in result["classes"].values()) == 19
    for group in [result["overall"], *result["classes"].values()]:
        assert set(group["modes"]) == {"hybrid", "bm25", "vector", PLAIN}
        for mode in group["modes"].values():
            for interval in mode["metrics"].values():
                assert interval["low"] <= interval["value"] <= interval["high"]
        for interval in group["ratio"].values():
            assert interval is None or interval["low"] <= interval["value"] <= interval["high"]
    text = runner.invoke(app, ["--kb", str(starter_to_read.root), "eval", str(gold), "--seed", "5"]).stdout
    lines = text.splitlines()
    assert lines[0] == "19 queries, k=10; [95% interval: 1000 bootstrap resamples of the queries, seed 5]"
    assert "keyword (9 queries)" in lines and "symptom (1 queries)" in lines
    assert len(lines) == 1 + 4 * 6  # per group: its name, four modes, the ratio
    hybrid = next(line for line in lines if line.startswith("  hybrid "))
    assert hybrid.count("[") == 4 and "missed" in hybrid


def test_a_bad_gold_line_is_one_line_and_exit_2(cli, tmp_path):
    gold = tmp_path / "gold.jsonl"
    for line, message in [
        ({"q": "x", "relevant": ["a"], "class": "vibes"}, "gold.jsonl:1: class must be one of keyword, paraphrase"),
        ({"q": "x", "relevant": []}, "gold.jsonl:1: relevant must be a non-empty list"),
    ]:
        gold.write_text(json.dumps(line) + "\n")
        out = cli("eval", str(gold))
        assert out.exit_code == 2 and message in out.output and len(out.output.strip().splitlines()) == 1


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
    result = json.loads(cli("eval", str(gold), "--json").stdout)
    modes = result["overall"]["modes"]
    assert result["queries"] == 2 and set(modes) == {"hybrid", "bm25", "vector", "plain bm25"}
    assert modes["hybrid"]["metrics"]["mrr@10"] == {"value": 1.0, "low": 1.0, "high": 1.0}
    assert modes["plain bm25"]["metrics"]["mrr@10"]["value"] == 1.0 and result["classes"] == {}
    text = cli("eval", str(gold), "--split", "test").stdout
    assert text.startswith("1 queries, k=10, test split")
    assert "  hybrid     recall@10 1.000 [1.000, 1.000]  hit@10 1.000 [1.000, 1.000]  MRR@10 1.000" in text
    assert "plain bm25 recall@10" in text and "  hybrid/plain recall@10 1.00x [1.00, 1.00]" in text
    assert cli("eval", str(tmp_path / "missing.jsonl")).exit_code == 2
    assert cli("eval", str(gold), "--split", "train").exit_code == 2
