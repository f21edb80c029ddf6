"""Verdicts that survive noise (kbtool/evidence/repeats.py): runs give a mean with a 95% interval, a change
against the baseline's runs gets its own interval, and one crossing zero leaves a finding tentative."""

from __future__ import annotations

import json
import math

import pytest

from conftest import REPO_ROOT
from kbtool.curation import checks as curation
from kbtool.evidence import repeats, verdicts

VLLM = REPO_ROOT / "tests" / "data" / "vllm" / "run_1_TP8_DP1_CTX1024_C100_P100_O128.json"


def run(value: float, metric: str = "output_throughput", unit: str = "tok/s") -> list[dict]:
    return [{"metric": metric, "value": value, "unit": unit, "direction": "higher", "conditions": {"rate": 4}}]


def test_runs_give_a_mean_with_a_t_interval():
    [combined] = repeats.combine_runs([run(100.0), run(104.0), run(96.0)])
    mean, std = 100.0, 4.0  # the three values' mean and sample standard deviation
    half = 4.303 * std / math.sqrt(3)  # Student's t, 2 degrees of freedom
    assert combined["value"] == mean and combined["stats"]["std"] == pytest.approx(std)
    assert combined["stats"]["ci95_low"] == pytest.approx(mean - half)
    assert combined["stats"]["ci95_high"] == pytest.approx(mean + half)
    assert combined["conditions"] == {"rate": 4, "runs": 3}
    assert verdicts.t95(2) == 4.303 and verdicts.t95(200) == verdicts.Z95


def test_the_change_gets_a_welch_interval_and_a_verdict():
    candidate = repeats.combine_runs([run(120.0), run(124.0), run(116.0)])
    baseline = repeats.combine_runs([run(100.0), run(101.0), run(99.0)])
    lines = repeats.judge(candidate, baseline)
    ev = candidate[0]
    se = math.sqrt(4.0**2 / 3 + 1.0**2 / 3)
    df = se**4 / ((4.0**2 / 3) ** 2 / 2 + (1.0**2 / 3) ** 2 / 2)  # Welch-Satterthwaite: 2.24
    half = verdicts.t95(df) * se
    assert ev["baseline"] == 100.0
    assert ev["stats"]["change_ci95_low"] == pytest.approx(20.0 - half)
    assert ev["stats"]["change_ci95_high"] == pytest.approx(20.0 + half)
    assert ev["conditions"]["verdict"] == "better" and lines[0].endswith(": better")
    assert verdicts.verdict(-3.0, 5.0, "higher") == "no clear change"
    assert verdicts.verdict(-9.0, -1.0, "higher") == "worse" and verdicts.verdict(-9.0, -1.0, "lower") == "better"


def test_contradictions_compare_intervals_not_single_values():
    crossing = {
        "value": 103.0,
        "baseline": 100.0,
        "direction": "higher",
        "stats": {"change_ci95_low": -2.0, "change_ci95_high": 8.0},
    }
    clear = {**crossing, "stats": {"change_ci95_low": 1.0, "change_ci95_high": 5.0}}
    assert curation.improved(crossing) is None  # says nothing: cannot contradict anything
    assert curation.improved(clear) is True
    assert curation.improved({k: v for k, v in crossing.items() if k != "stats"}) is True  # one value: as before


def vllm_runs(tmp_path, name: str, throughputs: list[float]) -> list[str]:
    """Copies of a real vLLM result, each with another output throughput: a configuration's runs."""
    raw = json.loads(VLLM.read_text())
    paths = []
    for i, value in enumerate(throughputs):
        path = tmp_path / f"{name}-{i}.json"
        path.write_text(json.dumps({**raw, "output_throughput": value}))
        paths.append(str(path))
    return paths


