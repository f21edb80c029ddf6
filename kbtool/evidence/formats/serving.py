"""vLLM `bench serve` and SGLang `bench_serving` results, read by one reader.

vLLM `vllm bench serve --save-result` JSON and SGLang `bench_serving` JSONL (one line per run): one
reader for both, as their results share a shape: throughputs and the mean, median, std and percentiles of
TTFT, TPOT, ITL and end-to-end latency, and, with the per-request lists, a 95% interval of the mean; SGLang's
server_info gives the engine's version (vLLM's results keep none)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from kbtool.evidence.formats.reader import (
    FunctionReader,
    Headline,
    artifact_of,
    evidence_entry,
    first_json_line,
    is_number,
    json_of,
    json_runs,
    same_content,
)
from kbtool.evidence.values import number, read_artifact
from kbtool.model.errors import BadInput

# the load keys (kbtool.evidence.load) each engine's results set: vLLM's keep no dataset, SGLang's no prompt count
VLLM_LOAD = ("request_rate", "concurrency", "request_count", "burstiness", "input_tokens_mean", "output_tokens_mean")
SGLANG_LOAD = (
    "request_rate", "concurrency", "dataset", "input_tokens", "output_tokens", "length_range_ratio",
    "input_tokens_mean", "output_tokens_mean",
)  # fmt: skip

# what a serving run is judged by first: output token throughput, TTFT, ITL and TPOT, end-to-end latency (vLLM's
# e2el, SGLang's e2e_latency), request throughput
SERVING_HEADLINE = Headline(("output_throughput", "ttft", "itl", "tpot", ("e2el", "e2e_latency"), "request_throughput"))

LATENCY_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_([a-z0-9_]+?)_ms$")
THROUGHPUTS = {
    "request_throughput": "req/s",
    "input_throughput": "tok/s",
    "output_throughput": "tok/s",
    "total_token_throughput": "tok/s",  # vLLM's name
    "total_throughput": "tok/s",  # SGLang's
    "max_output_tokens_per_s": "tok/s",
}


def is_serving_run(data: Any) -> bool:
    """A vLLM `bench serve --save-result` result or one line of SGLang's bench_serving output."""
    return (
        isinstance(data, dict)
        and "completed" in data
        and ("output_throughput" in data or "request_throughput" in data)
        and any(LATENCY_KEY.match(k) for k in data)
    )


def parse_serving(path: Path) -> dict[str, Any]:
    """A vLLM result JSON (one run) or SGLang JSONL (one run a line)."""
    text, digest = read_artifact(path)
    runs = json_runs(path, text)
    if not runs or not all(is_serving_run(r) for r in runs):
        raise BadInput(f"{path}: not a vLLM or SGLang serving benchmark result (completed, throughput, *_ms)")
    artifact = artifact_of(path, digest)
    evidence: list[dict[str, Any]] = []
    for index, run in enumerate(runs):
        where = f"{path}" + (f":{index + 1}" if len(runs) > 1 else "")
        conditions = serving_load(run)
        if len(runs) > 1:
            conditions["run"] = index + 1
        evidence += [{**ev, **_environment(run)} for ev in _run_evidence(where, run, conditions, artifact)]
    models = {str(r.get("model_id") or r.get("model")) for r in runs if r.get("model_id") or r.get("model")}
    applies = {"model": models.pop()} if len(models) == 1 else {}
    engines = {str(r["backend"]) for r in runs if isinstance(r.get("backend"), str)}
    if len(engines) == 1:
        applies["engine"] = engines.pop()
    # neither engine's result names its run: each run is known by its results (a file of appended runs shares
    # a run with another holding that line)
    identity = {key: why for run in runs for key, why in same_content(run).items()}
    return {"evidence": evidence, "applies_to": applies, "conditions": {}, "identity": identity}


def _environment(run: dict[str, Any]) -> dict[str, Any]:
    """Where the run was measured, as far as the result says: the server_info SGLang's bench_serving asks its
    server for gives SGLang's version; vLLM's result records none (nor any GPU), so nothing is said."""
    server = run.get("server_info")
    version = server.get("version") if isinstance(server, dict) else None
    return {"environment": {"sglang": version.strip()}} if isinstance(version, str) and version.strip() else {}


def _run_evidence(
    where: str, run: dict[str, Any], conditions: dict[str, Any], artifact: dict[str, str]
) -> list[dict[str, Any]]:
    """One run's latencies (with their intervals where the per-request lists give them), throughputs and
    failed requests."""
    completed = run.get("completed")
    samples = int(completed) if isinstance(completed, int) and completed >= 0 else None
    latencies = _latencies(where, run)
    intervals = _request_intervals(run, latencies)
    evidence = []
    for metric, stats in latencies.items():
        value = stats.get("avg", stats.get("p50"))
        if value is None:
            continue
        stats = {**stats, **intervals.get(metric, {})}
        measured = {**conditions, "records": "per-request"} if metric in intervals else conditions
        evidence.append(
            evidence_entry(metric, value, "ms", stats=stats, samples=samples, conditions=measured, artifact=artifact)
        )
    for key, unit in THROUGHPUTS.items():
        if run.get(key) is not None:  # "NaN", a list: refused by number(), not passed over
            value = number(run[key], f"{where}: {key}")
            evidence.append(evidence_entry(key, value, unit, samples=samples, conditions=conditions, artifact=artifact))
    failed = run.get("failed")
    if isinstance(completed, int) and isinstance(failed, int):
        evidence.append(
            evidence_entry(
                "failed_requests",
                float(failed),
                "requests",
                conditions=conditions,
                artifact=artifact,
                direction="lower",
            )
        )
    return evidence


