"""Load identity (kbtool/evidence/load.py, kbtool/evidence/pairing.py): runs pair by what the benchmark was asked
to do, never by what came out or which system answered; different loads never get a verdict; a sweep
keeps every load; and kb never records less than it was given. Each case runs on the real exports in
tests/data or on copies of them changed in the one way the case is about."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from test_mcp import call, stdio

from conftest import REPO_ROOT, commit_count, tree_state
from kbtool.evidence import formats, load
from kbtool.evidence.formats import serving
from kbtool.evidence.runs import read_run, runs_in

DATA = REPO_ROOT / "tests" / "data"
DURATION = DATA / "aiperf-duration"
VLLM_4K = DATA / "vllm" / "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json"
VLLM_SWEEP = DATA / "vllm" / "results.json"

SAMPLES = sorted(
    p
    for p in DATA.rglob("*")
    if p.is_file() and p.name != "SOURCE.txt" and p.parent.name not in ("baseline", "candidate")
)


@pytest.mark.parametrize("sample", SAMPLES, ids=[str(p.relative_to(DATA)) for p in SAMPLES])
def test_each_reader_declares_the_load_keys_it_writes_on_every_real_sample(sample):
    reader = formats.reader_for(sample)
    for ev in reader.read(sample, "metric")["evidence"]:
        conditions = ev.get("conditions") or {}
        fmt = conditions.get("format")
        assert fmt in reader.load_keys, f"{sample}: {ev['metric']} does not say its format"
        declared = set(reader.load_keys[fmt])
        keys = set(load.load_of(conditions))
        if fmt == "results-tsv":  # a session's rows: their own columns, no configured load
            assert not declared and "commit" not in keys
            continue
        assert keys <= declared, f"{sample}: {sorted(keys - declared)} not declared by {reader.name}"
        assert set(conditions) <= declared | load.NOT_LOAD, f"{sample}: {sorted(set(conditions) - declared)}"
        assert declared <= set(load.LOAD_KEYS), f"{reader.name} declares a key the vocabulary does not label"


def test_an_aiperf_load_is_what_it_was_asked_not_how_many_requests_completed():
    counted = read_run(DATA / "aiperf" / "profile_export_aiperf.json")["evidence"][0]["conditions"]
    # --concurrency 1 --request-count 30 --synthetic-input-tokens-mean 128 --output-tokens-mean 64 (SOURCE.txt)
    assert load.load_of(counted) == {
        "arrival": "concurrency",
        "concurrency": 1,
        "dataset": "synthetic",
        "endpoint_type": "chat",
        "input_tokens": 128.0,
        "output_tokens": 64.0,
        "request_count": 30,
        "streaming": "true",
    }
    completed = []
    for run in sorted((DURATION / "candidate").iterdir()):
        data = json.loads((run / "profile_export_aiperf.json").read_text())
        completed.append(data["request_count"]["avg"])
        conditions = read_run(run)["evidence"][0]["conditions"]
        assert conditions["duration_s"] == 5.0 and "request_count" not in conditions
    assert len(set(completed)) > 1  # the three runs of one load completed different numbers of requests


def test_duration_bound_runs_pair_despite_different_completed_counts(cli, kb):
    """Three runs a side of one duration-bound load: each side's mean over its runs, and the change judged."""
    result = cli("compare", str(DURATION / "candidate"), str(DURATION / "baseline"), "--json")
    assert result.exit_code == 0, result.stderr
    rows = {r["metric"]: r for r in json.loads(result.stdout)["metrics"]}
    ttft = rows["time_to_first_token"]
    assert (ttft["candidate_runs"], ttft["baseline_runs"]) == (3, 3) and ttft["verdict"] == "better"
    assert ttft["candidate_high"] < ttft["baseline_low"]  # the mock servers are 15 ms apart in TTFT
    assert ttft["load"]["duration_s"] == 5.0 and ttft["load"]["concurrency"] == 2
    assert rows["output_token_throughput"]["verdict"] == "better"

    args = ["add-finding", "--title", "Fast mock: TTFT and throughput", "--json"]
    for side, flag in (("candidate", "--from"), ("baseline", "--baseline-from")):
        args += [a for run in sorted((DURATION / side).iterdir()) for a in (flag, str(run))]
    finding = json.loads(cli(*args).stdout)
    assert finding["status"] == "confirmed"
    ev = next(e for e in finding["evidence"] if e["metric"] == "time_to_first_token")
    assert ev["conditions"]["runs"] == 3 and ev["conditions"]["verdict"] == "better"
    assert len(ev["artifacts"]) == 3 and len(ev["baseline_artifacts"]) == 3  # every run's export, by sha256
    assert finding["body"].startswith("Measured ") and "3 baseline runs" in finding["body"]