def add_finding(cli, title: str, candidate: list[str], baseline: list[str]) -> dict:
    args = ["add-finding", "--title", title, "--json"]
    args += [a for p in candidate for a in ("--from", p)] + [a for p in baseline for a in ("--baseline-from", p)]
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_overlapping_runs_give_a_tentative_finding_and_separated_ones_a_confirmed_one(cli, tmp_path):
    baseline = vllm_runs(tmp_path, "base", [5000.0, 5150.0, 4900.0])
    overlapping = add_finding(cli, "Maybe faster", vllm_runs(tmp_path, "a", [5100.0, 4950.0, 5250.0]), baseline)
    assert overlapping["status"] == "tentative"
    ev = next(e for e in overlapping["evidence"] if e["metric"] == "output_throughput")
    assert ev["conditions"]["verdict"] == "no clear change" and ev["conditions"]["runs"] == 3
    assert ev["stats"]["change_ci95_low"] < 0 < ev["stats"]["change_ci95_high"]
    # the unclear changes in one line (each with its interval in the evidence), the clear ones a line each
    unclear = next(line for line in overlapping["body"].splitlines() if line.startswith("- no clear change: "))
    assert "output_throughput" in unclear

    separated = add_finding(cli, "Clearly faster", vllm_runs(tmp_path, "b", [6000.0, 6050.0, 5980.0]), baseline)
    assert separated["status"] == "confirmed"
    ev = next(e for e in separated["evidence"] if e["metric"] == "output_throughput")
    assert ev["conditions"]["verdict"] == "better" and ev["stats"]["change_ci95_low"] > 0
    assert ev["baseline"] == pytest.approx((5000.0 + 5150.0 + 4900.0) / 3)


def test_a_baseline_without_runs_of_the_candidate_is_refused(cli, tmp_path):
    result = cli("add-finding", "--title", "x", "--baseline-from", str(VLLM))
    assert result.exit_code == 2 and "--from FILE" in result.stderr


def test_kb_compare_two_folders_of_runs_and_two_findings(cli, tmp_path):
    for side, values in (("candidate", [6000.0, 6050.0, 5980.0]), ("baseline", [5000.0, 5150.0, 4900.0])):
        folder = tmp_path / side
        folder.mkdir()
        for path in vllm_runs(folder, "run", values):
            assert path.startswith(str(folder))
        (folder / "notes.txt").write_text("the server was warmed up first\n")  # not an export: passed over
    result = cli("compare", str(tmp_path / "candidate"), str(tmp_path / "baseline"), "--json")
    assert result.exit_code == 0, result.stderr
    rows = {r["metric"]: r for r in json.loads(result.stdout)["metrics"]}
    out = rows["output_throughput"]
    assert (out["candidate_runs"], out["baseline_runs"]) == (3, 3) and out["verdict"] == "better"
    assert out["change"] == pytest.approx(6010.0 - 5016.666666666667)
    assert out["change_low"] > 0 and out["candidate_low"] < 6010.0 < out["candidate_high"]
    assert rows["ttft"]["verdict"] == "no clear change"  # the same in every run of both sides
    text = cli("compare", str(tmp_path / "candidate"), str(tmp_path / "baseline")).stdout
    assert "output_throughput (3 vs 3 runs): 6010 [" in text and ": better" in text

    # two findings, each from its runs: compared by id
    ids = []
    for side in ("candidate", "baseline"):
        runs = sorted(str(p) for p in (tmp_path / side).glob("*.json"))
        ids.append(add_finding(cli, f"{side} throughput", runs, [])["id"])
    by_id = {r["metric"]: r for r in json.loads(cli("compare", *ids, "--json").stdout)["metrics"]}
    assert by_id["output_throughput"]["verdict"] == "better"
    assert by_id["output_throughput"]["change"] == pytest.approx(out["change"])


