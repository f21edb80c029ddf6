"""The exports of the field's benchmark and evaluation tools, read from real files (tests/data/*/,
each with its SOURCE.txt): every number the reader keeps is checked against the file, read here
by plain lookups, and damaged copies are refused in one line with nothing written."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from conftest import REPO_ROOT, tree_state
from kbtool.evidence import formats
from kbtool.evidence.formats import aiperf_records, guidellm, lm_eval, mlperf, serving
from kbtool.model.errors import BadInput

DATA = REPO_ROOT / "tests" / "data"
LM_EVAL_2025 = DATA / "lm-eval" / "results_2025-08-17T08-36-22.283186.json"
LM_EVAL_2024 = DATA / "lm-eval" / "results_2024-10-05T23-16-55.982162.json"
GUIDELLM_JSON = DATA / "guidellm" / "Qwen_Qwen3-4B-Thinking-2507_tp4_quant-fp8_benchmarks.json"
GUIDELLM_YAML = DATA / "guidellm" / "benchmark-results.yaml"
SGLANG = DATA / "sglang" / "llama_3_3_70b_online_output.jsonl"


def by_metric(parsed: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for ev in parsed["evidence"]:
        out.setdefault(ev["metric"], []).append(ev)
    return out


def test_lm_eval_keeps_every_top_level_score_with_its_stderr_shots_and_samples():
    raw = json.loads(LM_EVAL_2025.read_text())
    parsed = lm_eval.parse_lm_eval(LM_EVAL_2025)
    got = by_metric(parsed)
    gsm = got["gsm8k/exact_match/strict-match"][0]
    assert gsm["value"] == 0.012130401819560273 and gsm["stats"] == {"stderr": 0.0030152942428909395}
    assert gsm["samples"] == 1319 and gsm["direction"] == "higher"
    assert gsm["conditions"] == {"format": "lm-eval", "n_shot": 5, "task_version": 3.0, "filter": "strict-match"}
    assert gsm["environment"] == {  # the versions it names, and torch's collect_env of the process that ran it
        "lm_eval": "0.4.9.1",
        "transformers": "4.55.2",
        "torch": "2.8.0+cu128",
        "python": "3.10.12",
        "gpu": "NVIDIA GeForce RTX 4090",
        "driver": "580.65.06",
    }
    assert parsed["applies_to"] == {"model": "google/gemma-3-270m"}
    # the group stands for its 71 subtasks and sub-groups: gsm8k's two filters, tmmluplus's acc and acc_norm
    assert sorted(got) == [
        "gsm8k/exact_match/flexible-extract",
        "gsm8k/exact_match/strict-match",
        "tmmluplus/acc",
        "tmmluplus/acc_norm",
    ]
    nested = {t for subtasks in raw["group_subtasks"].values() for t in subtasks}
    for task, scores in raw["results"].items():  # every number kept is the file's, to the last digit
        if task in nested:
            continue
        for key, value in scores.items():
            metric, _, filt = key.partition(",")
            if metric.endswith("_stderr") or not isinstance(value, float):
                continue
            [ev] = got[f"{task}/{metric}" + (f"/{filt}" if filt != "none" else "")]
            assert ev["value"] == value and ev["stats"]["stderr"] == scores[f"{metric}_stderr,{filt}"]
            if task in raw["n-samples"]:
                assert ev["samples"] == raw["n-samples"][task]["effective"]


def test_lm_eval_says_which_way_is_better_from_the_file():
    got = by_metric(lm_eval.parse_lm_eval(LM_EVAL_2024))
    assert got["lambada_openai/perplexity"][0]["direction"] == "lower"  # higher_is_better: false
    assert got["piqa/acc_norm"][0]["value"] == json.loads(LM_EVAL_2024.read_text())["results"]["piqa"]["acc_norm,none"]
    assert len(got) == 10 and all(len(v) == 1 for v in got.values())


@pytest.mark.parametrize("path", [GUIDELLM_JSON, GUIDELLM_YAML])
def test_guidellm_keeps_each_metric_of_the_successful_requests(path):
    raw = yaml.safe_load(path.read_text()) if path.suffix == ".yaml" else json.loads(path.read_text())
    parsed = guidellm.parse_guidellm(path)
    got = by_metric(parsed)
    metrics = raw["benchmarks"][0]["metrics"]
    for name in guidellm.GUIDELLM_UNITS:
        block = (metrics.get(name) or {}).get("successful")
        if not block:
            continue
        [ev] = got[name.removesuffix("_ms")]
        assert ev["value"] == block["mean"] and ev["stats"]["avg"] == block["mean"]
        assert ev["stats"]["p50"] == block["median"] and ev["stats"]["std"] == block["std_dev"]
        assert (ev["stats"]["min"], ev["stats"]["max"]) == (block["min"], block["max"])
        assert ev["samples"] == block["count"]
        for label, value in block["percentiles"].items():
            if re.fullmatch(r"p\d\d", label) and label != "p50":
                assert ev["stats"][f"p{int(label[1:])}"] == value, (name, label)
    assert got["time_to_first_token"][0]["unit"] == "ms" and got["request_latency"][0]["unit"] == "s"


def test_guidellm_names_the_model_and_the_load():
    parsed = guidellm.parse_guidellm(GUIDELLM_JSON)
    assert parsed["applies_to"] == {"model": "Qwen/Qwen3-4B-Thinking-2507"}
    ttft = by_metric(parsed)["time_to_first_token"][0]
    assert ttft["value"] == 171.7655062675476 and ttft["conditions"]["strategy"] == "concurrent"
    assert ttft["conditions"]["concurrency"] == 4 and ttft["environment"] == {"guidellm": "0.5.0.dev0"}
    assert guidellm.parse_guidellm(GUIDELLM_YAML)["applies_to"] == {"model": "llama-3-2-3b"}


def test_sglang_keeps_every_run_of_the_file():
    runs = [json.loads(line) for line in SGLANG.read_text().splitlines() if line.strip()]
    parsed = serving.parse_serving(SGLANG)
    assert parsed["applies_to"] == {"engine": "sglang"}
    for n, run in enumerate(runs, 1):
        mine = [ev for ev in parsed["evidence"] if ev["conditions"]["run"] == n]
        got = {ev["metric"]: ev for ev in mine}
        assert got["output_throughput"]["value"] == run["output_throughput"]
        assert got["output_throughput"]["unit"] == "tok/s" and got["output_throughput"]["samples"] == run["completed"]
        assert got["ttft"]["stats"]["p50"] == run["median_ttft_ms"] and got["ttft"]["unit"] == "ms"
        assert got["e2e_latency"]["value"] == run["mean_e2e_latency_ms"]
        assert got["e2e_latency"]["stats"] == {"avg": run["mean_e2e_latency_ms"], "p50": run["median_e2e_latency_ms"]}
        assert got["itl"]["stats"]["p50"] == run["median_itl_ms"] and got["itl"]["direction"] == "lower"
        assert mine[0]["conditions"]["request_rate"] == run["request_rate"]
    assert {ev["conditions"]["run"] for ev in parsed["evidence"]} == set(range(1, len(runs) + 1))
    assert {ev["conditions"]["dataset"] for ev in parsed["evidence"]} == {r["dataset_name"] for r in runs}


@pytest.mark.parametrize(
    ("source", "damage", "words"),
    [
        (LM_EVAL_2025, lambda t: t[: len(t) // 2], "not valid JSON: it breaks at line"),
        (LM_EVAL_2025, lambda t: t.replace('"n-shot"', '"shots"'), "not a format kb recognises"),
        (GUIDELLM_JSON, lambda t: t.replace('"mean": 171.7655062675476', '"mean": "fast"'), "time_to_first_token"),
        (SGLANG, lambda t: t + "{broken\n", "not JSON"),
    ],
)
def test_damaged_exports_are_refused_in_one_line_and_write_nothing(source, damage, words, cli, kb, tmp_path):
    copy = tmp_path / source.name
    copy.write_text(damage(source.read_text()))
    with pytest.raises(BadInput, match=re.escape(words)):
        formats.reader_for(copy).read(copy, "metric")
    before = tree_state(kb.root)
    result = cli("add-finding", "--title", "From a damaged export", "--from", str(copy))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and words in result.stderr, result.stderr
    assert tree_state(kb.root) == before


def test_a_finding_from_an_lm_eval_file_is_accuracy_evidence(cli, kb):
    result = cli("add-finding", "--title", "gemma-3-270m GSM8K 5-shot", "--from", str(LM_EVAL_2025), "--json")
    assert result.exit_code == 0, result.stderr
    card = json.loads(result.stdout)
    strict = next(e for e in card["evidence"] if e["metric"] == "gsm8k/exact_match/strict-match")
    assert strict["value"] == 0.012130401819560273 and strict["artifact"]["sha256"]
    assert card["applies_to"]["model"] == "google/gemma-3-270m"


def test_every_sample_has_its_source_written_down():
    for folder in DATA.iterdir():
        samples = [p for p in folder.iterdir() if p.name != "SOURCE.txt"]
        text = (folder / "SOURCE.txt").read_text()
        assert samples and all(p.name in text for p in samples), folder


VLLM = DATA / "vllm" / "run_1_TP8_DP1_CTX1024_C100_P100_O128.json"
VLLM_APPENDED = DATA / "vllm" / "results.json"
SGLANG_NEW = DATA / "sglang" / "agg_n100_in512_out128_c32.jsonl"


def check_serving_run(run: dict, evidence: list[dict]) -> None:
    """Every number of a vLLM or SGLang run, as the reader keeps it."""
    got = {ev["metric"]: ev for ev in evidence}
    for key, value in run.items():
        found = serving.LATENCY_KEY.match(key)
        if found and isinstance(value, float):
            stat, metric = found.groups()
            stat = {"mean": "avg", "median": "p50"}.get(stat, stat)
            assert got[metric]["stats"][stat] == value and got[metric]["unit"] == "ms", key
        elif key in serving.THROUGHPUTS and isinstance(value, (int, float)):
            assert got[key]["value"] == value and got[key]["unit"] == serving.THROUGHPUTS[key], key
    for ev in evidence:
        assert ev["samples"] == run["completed"] if "samples" in ev else ev["metric"] == "failed_requests"


@pytest.mark.parametrize("path", [VLLM, VLLM_APPENDED, SGLANG, SGLANG_NEW])
def test_every_number_of_a_serving_run_is_kept(path):
    text = path.read_text()
    try:
        runs = [json.loads(text)]
    except json.JSONDecodeError:
        runs = [json.loads(line) for line in text.splitlines() if line.strip()]
    parsed = serving.parse_serving(path)
    for n, run in enumerate(runs, 1):
        mine = [ev for ev in parsed["evidence"] if len(runs) == 1 or ev["conditions"]["run"] == n]
        check_serving_run(run, mine)


def test_a_vllm_result_names_its_model_engine_and_load(cli, kb):
    raw = json.loads(VLLM.read_text())
    parsed = serving.parse_serving(VLLM)
    assert parsed["applies_to"] == {"model": raw["model_id"], "engine": "vllm"}
    ttft = by_metric(parsed)["ttft"][0]
    assert ttft["value"] == raw["mean_ttft_ms"] and ttft["stats"]["p99"] == raw["p99_ttft_ms"]
    assert ttft["conditions"]["concurrency"] == raw["max_concurrency"] and ttft["conditions"]["request_rate"] == "inf"
    failed = by_metric(parsed)["failed_requests"][0]
    assert failed["value"] == raw["failed"] and failed["direction"] == "lower"
    # an SGLang request rate of Infinity (JSON's extension) is kept as "inf", not refused
    assert by_metric(serving.parse_serving(SGLANG_NEW))["ttft"][0]["conditions"]["request_rate"] == "inf"
    result = cli("add-finding", "--title", "GLM-4.7 on 8 B200 at concurrency 100", "--from", str(VLLM), "--json")
    assert result.exit_code == 0, result.stderr
    assert {e["metric"] for e in json.loads(result.stdout)["evidence"]} == {e["metric"] for e in parsed["evidence"]}


AIPERF_RECORDS = DATA / "aiperf" / "profile_export.jsonl"
AIPERF_SUMMARY = DATA / "aiperf" / "profile_export_aiperf.json"


def test_aiperf_records_agree_with_aiperfs_own_summary_of_the_same_run():
    """The per-request reader's statistics, computed by kb, against the aggregate AIPerf wrote itself."""
    summary = json.loads(AIPERF_SUMMARY.read_text())
    parsed = aiperf_records.parse_aiperf_records(AIPERF_RECORDS)
    compared = 0
    for ev in parsed["evidence"]:
        theirs = summary.get(ev["metric"])
        if not isinstance(theirs, dict) or "avg" not in theirs:
            continue
        for stat in ("avg", "min", "max", "p50", "p90", "p95", "p99", "count"):
            assert ev["stats"][stat] == pytest.approx(theirs[stat], rel=1e-12), (ev["metric"], stat)
        n = ev["samples"]
        # AIPerf's std is the population's; kb keeps the sample's (n - 1), which intervals need
        assert ev["stats"]["std"] * ((n - 1) / n) ** 0.5 == pytest.approx(theirs["std"], rel=1e-9, abs=1e-12)
        assert ev["unit"] == theirs["unit"]
        compared += 1
    assert compared >= 20