def with_prompts(tmp_path: Path, tokens: int, name: str) -> Path:
    """A copy of the real 4,096-token vLLM run as if its prompts had been `tokens` long (TTFT scaled with them)."""
    raw = json.loads(VLLM_4K.read_text())
    scale = tokens / 4096
    changed = {
        **raw,
        "total_input_tokens": raw["total_input_tokens"] * scale,
        "input_lens": [n * scale for n in raw["input_lens"]],
        "ttfts": [t * scale for t in raw["ttfts"]],
        **{k: v * scale for k, v in raw.items() if k.endswith("_ttft_ms")},
    }
    path = tmp_path / name
    path.write_text(json.dumps(changed))
    return path


def test_runs_at_different_prompt_lengths_are_refused_naming_both(cli, kb, tmp_path):
    short = with_prompts(tmp_path, 1024, "in1024.json")
    before = tree_state(kb.root)
    for args in (
        ["compare", str(short), str(VLLM_4K)],
        ["add-finding", "--title", "1k prompts are faster", "--from", str(short), "--baseline-from", str(VLLM_4K)],
    ):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        assert "input tokens per request: 1024 vs 4096" in result.stderr and result.stderr.count("\n") == 1
        assert "--ignore-condition input_tokens" in result.stderr
    assert tree_state(kb.root) == before

    # asked to, kb compares across the difference, and says so in the row and in the finding
    rows = json.loads(cli("compare", str(short), str(VLLM_4K), "--ignore-condition", "input_tokens", "--json").stdout)
    ttft = next(r for r in rows["metrics"] if r["metric"] == "ttft")
    assert ttft["ignored"] == "input_tokens" and ttft["change_pct"] == pytest.approx(-0.75)
    result = cli(
        "add-finding", "--title", "x", "--from", str(short), "--baseline-from", str(VLLM_4K),
        "--ignore-condition", "input_tokens", "--json",
    )  # fmt: skip
    finding = json.loads(result.stdout)
    ev = next(e for e in finding["evidence"] if e["metric"] == "ttft")
    assert ev["conditions"]["ignored_conditions"] == "input_tokens"
    assert "compared across input tokens per request: 1024 vs 4096, as asked" in finding["body"]


def sweep_sides(tmp_path: Path) -> tuple[list[Path], list[Path]]:
    """The real six-rate sweep of one vLLM client against an SGLang server (framework sgl) and a vLLM server,
    a file a run, as an agent would keep them."""
    lines = [json.loads(line) for line in VLLM_SWEEP.read_text().splitlines() if line.strip()]
    sides: dict[str, list[Path]] = {"sgl": [], "vllm": []}
    for run in lines:
        path = tmp_path / f"{run['framework']}-rate-{run['request_rate']}.json"
        path.write_text(json.dumps(run))
        sides[run["framework"]].append(path)
    assert len(sides["sgl"]) == len(sides["vllm"]) == 6
    return sides["sgl"], sides["vllm"]