def _latencies(where: str, run: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{"ttft": {"avg": ..., "p50": ..., "p99": ...}, ...}: every *_ms statistic by metric, by kb's names."""
    latencies: dict[str, dict[str, float]] = {}
    for key, value in run.items():
        found = LATENCY_KEY.match(key)
        if found and value is not None:  # null: not measured; anything else is a number or refused
            stat, metric = found.groups()
            stat = {"mean": "avg", "median": "p50"}.get(stat, stat.replace(".", "_") if "." in stat else stat)
            latencies.setdefault(metric, {})[stat] = number(value, f"{where}: {key}")
    return latencies


def serving_load(run: dict[str, Any]) -> dict[str, Any]:
    """A vLLM or SGLang run's load: the rate (inf: all at once), concurrency, burstiness, the configured
    prompt count, the dataset and its configured lengths (SGLang's random_* apply to its random datasets
    only), and the per-request means of the tokens sent and generated (what vLLM's results keep of them).
    The backend is which engine answered: kept, never part of the load."""
    sglang = "random_input_len" in run or "sharegpt_output_len" in run  # keys vLLM's results never have
    out: dict[str, Any] = {"format": "sglang" if sglang else "vllm"}
    if isinstance(run.get("backend"), str):
        out["backend"] = run["backend"]
    _arrivals(run, out)
    if is_number(run.get("num_prompts")) and not sglang:
        out["request_count"] = run["num_prompts"]
    _dataset(run, out)
    completed = run.get("completed")
    if isinstance(completed, int) and completed > 0:
        for key, name in (("total_input_tokens", "input_tokens_mean"), ("total_output_tokens", "output_tokens_mean")):
            if is_number(run.get(key)):
                out[name] = round(run[key] / completed, 2)
    return out


def _arrivals(run: dict[str, Any], out: dict[str, Any]) -> None:
    """How requests were sent: the rate, the concurrency cap, the burstiness."""
    rate = run.get("request_rate")
    if isinstance(rate, (int, float)) and not isinstance(rate, bool):
        out["request_rate"] = rate if math.isfinite(rate) else str(rate)  # Infinity: every request at once
    elif isinstance(rate, str) and rate.strip():
        out["request_rate"] = rate.strip()
    for key, name in (("max_concurrency", "concurrency"), ("burstiness", "burstiness")):
        if is_number(run.get(key)):
            out[name] = run[key]


def _dataset(run: dict[str, Any], out: dict[str, Any]) -> None:
    """The dataset and the lengths configured for it (SGLang's random_* for its random datasets only)."""
    dataset = run.get("dataset_name")
    if not (isinstance(dataset, str) and dataset):
        return
    out["dataset"] = dataset
    if dataset.startswith("random"):
        for key, name in (
            ("random_input_len", "input_tokens"),
            ("random_output_len", "output_tokens"),
            ("random_range_ratio", "length_range_ratio"),
        ):
            if is_number(run.get(key)):
                out[name] = run[key]
    elif dataset == "sharegpt" and is_number(run.get("sharegpt_output_len")):
        out["output_tokens"] = run["sharegpt_output_len"]


def _request_intervals(run: dict[str, Any], latencies: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """With the per-request lists (vLLM `--save-detailed`, SGLang's output): the bootstrap 95% interval of
    the mean TTFT (per request) and ITL (pooled over tokens, resampling requests). Only where the
    lists give the very mean the run reports: anything else means the lists are not what kb thinks."""
    from kbtool.evidence.statistics import bootstrap_mean_interval, bootstrap_pooled_mean_interval

    ttfts, itls, errors = run.get("ttfts"), run.get("itls"), run.get("errors")
    if not (isinstance(ttfts, list) and isinstance(errors, list) and len(ttfts) == len(errors)):
        return {}
    done = [i for i, error in enumerate(errors) if not error]
    out: dict[str, dict[str, float]] = {}
    ttft = [ttfts[i] * 1000 for i in done if isinstance(ttfts[i], (int, float))]
    reported = latencies.get("ttft", {}).get("avg")
    if (
        len(ttft) == len(done) > 1
        and reported is not None
        and math.isclose(sum(ttft) / len(ttft), reported, rel_tol=1e-9)
    ):
        low, high = bootstrap_mean_interval(ttft)
        out["ttft"] = {"ci95_low": low, "ci95_high": high}
    if isinstance(itls, list) and len(itls) == len(errors):
        per = [[x * 1000 for x in itls[i]] for i in done if isinstance(itls[i], list)]
        sums, counts = [sum(p) for p in per if p], [len(p) for p in per if p]
        reported = latencies.get("itl", {}).get("avg")
        if len(sums) > 1 and reported is not None and math.isclose(sum(sums) / sum(counts), reported, rel_tol=1e-9):
            low, high = bootstrap_pooled_mean_interval(sums, counts)
            out["itl"] = {"ci95_low": low, "ci95_high": high}
    return out


READER = FunctionReader(
    "vllm-sglang",
    "a vLLM bench serve result JSON or SGLang bench_serving JSONL",
    (".json", ".jsonl"),
    lambda path, _: parse_serving(path),
    lambda path, text: is_serving_run(json_of(text) if json_of(text) is not None else first_json_line(text)),
    {"vllm": VLLM_LOAD, "sglang": SGLANG_LOAD},
    {"length_range_ratio": "length range ratio"},
    {"vllm": SERVING_HEADLINE, "sglang": SERVING_HEADLINE},
)