def test_aiperf_records_carry_a_bootstrap_interval_of_the_mean():
    first = by_metric(aiperf_records.parse_aiperf_records(AIPERF_RECORDS))["time_to_first_token"][0]
    stats = first["stats"]
    assert stats["min"] < stats["ci95_low"] < stats["avg"] < stats["ci95_high"] < stats["max"]
    # a normal-theory interval of the mean is close: the bootstrap agrees with it on 30 requests
    half = 1.96 * stats["std"] / first["samples"] ** 0.5
    assert stats["ci95_low"] == pytest.approx(stats["avg"] - half, rel=0.02)
    again = by_metric(aiperf_records.parse_aiperf_records(AIPERF_RECORDS))["time_to_first_token"][0]
    assert again["stats"] == stats  # a fixed seed: the same records, the same interval
    assert formats.reader_for(AIPERF_RECORDS).name == "aiperf-records"


MLPERF = sorted((DATA / "mlperf").glob("*-mlperf_log_summary.txt"))


@pytest.mark.parametrize("path", MLPERF, ids=lambda p: p.name.split("-mlperf")[0])
def test_every_number_of_an_mlperf_summary_is_kept(path):
    """Each `label : number` line above Test Parameters, read here by a plain split, is in the evidence."""
    text = path.read_text()
    head = text.split("Test Parameters Used")[0]
    parsed = mlperf.parse_mlperf(path)
    kept = [ev["value"] for ev in parsed["evidence"]] + [
        v for ev in parsed["evidence"] for v in ev.get("stats", {}).values()
    ]
    lines = [line.rsplit(":", 1) for line in head.splitlines() if ":" in line]
    numbers = [float(value) for _, value in lines if re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", value)]
    assert numbers and all(n in kept for n in numbers), [n for n in numbers if n not in kept]
    result = re.search(r"Result is : (\w+)", text).group(1)
    assert all(ev["conditions"]["result"] == result for ev in parsed["evidence"])
    assert formats.reader_for(path).name == "mlperf"


def test_an_invalid_mlperf_run_says_why():
    invalid = next(p for p in MLPERF if "llama3.1" in p.name)
    ttft = by_metric(mlperf.parse_mlperf(invalid))["first_token_latency"][0]
    assert ttft["conditions"]["result"] == "INVALID"
    assert ttft["conditions"]["unsatisfied"] == "Performance constraints satisfied, Early stopping satisfied"
    assert ttft["unit"] == "ns" and ttft["stats"]["p99_9"] == 97923062578.0 and ttft["value"] == 50385872554.0


DETAILED = [
    DATA / "vllm" / "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json",  # vllm bench serve --save-detailed
    DATA / "sglang" / "tp8_dp1_Qwen3-8B_in1024_out128_p100_c100_38769a.jsonl",  # SGLang's per-request lists
]


@pytest.mark.parametrize("path", DETAILED, ids=["vllm", "sglang"])
def test_per_request_lists_give_the_interval_of_the_mean(path, tmp_path):
    from kbtool.evidence.statistics import bootstrap_mean_interval, bootstrap_pooled_mean_interval

    text = path.read_text()
    run = json.loads(text) if path.suffix == ".json" else json.loads(text.splitlines()[0])
    done = [i for i, error in enumerate(run["errors"]) if not error]
    ttft = [run["ttfts"][i] * 1000 for i in done]
    itl = [[x * 1000 for x in run["itls"][i]] for i in done if run["itls"][i]]  # one token: no gap to time
    got = {ev["metric"]: ev for ev in serving.parse_serving(path)["evidence"]}
    assert got["ttft"]["value"] == run["mean_ttft_ms"] == pytest.approx(sum(ttft) / len(ttft), rel=1e-12)
    low, high = bootstrap_mean_interval(ttft)
    assert (got["ttft"]["stats"]["ci95_low"], got["ttft"]["stats"]["ci95_high"]) == (low, high)
    assert low < run["mean_ttft_ms"] < high and got["ttft"]["conditions"]["records"] == "per-request"
    low, high = bootstrap_pooled_mean_interval([sum(x) for x in itl], [len(x) for x in itl])
    assert (got["itl"]["stats"]["ci95_low"], got["itl"]["stats"]["ci95_high"]) == (low, high)
    assert low <= run["mean_itl_ms"] <= high
    assert "ci95_low" not in got["tpot"]["stats"]  # no per-request latencies to rebuild TPOT from

    # lists that do not give the mean the run reports are not trusted for an interval
    damaged = {**run, "ttfts": [run["ttfts"][0] * 2, *run["ttfts"][1:]]}
    copy = tmp_path / "damaged.json"
    copy.write_text(json.dumps(damaged))
    again = {ev["metric"]: ev for ev in serving.parse_serving(copy)["evidence"]}
    assert "ci95_low" not in again["ttft"]["stats"] and "records" not in again["ttft"]["conditions"]
    assert "ci95_low" in again["itl"]["stats"]


def test_a_single_detailed_run_against_a_baseline_shows_its_requests_interval_and_no_verdict(cli, tmp_path):
    path = DETAILED[0]
    # a baseline of the same requests in the other order: another file (a run against itself is refused), the
    # same means, so the per-request intervals are all that can tell them apart, and they cannot
    run = json.loads(path.read_text())
    lists = ("input_lens", "output_lens", "ttfts", "itls", "start_times", "generated_texts", "errors")
    other = tmp_path / "baseline.json"
    other.write_text(json.dumps({**run, **{k: run[k][::-1] for k in lists if isinstance(run.get(k), list)}}))
    result = cli("compare", str(path), str(other), "--json")
    rows = {r["metric"]: r for r in json.loads(result.stdout)["metrics"]}
    ttft = rows["ttft"]
    assert ttft["verdict"] == "no verdict: one run a side (3 or more runs a side judge it)"
    assert ttft["variation"] == "within one run (its requests)" and ttft["change_low"] < 0 < ttft["change_high"]
    assert rows["output_throughput"]["verdict"].startswith("no verdict: no interval on a side")
