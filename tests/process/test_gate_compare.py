"""A gate's comparison (kbtool.curation.gate_compare, run by kb for a check.compare, and by gates/compare.py
for a command gate) reads runs and judges them with the code `kb compare` runs (kbtool.evidence.runs,
kbtool.evidence.repeats): the same means, intervals and verdicts, for AIPerf artifact folders, folders of
repeated runs, sweeps and lm-evaluation-harness scores. Over a sweep the least favourable load decides;
what cannot be measured fails, saying why (the script: exit 2, one line)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_repeats import vllm_runs

from conftest import REPO_ROOT, as_another_run
from kbtool.curation.gate_compare import judge
from kbtool.model.cards import GateCheck

COMPARE = REPO_ROOT / "gates" / "compare.py"
DATA = REPO_ROOT / "tests" / "data"
LM_EVAL = DATA / "lm-eval" / "results_2025-08-17T08-36-22.283186.json"
VLLM_SWEEP = DATA / "vllm" / "results.json"  # one JSON object per request rate (its first six: a vLLM server)


def compare(*args: str | Path, python: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [*(python or [sys.executable]), str(COMPARE), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT)


def measured(*args: str | Path) -> dict:
    result = compare(*args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def artifact_folder(tmp_path: Path, name: str) -> Path:
    """A copy of the real AIPerf artifact folder: the aggregate and the per-request records."""
    folder = tmp_path / name
    folder.mkdir()
    for file in ("profile_export_aiperf.json", "profile_export.jsonl"):
        shutil.copy(DATA / "aiperf" / file, folder / file)
    return folder


def test_one_artifact_folder_a_side_gets_no_verdict_from_its_records_interval(cli, tmp_path):
    """Requests inside one run vary less than runs do: the records' interval is shown, labelled, never a
    verdict about the configuration, and no lower bound a gate could pass on."""
    a, b = artifact_folder(tmp_path, "candidate"), as_another_run(artifact_folder(tmp_path, "baseline"))
    out = measured("aiperf", a, b, "time_to_first_token", "--lower-is-better")
    assert out["speedup"] == 1.0 and out["verdict"] == "no verdict: one run a side (3 or more runs a side judge it)"
    assert "speedup_low" not in out and "change_low" not in out

    # `kb compare` shows the change with the interval of one run's requests, labelled as such, and no verdict
    # (a run against itself is refused, tests/process/test_same_run.py: the baseline is the run under another id)
    rows = {r["metric"]: r for r in json.loads(cli("compare", str(a), str(b), "--json").stdout)["metrics"]}
    ttft = rows["time_to_first_token"]
    assert out["candidate"] == ttft["candidate"] and ttft["verdict"] == out["verdict"]
    assert ttft["variation"] == "within one run (its requests)" and ttft["detectable"] is None
    half = (ttft["candidate_high"] - ttft["candidate_low"]) / 2
    assert ttft["change_high"] == pytest.approx(math.sqrt(2) * half)  # two equal, independent intervals

    # a percentile: its value from each run, no interval from one run a side
    p50 = measured("aiperf", a, b, "time_to_first_token", "--stat", "p50", "--lower-is-better")
    aggregate = json.loads((DATA / "aiperf" / "profile_export_aiperf.json").read_text())
    assert p50["candidate"] == aggregate["time_to_first_token"]["p50"] and "speedup_low" not in p50
    assert p50["verdict"].startswith("no verdict: one run a side")


def test_folders_of_repeated_runs_give_a_speedup_with_its_lower_bound(tmp_path):
    for side, values in (("candidate", [6000.0, 6050.0, 5980.0]), ("baseline", [5000.0, 5150.0, 4900.0])):
        (tmp_path / side).mkdir()
        vllm_runs(tmp_path / side, "run", values)
    out = measured("aiperf", tmp_path / "candidate", tmp_path / "baseline", "output_throughput")
    candidate, baseline = 6010.0, 15050.0 / 3
    assert (out["candidate_runs"], out["baseline_runs"]) == (3, 3)
    assert out["speedup"] == pytest.approx(candidate / baseline) and out["verdict"] == "better"
    assert out["speedup_low"] == pytest.approx((baseline + out["change_low"]) / baseline)
    assert 1.0 < out["speedup_low"] < out["speedup"]


def test_an_accuracy_delta_gets_its_interval_from_the_standard_errors(tmp_path):
    again = as_another_run(Path(shutil.copy(LM_EVAL, tmp_path / LM_EVAL.name)))
    out = measured("lm-eval", again, LM_EVAL, "gsm8k", "exact_match,strict-match")
    scores = json.loads(LM_EVAL.read_text())["results"]["gsm8k"]
    stderr = scores["exact_match_stderr,strict-match"]
    assert out["delta"] == 0.0 and out["candidate"] == scores["exact_match,strict-match"]
    assert out["delta_high"] == pytest.approx(1.959964 * math.sqrt(2) * stderr)
    assert out["verdict"] == "no clear change"


def test_what_cannot_be_measured_exits_2_in_one_line(tmp_path):
    a, b = artifact_folder(tmp_path, "a"), as_another_run(artifact_folder(tmp_path, "b"))
    lm_eval = as_another_run(Path(shutil.copy(LM_EVAL, tmp_path / LM_EVAL.name)))
    invalid = DATA / "mlperf" / "llama3.1-8b-Server-mlperf_log_summary.txt"
    for args, words in (
        (["aiperf", a, tmp_path / "nowhere", "time_to_first_token"], "no such file or folder"),
        (["aiperf", a, b, "no_such_metric"], "has no metric 'no_such_metric'"),
        (["aiperf", a, b, "time_to_first_token", "--stat", "p42"], "has no time_to_first_token.p42"),
        (["lm-eval", lm_eval, LM_EVAL, "gsm8k", "exact_match,nope"], "has no metric 'gsm8k/exact_match/nope'"),
        (["aiperf", a, a, "time_to_first_token"], "are one run (AIPerf benchmark"),
        (["aiperf", invalid, invalid, "latency"], "an invalid run cannot pass a gate"),
    ):
        result = compare(*args)
        assert result.returncode == 2 and words in result.stderr and result.stderr.count("\n") == 1, result.stderr
        assert result.stdout == ""
    # a python that has no kbtool: said in one line, not a traceback
    bare = compare("aiperf", a, a, "time_to_first_token", python=[sys.executable, "-I", "-S"])
    assert bare.returncode == 2 and "KB_PYTHON" in bare.stderr and "Traceback" not in bare.stderr


def check(measure: str = "speedup", op: str = ">=", threshold: float = 1.2, **compare: str) -> GateCheck:
    """A gate's check: compare (its paths default to runs/candidate and runs/baseline), the measure judged."""
    return GateCheck.model_validate(
        {"compare": {"metric": "output_throughput", **compare}, "metric": measure, "op": op, "threshold": threshold}
    )


