"""gates/compare.py, the starter gates' script, reads runs and judges them with the code `kb compare`
runs (kbtool.loop.runs, kbtool.loop.repeats): the same means, intervals and verdicts, for AIPerf artifact
folders, folders of repeated runs and lm-evaluation-harness scores; what it cannot measure fails (exit 2)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_repeats import vllm_runs

from conftest import REPO_ROOT

COMPARE = REPO_ROOT / "gates" / "compare.py"
DATA = REPO_ROOT / "tests" / "data"
LM_EVAL = DATA / "lm-eval" / "results_2025-08-17T08-36-22.283186.json"


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


def test_one_artifact_folder_a_side_is_judged_with_the_records_interval(cli, tmp_path):
    a, b = artifact_folder(tmp_path, "candidate"), artifact_folder(tmp_path, "baseline")
    out = measured("aiperf", a, b, "time_to_first_token", "--lower-is-better")
    assert out["speedup"] == 1.0 and out["verdict"] == "no clear change"
    assert out["change_low"] == pytest.approx(-out["change_high"]) and out["change_low"] < 0
    assert out["speedup_low"] < 1.0

    # the same numbers `kb compare` reports for the two folders
    rows = {r["metric"]: r for r in json.loads(cli("compare", str(a), str(b), "--json").stdout)["metrics"]}
    ttft = rows["time_to_first_token"]
    assert out["candidate"] == ttft["candidate"] and out["change_low"] == pytest.approx(ttft["change_low"])
    half = (ttft["candidate_high"] - ttft["candidate_low"]) / 2
    assert out["change_high"] == pytest.approx(math.sqrt(2) * half)  # two equal, independent intervals

    # a percentile: its value from each run, no interval from one run a side
    p50 = measured("aiperf", a, b, "time_to_first_token", "--stat", "p50", "--lower-is-better")
    aggregate = json.loads((DATA / "aiperf" / "profile_export_aiperf.json").read_text())
    assert p50["candidate"] == aggregate["time_to_first_token"]["p50"] and "speedup_low" not in p50
    assert p50["verdict"].startswith("no interval")


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


def test_an_accuracy_delta_gets_its_interval_from_the_standard_errors():
    out = measured("lm-eval", LM_EVAL, LM_EVAL, "gsm8k", "exact_match,strict-match")
    scores = json.loads(LM_EVAL.read_text())["results"]["gsm8k"]
    stderr = scores["exact_match_stderr,strict-match"]
    assert out["delta"] == 0.0 and out["candidate"] == scores["exact_match,strict-match"]
    assert out["delta_high"] == pytest.approx(1.959964 * math.sqrt(2) * stderr)
    assert out["verdict"] == "no clear change"


def test_what_cannot_be_measured_exits_2_in_one_line(tmp_path):
    a = artifact_folder(tmp_path, "a")
    invalid = DATA / "mlperf" / "llama3.1-8b-Server-mlperf_log_summary.txt"
    for args, words in (
        (["aiperf", a, tmp_path / "nowhere", "time_to_first_token"], "no such file or folder"),
        (["aiperf", a, a, "no_such_metric"], "has no metric 'no_such_metric'"),
        (["aiperf", a, a, "time_to_first_token", "--stat", "p42"], "has no time_to_first_token.p42"),
        (["lm-eval", LM_EVAL, LM_EVAL, "gsm8k", "exact_match,nope"], "has no metric 'gsm8k/exact_match/nope'"),
        (["aiperf", invalid, invalid, "latency"], "an invalid run cannot pass a gate"),
    ):
        result = compare(*args)
        assert result.returncode == 2 and words in result.stderr and result.stderr.count("\n") == 1, result.stderr
        assert result.stdout == ""
    # a python that has no kbtool: said in one line, not a traceback
    bare = compare("aiperf", a, a, "time_to_first_token", python=[sys.executable, "-I", "-S"])
    assert bare.returncode == 2 and "KB_PYTHON" in bare.stderr and "Traceback" not in bare.stderr
