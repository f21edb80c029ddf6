"""A verdict names the variation it accounts for (kbtool/evidence/verdicts.py): runs, the scores' standard
errors, or a noise floor the knowledge base holds; one run a side gets no verdict, only the change and the
interval of its requests, labelled as such."""

from __future__ import annotations

import json
import math

import pytest

from conftest import REPO_ROOT
from kbtool.evidence import verdicts
from kbtool.evidence.verdicts import NO_VERDICT, WITHIN_RUN, NoiseFloor, judge_change

L40S = REPO_ROOT / "tests" / "data" / "vllm" / "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json"


def slowed(tmp_path, name: str, scale: float) -> str:
    """A copy of the real L40S run with every request's TTFT scaled, as another run of it would be."""
    data = json.loads(L40S.read_text())
    copy = {**data, "date": f"2026050{len(name) % 10}-{name}", "ttfts": [t * scale for t in data["ttfts"]]}
    copy["mean_ttft_ms"] = data["mean_ttft_ms"] * scale
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(copy))
    return str(path)


def entry(value: float, runs: int = 1, **stats: float) -> dict:
    return {"metric": "ttft", "value": value, "unit": "ms", "direction": "lower", "stats": stats,
            "conditions": {"concurrency": 1, "runs": runs} if runs > 1 else {"concurrency": 1}}  # fmt: skip


def test_one_run_a_side_shows_the_within_run_interval_and_gives_no_verdict():
    change = judge_change(entry(110.0, ci95_low=109.0, ci95_high=111.0), entry(100.0, ci95_low=99.0, ci95_high=101.0))
    assert change is not None and not change.judged
    assert change.verdict == NO_VERDICT and change.variation == WITHIN_RUN and change.detectable is None
    assert change.low is not None and change.low > 0  # clear of zero within the runs, and still no verdict


def test_runs_a_side_give_welchs_verdict_and_the_smallest_detectable_change():
    change = judge_change(entry(110.0, 3, std=2.0), entry(100.0, 3, std=2.0))
    se = math.sqrt(2 * 4.0 / 3)
    df = 4.0  # Welch's degrees of freedom with equal spreads and counts: 2 (n - 1)
    assert change is not None and change.verdict == "worse" and change.variation == "between runs: 3 vs 3"
    assert change.low == pytest.approx(10.0 - verdicts.t95(df) * se)
    assert change.detectable == pytest.approx((2.776 + 0.941) * se)  # t(0.975, 4) + t(0.80, 4)


def test_one_sides_runs_give_the_spread_for_both_when_the_other_has_one():
    change = judge_change(entry(110.0, ci95_low=109.0, ci95_high=111.0), entry(100.0, 4, std=3.0))
    assert change is not None and change.judged
    assert change.variation == "between runs: the baseline's 4 runs' spread, for both sides"
    half = verdicts.t95(3) * 3.0 * math.sqrt(1 / 4 + 1)
    assert (change.low, change.high) == pytest.approx((10.0 - half, 10.0 + half))


def test_scores_with_their_standard_errors_are_judged_by_them():
    score = {"metric": "gsm8k/exact_match", "unit": None, "direction": "higher"}
    change = judge_change(
        {**score, "value": 0.80, "stats": {"stderr": 0.01}}, {**score, "value": 0.75, "stats": {"stderr": 0.01}}
    )
    assert change is not None and change.verdict == "better" and change.variation == "the scores' standard errors"


def test_a_noise_floor_judges_one_run_a_side_and_is_named():
    floor = NoiseFloor(cv=0.05, runs=5, source="aa-finding")
    near = judge_change(
        entry(104.0, ci95_low=103.5, ci95_high=104.5), entry(100.0, ci95_low=99.5, ci95_high=100.5), floor
    )
    assert near is not None and near.verdict == "no clear change"  # 4% inside a 5% run-to-run spread
    assert near.variation == "run-to-run spread of aa-finding (5 runs, 5.0% of the mean)"
    far = judge_change(entry(140.0), entry(100.0), floor)
    assert far is not None and far.verdict == "worse"


def test_kb_compare_one_run_a_side_says_no_verdict(cli, tmp_path):
    """A real vLLM --save-detailed run against a copy of it slowed by 10%: the per-request interval is far
    from zero, and kb still gives no verdict about the configuration."""
    other = slowed(tmp_path, "slower", 1.1)
    result = cli("compare", other, str(L40S), "--json")
    assert result.exit_code == 0, result.stderr
    ttft = {r["metric"]: r for r in json.loads(result.stdout)["metrics"]}["ttft"]
    assert ttft["change_low"] > 0 and ttft["variation"] == WITHIN_RUN
    assert ttft["verdict"] == "no verdict: one run a side (3 or more runs a side judge it)"
    text = cli("compare", other, str(L40S)).stdout
    assert f"{WITHIN_RUN}: no verdict: one run a side" in text


def test_a_finding_from_one_run_a_side_stays_tentative(cli, tmp_path):
    other = slowed(tmp_path, "slower", 1.1)
    result = cli("add-finding", "--title", "slower ttft", "--from", other, "--baseline-from", str(L40S), "--json")
    assert result.exit_code == 0, result.stderr
    card = json.loads(result.stdout)
    assert card["status"] == "tentative"
    assert "no verdict: one run a side (3 or more runs a side judge it): ttft" in card["body"]


def test_contradiction_checks_ignore_a_change_with_no_verdict():
    from kbtool.curation.checks import improved

    ev = {"value": 110.0, "baseline": 100.0, "direction": "higher", "conditions": {"verdict": NO_VERDICT},
          "stats": {"change_ci95_low": 5.0, "change_ci95_high": 15.0}}  # fmt: skip
    assert improved(ev) is None


def test_findings_repeated_runs_are_a_noise_floor_for_kb_compare(cli, tmp_path):
    """Repeated runs of one configuration in the knowledge base stand for the run-to-run spread when a
    comparison has one run a side, and the verdict names the finding they are in."""
    runs = [slowed(tmp_path, f"aa{i}", scale) for i, scale in enumerate((1.0, 1.04, 0.97))]
    added = cli("add-finding", "--title", "A/A: run-to-run spread", *sum((["--from", p] for p in runs), []), "--json")
    assert added.exit_code == 0, added.stderr
    aa = json.loads(added.stdout)["id"]
    candidate = slowed(tmp_path, "candidate", 1.02)
    rows = {r["metric"]: r for r in json.loads(cli("compare", candidate, str(L40S), "--json").stdout)["metrics"]}
    ttft = rows["ttft"]
    assert ttft["verdict"] == "no clear change" and ttft["variation"].startswith(f"run-to-run spread of {aa} (3 runs")