def sweep(path: Path, scale: dict[float | str, float]) -> None:
    """The vLLM server's six request rates of the real sweep, output throughput scaled per rate."""
    rows = [json.loads(line) for line in VLLM_SWEEP.read_text().splitlines()[:6]]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({**r, "output_throughput": r["output_throughput"] * scale.get(r["request_rate"], 1.0)}) + "\n"
            for r in rows
        )
    )


def test_a_sweep_is_judged_by_its_least_favourable_load(tmp_path):
    sweep(tmp_path / "runs" / "baseline" / "sweep.json", {})
    faster = {1.0: 1.5, 10.0: 1.5, 20.0: 1.1, 30.0: 1.4, 35.0: 1.5, "inf": 1.3}
    sweep(tmp_path / "runs" / "candidate" / "sweep.json", faster)
    judged = judge(check(), tmp_path)
    assert judged.value == pytest.approx(1.1)  # 20 req/s, not the 1.5 most rates reach
    assert "request_rate=20" in judged.detail and "the least favourable of 6 loads" in judged.detail
    out = json.loads(judged.output)
    assert out["speedup"] == pytest.approx(1.1) and out["load"]["request_rate"] == 20.0
    assert sorted(round(r["speedup"], 3) for r in out["loads"]) == [1.1, 1.3, 1.4, 1.5, 1.5, 1.5]
    # a gate that caps a measure takes the largest instead
    assert judge(check("change_pct", "<=", 0.6), tmp_path).value == pytest.approx(0.5)
    # said the other way round (lower is better), the same runs are slower at every load
    assert judge(check(direction="lower"), tmp_path).value == pytest.approx(1 / 1.5)