def test_kb_compare_refuses_what_it_cannot_read(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    for args, words in (
        ([str(tmp_path / "nowhere"), str(VLLM)], "no card or skill"),
        ([str(tmp_path / "empty"), str(VLLM)], "no benchmark export kb reads in this folder"),
    ):
        result = cli("compare", *args)
        assert result.exit_code == 2 and words in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_an_aiperf_artifact_folder_is_one_run_with_its_records_interval(cli, tmp_path):
    folder = tmp_path / "artifacts" / "run-c1"
    folder.mkdir(parents=True)
    aiperf = REPO_ROOT / "tests" / "data" / "aiperf"
    for name in ("profile_export_aiperf.json", "profile_export.jsonl"):
        (folder / name).write_bytes((aiperf / name).read_bytes())
    (folder / "logs.txt").write_text("aiperf.log would be here\n")
    finding = add_finding(cli, "TTFT at concurrency 1", [str(folder)], [])
    ttft = next(e for e in finding["evidence"] if e["metric"] == "time_to_first_token")
    aggregate = json.loads((aiperf / "profile_export_aiperf.json").read_text())["time_to_first_token"]
    assert ttft["value"] == aggregate["avg"] and ttft["stats"]["p99"] == aggregate["p99"]
    assert ttft["stats"]["ci95_low"] < aggregate["avg"] < ttft["stats"]["ci95_high"]  # from the records
    assert ttft["conditions"]["records"] == "per-request" and ttft["conditions"]["concurrency"] == 1
    assert ttft["artifact"]["path"].endswith("run-c1/profile_export_aiperf.json")

    # the folder holding the runs is taken as those runs (issue 45: as a comparison side is), ...
    whole = add_finding(cli, "TTFT at concurrency 1, again", [str(tmp_path / "artifacts")], [])
    again = next(e for e in whole["evidence"] if e["metric"] == "time_to_first_token")
    assert again["value"] == ttft["value"] and again["artifact"]["path"].endswith("run-c1/profile_export_aiperf.json")
    # ... and a folder holding no run is refused in one line
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "logs.txt").write_text("no export here\n")
    result = cli("add-finding", "--title", "x", "--from", str(tmp_path / "notes"))
    assert result.exit_code == 2 and "no benchmark export kb reads" in result.stderr and result.stderr.count("\n") == 1


def test_a_run_its_tool_calls_invalid_leaves_the_finding_tentative(cli):
    invalid = REPO_ROOT / "tests" / "data" / "mlperf" / "llama3.1-8b-Server-mlperf_log_summary.txt"
    finding = add_finding(cli, "llama3.1-8b Server", [str(invalid)], [])
    assert finding["status"] == "tentative"
    assert "## Invalid runs" in finding["body"]
    assert "LoadGen says the result is INVALID (Performance constraints satisfied: No" in finding["body"]
    valid = REPO_ROOT / "tests" / "data" / "mlperf" / "llama2-70b-99-Server-mlperf_log_summary.txt"
    assert add_finding(cli, "llama2-70b Server", [str(valid)], [])["status"] == "confirmed"


def test_runs_pair_by_the_load_not_by_where_the_server_was_or_which_engine(cli, tmp_path):
    """A baseline engine and a candidate are served at different addresses, often by different engines:
    their runs still pair by what was asked of them (the load), not by the URL or the backend."""
    aiperf = json.loads((REPO_ROOT / "tests" / "data" / "aiperf" / "profile_export_aiperf.json").read_text())
    sides = {}
    for side, url in (("candidate", "http://127.0.0.1:8001"), ("baseline", "http://127.0.0.1:8000")):
        folder = tmp_path / side
        folder.mkdir()
        config = {**aiperf["input_config"], "endpoint": {**aiperf["input_config"]["endpoint"], "urls": [url]}}
        ran = {**aiperf, "input_config": config, "benchmark_id": f"{side}-run"}  # each side its own run
        (folder / "profile_export_aiperf.json").write_text(json.dumps(ran))
        sides[side] = str(folder)
    result = cli("compare", sides["candidate"], sides["baseline"], "--json")
    assert result.exit_code == 0, result.stderr
    assert "output_token_throughput" in {r["metric"] for r in json.loads(result.stdout)["metrics"]}

    raw = json.loads(VLLM.read_text())
    engines = {}
    for backend in ("vllm", "sglang"):
        path = tmp_path / f"{backend}.json"
        path.write_text(json.dumps({**raw, "backend": backend}))
        engines[backend] = str(path)
    result = cli("compare", engines["sglang"], engines["vllm"], "--json")
    assert result.exit_code == 0, result.stderr