def test_a_sweep_keeps_every_load_each_judged_at_its_own(cli, kb, tmp_path):
    candidate, baseline = sweep_sides(tmp_path)
    args = ["add-finding", "--title", "SGLang vs vLLM over six rates", "--json"]
    args += [a for p in candidate for a in ("--from", str(p))] + [
        a for p in baseline for a in ("--baseline-from", str(p))
    ]
    finding = json.loads(cli(*args).stdout)
    throughput = [e for e in finding["evidence"] if e["metric"] == "output_throughput"]
    assert sorted(str(e["conditions"]["request_rate"]) for e in throughput) == [
        "1.0",
        "10.0",
        "20.0",
        "30.0",
        "35.0",
        "inf",
    ]
    for ev in throughput:
        rate = ev["conditions"]["request_rate"]
        base = next(json.loads(p.read_text()) for p in baseline if json.loads(p.read_text())["request_rate"] == rate)
        assert ev["baseline"] == base["output_throughput"]

    folder = {side: tmp_path / side for side in ("candidate", "baseline")}
    for side, paths in (("candidate", candidate), ("baseline", baseline)):
        folder[side].mkdir()
        for p in paths:
            shutil.copy(p, folder[side] / p.name)
    text = cli("compare", str(folder["candidate"]), str(folder["baseline"])).stdout
    rows = [line for line in text.splitlines() if line.startswith("output_throughput")]
    assert len(rows) == 6 and len(set(rows)) == 6
    assert all(" request_rate=" in row.split(":")[0] for row in rows), rows  # each row names its load


def test_an_agent_records_a_sweep_over_mcp_and_closes_a_gap(kb, tmp_path):
    import os

    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    gap = kb.add("gap", "Does SGLang beat vLLM on Llama-3.1-8B at every rate?").id
    candidate, baseline = sweep_sides(tmp_path)
    lm_eval = tmp_path / "lm-eval.json"  # an agent's exports are in its project, where it starts kb serve
    shutil.copy(DATA / "lm-eval" / "results_2025-08-17T08-36-22.283186.json", lm_eval)

    async def go():
        async with stdio(kb, env, cwd=tmp_path) as client:
            added = await call(
                client,
                "add_finding",
                title="SGLang vs vLLM over six rates",
                artifact=[str(p) for p in candidate],
                baseline_artifacts=[str(p) for p in baseline],
                closes=gap,
            )
            assert not added.is_error, added.content[0].text
            assert added.structured_content["judged"] >= 6 * 5  # six loads, five metrics each at least

            commits = commit_count(kb.root)
            refused = await call(
                client,
                "add_finding",
                title="Nothing in common",
                artifact=[str(lm_eval)],
                baseline_artifacts=[str(baseline[0])],
                closes=gap,
            )
            assert refused.is_error and "share no metric" in refused.content[0].text
            assert commit_count(kb.root) == commits

    asyncio.run(go())
    stored = next(f for f in kb.list(kind="finding"))
    rates = {str(e.conditions["request_rate"]) for e in stored.card.evidence if e.metric == "ttft"}
    assert len(rates) == 6 and all(e.baseline is not None for e in stored.card.evidence if e.metric == "ttft")
    assert kb.get(gap).card.closed_by == [stored.id]


def test_nothing_in_common_is_refused_and_nothing_written(cli, kb, tmp_path):
    before = tree_state(kb.root)
    lm_eval = DATA / "lm-eval" / "results_2025-08-17T08-36-22.283186.json"
    for args in (
        ["compare", str(lm_eval), str(VLLM_4K)],
        ["add-finding", "--title", "x", "--from", str(lm_eval), "--baseline-from", str(VLLM_4K)],
    ):
        result = cli(*args)
        assert result.exit_code == 2 and "share no metric" in result.stderr and result.stderr.count("\n") == 1
    assert tree_state(kb.root) == before


def test_a_metric_missing_from_some_runs_is_named(cli, kb, tmp_path):
    raw = json.loads((DATA / "vllm" / "run_1_TP8_DP1_CTX1024_C100_P100_O128.json").read_text())
    paths = []
    for i, value in enumerate([1440.0, 1450.0, 1430.0]):
        run = {**raw, "output_throughput": value}
        if i == 2:
            del run["max_output_tokens_per_s"]
        paths.append(tmp_path / f"run-{i}.json")
        paths[-1].write_text(json.dumps(run))
    result = cli("add-finding", "--title", "three runs", *[a for p in paths for a in ("--from", str(p))], "--json")
    assert result.exit_code == 0, result.stderr
    assert "max_output_tokens_per_s" in result.stderr and "measured in 2 of 3 runs" in result.stderr
    finding = json.loads(result.stdout)
    assert "## Not compared" in finding["body"] and "max_output_tokens_per_s" in finding["body"]
    assert "max_output_tokens_per_s" not in {e["metric"] for e in finding["evidence"]}


