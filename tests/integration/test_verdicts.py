"""A verdict names the variation it accounts for (kbtool/evidence/verdicts.py): runs, the scores' standard
errors, or a noise floor the knowledge base holds; one run a side gets no verdict, only the change and the
interval of its requests, labelled as such."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path

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


def test_one_sides_runs_do_not_stand_for_a_side_of_one_run():
    """Measured on the H100 runs below: three tight runs' spread, taken for a fourth identical run, called it
    worse; the runs have outliers that a few runs do not show."""
    change = judge_change(entry(110.0, ci95_low=109.0, ci95_high=111.0), entry(100.0, 4, std=3.0))
    assert change is not None and not change.judged and change.verdict == "no verdict: one run on a side"
    assert change.variation == "between runs on one side only" and change.low is None


def test_scores_with_their_standard_errors_are_judged_by_them():
    score = {"metric": "gsm8k/exact_match", "unit": None, "direction": "higher"}
    change = judge_change(
        {**score, "value": 0.80, "stats": {"stderr": 0.01}}, {**score, "value": 0.75, "stats": {"stderr": 0.01}}
    )
    assert change is not None and change.verdict == "better" and change.variation == "the scores' standard errors"


def test_a_noise_floor_says_how_many_runs_would_judge_and_is_no_verdict():
    floor = NoiseFloor(cv=0.05, runs=5, source="aa-finding")
    far = judge_change(
        entry(140.0, ci95_low=139.5, ci95_high=140.5), entry(100.0, ci95_low=99.5, ci95_high=100.5), floor
    )
    assert far is not None and far.verdict == NO_VERDICT and far.variation == WITHIN_RUN
    assert far.needs == "aa-finding's 5 runs vary 5.0% between runs: about 3 runs a side would judge a change this size"
    near = judge_change(entry(101.0), entry(100.0), floor)
    assert near is not None and near.needs.endswith("a change this size needs more than 30 runs a side")


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


def test_findings_repeated_runs_say_how_many_runs_a_comparison_needs(cli, tmp_path):
    """Repeated runs of one configuration in the knowledge base tell a one-run-a-side comparison how many runs
    would judge it, naming the finding they are in; they never make its verdict."""
    runs = [slowed(tmp_path, f"aa{i}", scale) for i, scale in enumerate((1.0, 1.04, 0.97))]
    added = cli("add-finding", "--title", "A/A: run-to-run spread", *sum((["--from", p] for p in runs), []), "--json")
    assert added.exit_code == 0, added.stderr
    aa = json.loads(added.stdout)["id"]
    candidate = slowed(tmp_path, "candidate", 1.5)
    rows = {r["metric"]: r for r in json.loads(cli("compare", candidate, str(L40S), "--json").stdout)["metrics"]}
    ttft = rows["ttft"]
    assert ttft["verdict"].startswith(f"no verdict: one run a side ({aa}'s 3 runs vary ")
    assert "runs a side would judge a change this size" in ttft["verdict"]


H100 = REPO_ROOT / "tests" / "data" / "h100-serving"  # real runs: nine of one configuration (A), seven of another (B)
A_RUNS = sorted(H100.glob("*_A.json"))
B_RUNS = sorted(H100.glob("*_B.json"))
FIRST_SESSION = A_RUNS[:4]  # 01, 02, 04, 06: the first call's A runs (SOURCE.txt)
SERVING = ("ttft", "tpot", "itl", "e2el", "output_throughput", "request_throughput", "total_token_throughput")


def compared(cli, tmp_path, candidate: list[Path], baseline: list[Path]) -> dict[str, dict]:
    sides = []
    for name, runs in (("candidate", candidate), ("baseline", baseline)):
        folder = tmp_path / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        for run in runs:
            shutil.copy(run, folder / run.name)
        sides.append(str(folder))
    result = cli("compare", *sides, "--json")
    assert result.exit_code == 0, result.stderr
    return {r["metric"]: r for r in json.loads(result.stdout)["metrics"] if r["metric"] in SERVING}


def test_one_run_a_side_on_a_real_h100_gets_no_verdict(cli, tmp_path):
    assert len(A_RUNS) == 9 and len(B_RUNS) == 7
    # one run a side: the requests' interval alone would have called identical code worse (run 4 against run 1)
    rows = compared(cli, tmp_path, [FIRST_SESSION[2]], [FIRST_SESSION[0]])
    assert rows["ttft"]["change_low"] > 0 and rows["itl"]["change_low"] > 0 and rows["ttft"]["change_pct"] > 0.3
    for candidate, baseline in itertools.permutations(FIRST_SESSION, 2):
        verdicts = {m: r["verdict"] for m, r in compared(cli, tmp_path, [candidate], [baseline]).items()}
        assert verdicts and all(v.startswith("no verdict: ") for v in verdicts.values()), (candidate, verdicts)
    # one run against the other three: no verdict (three runs' spread does not stand for the fourth)
    for one in FIRST_SESSION:
        rest = [r for r in FIRST_SESSION if r != one]
        verdicts = {m: r["verdict"] for m, r in compared(cli, tmp_path, [one], rest).items()}
        assert all(v.startswith("no verdict: one run on a side") for v in verdicts.values()), (one, verdicts)


def test_identical_configurations_on_a_real_h100_are_never_called_different(cli, tmp_path):
    # three runs a side, as recorded (consecutive A runs, interleaved with B): every pair of them, both ways
    triples = [A_RUNS[0:3], A_RUNS[3:6], A_RUNS[6:9]]
    for candidate, baseline in itertools.permutations(triples, 2):
        rows = compared(cli, tmp_path, candidate, baseline)
        assert {r["verdict"] for r in rows.values()} == {"no clear change"}, (candidate, baseline, rows)
        assert all(r["variation"] == "between runs: 3 vs 3" for r in rows.values())
    # two runs a side: every split of the first session's four, both ways round
    for pair in itertools.combinations(FIRST_SESSION, 2):
        rest = [r for r in FIRST_SESSION if r not in pair]
        for candidate, baseline in ((list(pair), rest), (rest, list(pair))):
            rows = compared(cli, tmp_path, candidate, baseline)
            assert {r["verdict"] for r in rows.values()} == {"no clear change"}, rows
            assert all(r["variation"] == "between runs: 2 vs 2" for r in rows.values())


def test_a_real_change_on_an_h100_is_seen_with_runs_a_side(cli, tmp_path):
    """Eager attention against fused (sdpa): TTFT 58% worse on the means of 7 runs against 9."""
    rows = compared(cli, tmp_path, B_RUNS, A_RUNS)
    assert rows["ttft"]["verdict"] == "worse" and rows["ttft"]["change_pct"] > 0.5
    assert rows["ttft"]["detectable"] is not None  # and the smallest change these runs could have shown
    # three a side: worse, or no clear change where a side holds a slow run; never better, and where kb
    # cannot tell, the change it could have detected is larger than the one seen
    for candidate in (B_RUNS[0:3], B_RUNS[3:6]):
        for baseline in (A_RUNS[0:3], A_RUNS[3:6], A_RUNS[6:9]):
            ttft = compared(cli, tmp_path, candidate, baseline)["ttft"]
            assert ttft["verdict"] in ("worse", "no clear change"), ttft
            if ttft["verdict"] == "no clear change":
                assert ttft["detectable"] > ttft["change"], ttft


SMALL_CHANGE = REPO_ROOT / "tests" / "data" / "h100-small-change"  # real runs: 16 layers (A) against 17 (C), 5 each


def test_a_change_smaller_than_the_runs_resolve_is_said_to_be_so(cli, tmp_path):
    """A 17th layer (~6% more work a token; ITL +3.2% on the means) against five runs a side that vary by 26%:
    no verdict either way, and the smallest change those runs could have detected, larger than the one seen."""
    a_runs, c_runs = sorted(SMALL_CHANGE.glob("*_A.json")), sorted(SMALL_CHANGE.glob("*_C.json"))
    assert len(a_runs) == len(c_runs) == 5
    rows = compared(cli, tmp_path, c_runs, a_runs)
    assert set(rows) == set(SERVING)
    for metric, row in rows.items():
        assert row["verdict"] == "no clear change", (metric, row)
        assert row["variation"] == "between runs: 5 vs 5"
        assert row["detectable"] > abs(row["change"]), (metric, row)
    assert 0 < rows["itl"]["change_pct"] < 0.1  # the layer's cost is there, within what the runs vary by