def test_an_accuracy_check_judges_the_delta_with_its_interval(tmp_path):
    real = json.loads(LM_EVAL.read_text())
    key = "exact_match,strict-match"
    for side, score in (("oracle", 0.79), ("candidate", 0.80)):
        gsm8k = {**real["results"]["gsm8k"], key: score}
        path = tmp_path / "runs" / "accuracy" / f"{side}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**real, "results": {**real["results"], "gsm8k": gsm8k}}))
    accuracy = {"metric": "gsm8k/exact_match/strict-match", "baseline": "runs/accuracy/oracle.json"}
    judged = judge(check("delta", ">=", 0.0, candidate="runs/accuracy/candidate.json", **accuracy), tmp_path)
    out = json.loads(judged.output)
    assert judged.value == pytest.approx(0.01) and judged.detail.endswith(
        f"0.8 vs 0.79 (higher is better): {out['verdict']}"
    )
    assert out["delta_low"] < 0.01 < out["delta_high"] and out["direction"] == "higher"
    low = judge(check("delta_low", ">=", 0.0, candidate="runs/accuracy/candidate.json", **accuracy), tmp_path)
    assert low.value == pytest.approx(out["delta_low"])


def test_what_cannot_be_measured_fails_the_check_saying_why(tmp_path):
    project = tmp_path / "project"
    (project / "runs").mkdir(parents=True)
    artifact_folder(project / "runs", "candidate")
    as_another_run(artifact_folder(project / "runs", "baseline"))
    (project / "runs" / "copy").mkdir()
    artifact_folder(project / "runs" / "copy", "candidate")  # the candidate copied: one run, refused
    invalid = DATA / "mlperf" / "llama3.1-8b-Server-mlperf_log_summary.txt"
    (project / "runs" / "mlperf").mkdir()
    shutil.copy(invalid, project / "runs" / "mlperf" / invalid.name)
    (project / "runs" / "c100").mkdir()
    shutil.copy(DATA / "vllm" / "run_1_TP8_DP1_CTX1024_C100_P100_O128.json", project / "runs" / "c100")
    (project / "runs" / "c1").mkdir()
    shutil.copy(DATA / "vllm" / "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json", project / "runs" / "c1")
    for gate, words in (
        (check(candidate="runs/nowhere"), "runs/nowhere: no such file or folder"),
        (check(baseline="runs/copy/candidate", metric="time_to_first_token"), "are one run (AIPerf benchmark"),
        (check(), "runs/candidate has no metric 'output_throughput'"),  # AIPerf calls it output_token_throughput
        (check(metric="inter_token_latency", stat="p42"), "has no inter_token_latency.p42"),
        (check(candidate="runs/mlperf", baseline="runs/mlperf", metric="latency"), "an invalid run cannot pass"),
        (check(candidate="runs/c100", baseline="runs/c1", metric="ttft"), "different loads get no verdict: input"),
        (check("speedup_low", metric="time_to_first_token", stat="p50"), "no verdict: one run a side"),
    ):
        judged = judge(gate, project)
        assert judged.value is None and words in judged.detail, judged.detail
        assert str(tmp_path) not in judged.detail  # the project's own paths: the line is recorded
        assert "--ignore-condition" not in judged.detail  # kb compare's option, not a gate's