def test_measured_means_agree_within_five_percent_configured_lengths_exactly():
    assert load.difference({"input_tokens_mean": 1010.0}, {"input_tokens": 1024}) is None
    assert load.difference({"input_tokens_mean": 900.0}, {"input_tokens_mean": 1024.0}).line() == (
        "input tokens per request: 900 vs 1024"
    )
    assert load.difference({"input_tokens": 1000}, {"input_tokens": 1024}).line() == (
        "input tokens per request: 1000 vs 1024"
    )
    declared = formats.load_keys_of
    duration = {"format": "aiperf", "duration_s": 60}
    count = {"format": "aiperf", "request_count": 500}
    assert load.difference(duration, count, (), declared).line() == "configured duration (s): 60 vs not set"
    # vLLM's results do not keep the dataset's name: an SGLang run's is not held against it
    assert load.difference({"format": "vllm"}, {"format": "sglang", "dataset": "random"}, (), declared) is None


def test_an_sglang_random_dataset_is_its_configured_lengths_and_range():
    (run,) = [
        json.loads(line) for line in (DATA / "sglang" / "agg_n100_in512_out128_c32.jsonl").read_text().splitlines()
    ]
    conditions = serving.serving_load(run)
    assert (conditions["input_tokens"], conditions["output_tokens"], conditions["length_range_ratio"]) == (
        512,
        128,
        0.0,
    )
    assert conditions["format"] == "sglang" and conditions["dataset"] == "random"
    assert conditions["input_tokens_mean"] == round(run["total_input_tokens"] / run["completed"], 2)
    assert runs_in(DATA / "sglang" / "agg_n100_in512_out128_c32.jsonl")


def test_an_earlier_aiperf_config_gives_the_same_load(tmp_path):
    """AIPerf before 0.13 wrote its config as `loadgen` and `input.prompt` (exclude_unset, so only what was
    set): a copy of the real export with its config in that shape, bound by a duration, reads the same way."""
    raw = json.loads((DATA / "aiperf" / "profile_export_aiperf.json").read_text())
    raw["input_config"] = {
        "endpoint": {"model_names": ["Qwen/Qwen3-0.6B"], "type": "chat", "streaming": True, "url": "localhost:8000"},
        "input": {"prompt": {"input_tokens": {"mean": 1000, "stddev": 10}, "output_tokens": {"mean": 200}}},
        "loadgen": {"concurrency": 10, "benchmark_duration": 60},
    }
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(raw))
    parsed = read_run(path)
    assert load.load_of(parsed["evidence"][0]["conditions"]) == {
        "concurrency": 10,
        "dataset": "synthetic",
        "duration_s": 60,
        "endpoint_type": "chat",
        "input_tokens": 1000,
        "input_tokens_std": 10,
        "output_tokens": 200,
        "streaming": "true",
    }
    assert parsed["applies_to"] == {"model": "Qwen/Qwen3-0.6B"}
    assert parsed["evidence"][0]["conditions"]["endpoint"] == "localhost:8000"  # kept, never load


def test_opposite_effects_at_different_loads_contradict_nothing():
    from kbtool.curation.checks import related_findings

    def finding(rate: float, value: float) -> dict:
        ev = {"metric": "ttft", "value": value, "baseline": 10.0, "direction": "lower"}
        return {"id": f"at-{rate}", "evidence": [{**ev, "conditions": {"request_rate": rate}}], "applies_to": {}}

    better_at_1, worse_at_30, worse_at_1 = finding(1, 8.0), finding(30, 12.0), finding(1, 12.0)
    assert related_findings(better_at_1, [worse_at_30])["contradictions"] == []
    assert related_findings(better_at_1, [worse_at_1])["contradictions"] == ["at-1"]


def test_a_results_tsv_is_a_session_not_runs_to_compare(cli, kb):
    tsv = DATA / "results-tsv" / "autoresearch-results.tsv"
    result = cli("compare", str(tsv), str(DATA / "results-tsv" / "qwen35-moe-offload-results.tsv"))
    assert result.exit_code == 2 and "a results TSV is an experiment session" in result.stderr
