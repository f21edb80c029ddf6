"""Readers of the benchmark and evaluation exports the field writes, beside AIPerf's
(kbtool/evidence/formats.py holds the registry that picks one by what a file holds):

- lm-evaluation-harness `results_*.json`: every task's metric under each filter, with its
  standard error, the task's n-shot and version and the number of samples; the top-level tasks and
  groups only when a group's subtasks are listed (a group's score stands for them);
- GuideLLM reports (JSON, or the YAML it also writes): for each benchmark, every latency and
  throughput metric's successful requests: mean, median, std, min, max, percentiles, count;
- vLLM `vllm bench serve --save-result` JSON and SGLang `bench_serving` JSONL (one line per run):
  throughputs and the mean, median, std and percentiles of TTFT, TPOT, ITL and end-to-end latency;
- MLPerf Inference LoadGen `mlperf_log_summary.txt`: the scenario's result, whether it is VALID,
  and every metric line with its unit.

Each returns {"evidence": [...], "applies_to": {...}, "conditions": {...}}; every evidence entry
keeps the artifact's path and sha256, and a metric the tool marks higher- or lower-is-better has
that direction.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from kbtool.evidence.values import guess_direction, number, read_artifact
from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document, nested, why_unparsable

# the load keys (kbtool.evidence.load) each format sets: the registry in kbtool/evidence/formats.py declares them
LM_EVAL_LOAD = ("n_shot", "task_version", "filter", "limit")
GUIDELLM_LOAD = (
    "strategy", "concurrency", "request_rate", "request_count", "duration_s", "dataset",
    "input_tokens", "output_tokens", "input_tokens_mean", "output_tokens_mean",
)  # fmt: skip
VLLM_LOAD = ("request_rate", "concurrency", "request_count", "burstiness", "input_tokens_mean", "output_tokens_mean")
SGLANG_LOAD = (
    "request_rate", "concurrency", "dataset", "input_tokens", "output_tokens", "length_range_ratio",
    "input_tokens_mean", "output_tokens_mean",
)  # fmt: skip
MLPERF_LOAD = (
    "scenario", "mode", "target_qps", "target_latency_ns", "max_async_queries", "min_query_count", "samples_per_query",
)  # fmt: skip
RECORDS_LOAD = ("input_tokens_mean", "output_tokens_mean")


def _artifact(path: Path, digest: str) -> dict[str, str]:
    return {"path": str(path), "sha256": digest}


def _load_json(path: Path, what: str) -> tuple[Any, str]:
    text, digest = read_artifact(path)
    try:
        return json_document(text), digest
    except Unparsable as exc:
        raise BadInput(f"{path}: not a valid {what}: {exc}") from None


def _entry(metric: str, value: float, unit: str | None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"metric": metric, "value": value, **({"unit": unit} if unit else {})}
    entry.update({k: v for k, v in extra.items() if v not in (None, {}, [])})
    if "direction" not in entry and (direction := guess_direction(metric, unit)):
        entry["direction"] = direction
    return entry


# --- lm-evaluation-harness --------------------------------------------------------------------


def is_lm_eval(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("results"), dict) and "n-shot" in data


def parse_lm_eval(path: Path) -> dict[str, Any]:
    data, digest = _load_json(path, "lm-evaluation-harness results file")
    if not is_lm_eval(data):
        raise BadInput(f"{path}: not an lm-evaluation-harness results file (no results and n-shot)")
    results: dict[str, Any] = data["results"]
    nested = {t for subtasks in (data.get("group_subtasks") or {}).values() for t in subtasks or []}
    shots, versions = data.get("n-shot") or {}, data.get("versions") or {}
    higher, samples = data.get("higher_is_better") or {}, data.get("n-samples") or {}
    config = data.get("config") or {}
    environment = {
        k: str(data[key])
        for k, key in (("lm_eval", "lm_eval_version"), ("transformers", "transformers_version"))
        if data.get(key)
    }
    artifact = _artifact(path, digest)
    limit = config.get("limit") if isinstance(config.get("limit"), (int, float)) else None
    evidence = []
    for task, scores in results.items():
        if task in nested or not isinstance(scores, dict):
            continue
        for key, value in scores.items():
            metric, sep, filt = key.partition(",")
            if not sep or metric.endswith("_stderr") or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue  # the alias, and "N/A" scores of a group without its own
            stderr = scores.get(f"{metric}_stderr,{filt}")
            if isinstance(stderr, (int, float)) and not isinstance(stderr, bool) and stderr < 0:
                raise BadInput(
                    f"{path}: {task}.{metric}_stderr,{filt}: {stderr:g} is negative; a standard error is not"
                )
            wants = (higher.get(task) or {}).get(metric)
            count = (samples.get(task) or {}).get("effective")
            conditions = {
                k: v
                for k, v in (
                    ("format", "lm-eval"),
                    ("n_shot", shots.get(task)),
                    ("task_version", versions.get(task)),
                    ("filter", filt),
                    ("limit", limit),
                )
                if v is not None and v != "none"
            }
            evidence.append(
                _entry(
                    f"{task}/{metric}" + (f"/{filt}" if filt != "none" else ""),
                    number(value, f"{path}: {task}.{key}"),
                    None,
                    stats={"stderr": number(stderr, f"{path}: {task}.{metric}_stderr")}
                    if isinstance(stderr, (int, float)) and not isinstance(stderr, bool)
                    else None,
                    samples=int(count) if isinstance(count, int) else None,
                    direction=None if wants is None else "higher" if wants else "lower",
                    conditions=conditions,
                    environment=environment,
                    artifact=artifact,
                )
            )
    if not evidence:
        raise BadInput(f"{path}: an lm-evaluation-harness results file with no numeric score")
    model = _model_name(config, data)
    run = {k: str(config[k]) for k in ("model", "batch_size", "limit") if config.get(k) is not None}
    return {"evidence": evidence, "applies_to": {"model": model} if model else {}, "conditions": run}


def _model_name(config: dict[str, Any], data: dict[str, Any]) -> str | None:
    args = str(config.get("model_args") or "")
    found = re.search(r"(?:^|,)\s*(?:pretrained|model)=([^,]+)", args)
    name = found.group(1) if found else data.get("model_name")
    return str(name) if name else None


# --- GuideLLM --------------------------------------------------------------------------------

GUIDELLM_UNITS = {
    "requests_per_second": "req/s",
    "request_concurrency": None,
    "request_latency": "s",
    "time_to_first_token_ms": "ms",
    "time_per_output_token_ms": "ms",
    "inter_token_latency_ms": "ms",
    "prompt_tokens_per_second": "tok/s",
    "output_tokens_per_second": "tok/s",
    "tokens_per_second": "tok/s",
    "prompt_token_count": "tokens",
    "output_token_count": "tokens",
}


def is_guidellm(data: Any) -> bool:
    benchmarks = data.get("benchmarks") if isinstance(data, dict) else None
    return (
        isinstance(benchmarks, list)
        and bool(benchmarks)
        and all(isinstance(b, dict) and isinstance(b.get("metrics"), dict) for b in benchmarks)
        and any("requests_per_second" in b["metrics"] for b in benchmarks)
    )


def parse_guidellm(path: Path) -> dict[str, Any]:
    text, digest = read_artifact(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BadInput(f"{path}: not a valid GuideLLM report: {str(exc).splitlines()[0]}") from None
        except (ValueError, RecursionError) as exc:  # a date that does not exist, an integer too long
            raise BadInput(f"{path}: not a valid GuideLLM report: {why_unparsable(exc)}") from None
    else:
        data, _ = _load_json(path, "GuideLLM report")
    if not is_guidellm(data):
        raise BadInput(f"{path}: not a GuideLLM report (no benchmarks with metrics)")
    artifact = _artifact(path, digest)
    args = data.get("args") if isinstance(data.get("args"), dict) else {}
    evidence = []
    for index, bench in enumerate(data["benchmarks"]):
        conditions = _guidellm_conditions(bench, index, args)
        totals = bench["metrics"].get("request_totals") or {}
        for name, unit in GUIDELLM_UNITS.items():
            block = (bench["metrics"].get(name) or {}).get("successful")
            if not isinstance(block, dict) or (block.get("count") == 0 and block.get("mean") in (None, 0)):
                continue  # a metric this benchmark did not measure
            where = f"{path}: benchmarks[{index}].metrics.{name}.successful"
            stats = {
                key: number(block[source], f"{where}.{source}")
                for key, source in (("p50", "median"), ("std", "std_dev"), ("min", "min"), ("max", "max"))
                if block.get(source) is not None  # a "NaN" or a list is refused, not passed over
            }
            for label, value in (block.get("percentiles") or {}).items():
                # GuideLLM's p01 and p05 are the 1st and 5th percentiles (p001 and p999 are 0.1 and 99.9)
                name_as_kb = f"p{int(label[1:])}" if re.fullmatch(r"p\d\d", label) else None
                if name_as_kb and value is not None and name_as_kb not in stats:
                    stats[name_as_kb] = number(value, f"{where}.percentiles.{label}")
            count = block.get("count")
            evidence.append(
                _entry(
                    name.removesuffix("_ms"),
                    number(block["mean"], f"{where}.mean"),
                    unit,
                    stats={"avg": number(block["mean"], f"{where}.mean"), **stats},
                    samples=int(count) if isinstance(count, (int, float)) else None,
                    conditions={
                        **conditions,
                        **({"errored": totals["errored"]} if isinstance(totals.get("errored"), int) else {}),
                    },
                    artifact=artifact,
                )
            )
    if not evidence:
        raise BadInput(f"{path}: a GuideLLM report with no successful-request metrics")
    model = args.get("model") or nested(data["benchmarks"][0], "worker", "backend_model")
    environment = nested(data, "metadata", "guidellm_version")
    if environment:
        for ev in evidence:
            ev["environment"] = {"guidellm": str(environment)}
    return {"evidence": evidence, "applies_to": {"model": str(model)} if model else {}, "conditions": {}}


def _guidellm_conditions(bench: dict[str, Any], index: int, args: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's load: its strategy (synchronous, concurrent, constant, ...) with its rate or streams,
    its request or time limit, its data and the prompt and output lengths: configured where the report
    says (emulated data), else the successful requests' means. From the report's current shape
    (benchmark.config, args) or its earlier one (benchmark.args, request_loader)."""
    config = _dict(bench.get("config"))
    older = _dict(bench.get("args"))
    strategy = config.get("strategy") or older.get("strategy") or {}
    out: dict[str, Any] = {"format": "guidellm", "benchmark": index}
    if isinstance(strategy, dict):
        kind = strategy.get("type_") or strategy.get("type")
        if isinstance(kind, str):
            out["strategy"] = kind
        for key in ("max_concurrency", "streams", "rate"):
            if _is_number(strategy.get(key)):
                out.setdefault(
                    "concurrency" if key in ("max_concurrency", "streams") else "request_rate", strategy[key]
                )
    constraints = _dict(config.get("constraints"))
    limits = (
        (
            "request_count",
            nested(constraints, "max_requests", "max_num"),
            older.get("max_number"),
            args.get("max_requests"),
        ),
        (
            "duration_s",
            nested(constraints, "max_seconds", "max_duration"),
            older.get("max_duration"),
            args.get("max_seconds"),
        ),
    )
    for key, *candidates in limits:
        found = next((c for c in candidates if _is_number(c)), None)
        if found is not None:
            out[key] = found
    data = args.get("data") if args.get("data") is not None else nested(bench, "request_loader", "data")
    emulated = _emulated(data)
    if emulated:
        out["dataset"] = "emulated"
        for key, given in (("input_tokens", "prompt_tokens"), ("output_tokens", "output_tokens")):
            if _is_number(emulated.get(given)):
                out[key] = emulated[given]
    elif isinstance(data, list) and data and all(isinstance(d, str) for d in data):
        out["dataset"] = ",".join(Path(d).name for d in data)
    elif isinstance(data, str) and data.strip():
        out["dataset"] = Path(data.strip()).name
    for key, metric in (("input_tokens", "prompt_token_count"), ("output_tokens", "output_token_count")):
        mean = nested(bench, "metrics", metric, "successful", "mean")
        if key not in out and _is_number(mean) and mean:
            out[f"{key}_mean"] = round(float(mean), 2)
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _emulated(data: Any) -> dict[str, Any]:
    """GuideLLM's emulated data settings ('prompt_tokens=512,output_tokens=128', or that as JSON)."""
    text = data[0] if isinstance(data, list) and len(data) == 1 else data
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        return {}
    try:
        parsed = json_document(text)
    except Unparsable:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    pairs = dict(p.split("=", 1) for p in text.split(",") if "=" in p)
    out: dict[str, Any] = {}
    for key, raw in pairs.items():
        try:
            out[key.strip()] = float(raw) if "." in raw else int(raw)
        except ValueError:
            continue
    return out if "prompt_tokens" in out else {}


# --- vLLM and SGLang serving benchmarks -------------------------------------------------------

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


def json_runs(path: Path, text: str) -> list[Any]:
    """One JSON document, or JSON Lines (SGLang's output, vLLM's --append-result): the runs it holds."""
    if path.suffix.lower() != ".jsonl":
        try:
            return [json_document(text)]
        except Unparsable as exc:
            if len([line for line in text.splitlines() if line.strip()]) < 2:
                raise BadInput(f"{path}: not valid JSON: {exc}") from None
    runs = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                runs.append(json_document(line))
            except Unparsable as exc:
                raise BadInput(f"{path}:{n}: not JSON ({exc})") from None
    return runs


def parse_serving(path: Path) -> dict[str, Any]:
    """A vLLM result JSON (one run) or SGLang JSONL (one run a line)."""
    text, digest = read_artifact(path)
    runs = json_runs(path, text)
    if not runs or not all(is_serving_run(r) for r in runs):
        raise BadInput(f"{path}: not a vLLM or SGLang serving benchmark result (completed, throughput, *_ms)")
    artifact = _artifact(path, digest)
    evidence: list[dict[str, Any]] = []
    for index, run in enumerate(runs):
        where = f"{path}" + (f":{index + 1}" if len(runs) > 1 else "")
        conditions = serving_load(run)
        if len(runs) > 1:
            conditions["run"] = index + 1
        completed = run.get("completed")
        samples = int(completed) if isinstance(completed, int) and completed >= 0 else None
        latencies: dict[str, dict[str, float]] = {}
        for key, value in run.items():
            found = LATENCY_KEY.match(key)
            if found and value is not None:  # null: not measured; anything else is a number or refused
                stat, metric = found.groups()
                stat = {"mean": "avg", "median": "p50"}.get(stat, stat.replace(".", "_") if "." in stat else stat)
                latencies.setdefault(metric, {})[stat] = number(value, f"{where}: {key}")
        intervals = _request_intervals(run, latencies)
        for metric, stats in latencies.items():
            value = stats.get("avg", stats.get("p50"))
            if value is None:
                continue
            stats = {**stats, **intervals.get(metric, {})}
            measured = {**conditions, "records": "per-request"} if metric in intervals else conditions
            evidence.append(
                _entry(metric, value, "ms", stats=stats, samples=samples, conditions=measured, artifact=artifact)
            )
        for key, unit in THROUGHPUTS.items():
            if run.get(key) is not None:  # "NaN", a list: refused by number(), not passed over
                evidence.append(
                    _entry(
                        key,
                        number(run[key], f"{where}: {key}"),
                        unit,
                        samples=samples,
                        conditions=conditions,
                        artifact=artifact,
                    )
                )
        failed = run.get("failed")
        if isinstance(completed, int) and isinstance(failed, int):
            evidence.append(
                _entry(
                    "failed_requests",
                    float(failed),
                    "requests",
                    conditions=conditions,
                    artifact=artifact,
                    direction="lower",
                )
            )
    models = {str(r.get("model_id") or r.get("model")) for r in runs if r.get("model_id") or r.get("model")}
    applies = {"model": models.pop()} if len(models) == 1 else {}
    engines = {str(r["backend"]) for r in runs if isinstance(r.get("backend"), str)}
    if len(engines) == 1:
        applies["engine"] = engines.pop()
    return {"evidence": evidence, "applies_to": applies, "conditions": {}}


def serving_load(run: dict[str, Any]) -> dict[str, Any]:
    """A vLLM or SGLang run's load: the rate (inf: all at once), concurrency, burstiness, the configured
    prompt count, the dataset and its configured lengths (SGLang's random_* apply to its random datasets
    only), and the per-request means of the tokens sent and generated (what vLLM's results keep of them).
    The backend is which engine answered: kept, never part of the load."""
    sglang = "random_input_len" in run or "sharegpt_output_len" in run  # keys vLLM's results never have
    out: dict[str, Any] = {"format": "sglang" if sglang else "vllm"}
    if isinstance(run.get("backend"), str):
        out["backend"] = run["backend"]
    rate = run.get("request_rate")
    if isinstance(rate, (int, float)) and not isinstance(rate, bool):
        out["request_rate"] = rate if math.isfinite(rate) else str(rate)  # Infinity: every request at once
    elif isinstance(rate, str) and rate.strip():
        out["request_rate"] = rate.strip()
    for key, name in (("max_concurrency", "concurrency"), ("burstiness", "burstiness")):
        if _is_number(run.get(key)):
            out[name] = run[key]
    if _is_number(run.get("num_prompts")) and not sglang:
        out["request_count"] = run["num_prompts"]
    dataset = run.get("dataset_name")
    if isinstance(dataset, str) and dataset:
        out["dataset"] = dataset
        if dataset.startswith("random"):
            for key, name in (
                ("random_input_len", "input_tokens"),
                ("random_output_len", "output_tokens"),
                ("random_range_ratio", "length_range_ratio"),
            ):
                if _is_number(run.get(key)):
                    out[name] = run[key]
        elif dataset == "sharegpt" and _is_number(run.get("sharegpt_output_len")):
            out["output_tokens"] = run["sharegpt_output_len"]
    completed = run.get("completed")
    if isinstance(completed, int) and completed > 0:
        for key, name in (("total_input_tokens", "input_tokens_mean"), ("total_output_tokens", "output_tokens_mean")):
            if _is_number(run.get(key)):
                out[name] = round(run[key] / completed, 2)
    return out


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


# --- MLPerf Inference LoadGen -----------------------------------------------------------------

MLPERF_LINE = re.compile(r"^\s*(?:\*\s*)?([A-Za-z0-9][^:]*?)\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
MLPERF_STAT = re.compile(
    r"^(?:(?P<which>min|max|mean)\s+)?(?:(?P<pct>\d+(?:\.\d+)?)(?:th)? percentile\s+)?"
    r"(?P<what>.*?)\s*\((?P<unit>ns|us|ms|s)\)$",
    re.I,
)
MLPERF_PARAMETERS = ("target_qps", "target_latency (ns)", "max_async_queries", "min_query_count", "samples_per_query")


def parse_mlperf(path: Path) -> dict[str, Any]:
    """A LoadGen summary: the header (SUT, scenario, mode, result and why), each latency family as one
    metric with its min, mean, max and percentiles, each rate as a metric, a few test parameters."""
    text, digest = read_artifact(path)
    if "MLPerf Results Summary" not in text:
        raise BadInput(f"{path}: not an MLPerf LoadGen summary (no 'MLPerf Results Summary')")
    head, _, parameters = text.partition("Test Parameters Used")
    conditions: dict[str, Any] = {"format": "mlperf"}
    for label, key in (("SUT name", "sut"), ("Scenario", "scenario"), ("Mode", "mode"), ("Result is", "result")):
        found = re.search(rf"^{label}\s*:\s*(.+?)\s*$", head, re.M)
        if found:
            conditions[key] = found.group(1)
    if "result" not in conditions:
        raise BadInput(f"{path}: an MLPerf summary without 'Result is : VALID|INVALID'")
    failed = re.findall(r"^\s*(.+? satisfied)\s*:\s*No\s*$", head, re.M | re.I)
    if failed:
        conditions["unsatisfied"] = ", ".join(failed)
    for line in parameters.splitlines():
        found = MLPERF_LINE.match(line)
        if found and found.group(1).strip() in MLPERF_PARAMETERS:
            name = found.group(1).strip().replace(" (ns)", "_ns")
            conditions[name] = number(float(found.group(2)), f"{path}: {name}")
    artifact = _artifact(path, digest)
    families: dict[tuple[str, str], dict[str, float]] = {}
    rates: list[tuple[str, float, str | None]] = []
    for line in head.splitlines():
        found = MLPERF_LINE.match(line)
        if not found:
            continue
        label, value = found.group(1).strip(), number(float(found.group(2)), f"{path}: {found.group(1).strip()}")
        stat = MLPERF_STAT.match(label)
        if stat:
            what = re.sub(r"\s+", "_", stat.group("what").strip().lower()) or "latency"
            key = (
                {"min": "min", "max": "max", "mean": "avg"}[stat.group("which").lower()]
                if stat.group("which")
                else f"p{_percentile(stat.group('pct'))}"
                if stat.group("pct")
                else "value"
            )
            families.setdefault((what, stat.group("unit").lower()), {})[key] = value
        else:
            name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
            if all(name != seen for seen, _, _ in rates):  # LoadGen prints some twice (Completed tokens per second)
                rates.append((name, value, _rate_unit(label)))
    evidence = []
    for (what, unit), stats in families.items():
        headline = stats.get("avg", stats.get("p50", stats.get("value", stats.get("p90"))))
        if headline is None:
            continue
        stats.pop("value", None)
        evidence.append(_entry(what, headline, unit, stats=stats, conditions=conditions, artifact=artifact))
    for name, rate, rate_unit in rates:
        evidence.append(_entry(name, rate, rate_unit, conditions=conditions, artifact=artifact))
    if not evidence:
        raise BadInput(f"{path}: an MLPerf summary with no metric line")
    parsed: dict[str, Any] = {"evidence": evidence, "applies_to": {}, "conditions": {}}
    if conditions["result"].upper() != "VALID":
        why = f" ({', '.join(f'{c}: No' for c in failed)})" if failed else ""
        parsed["invalid"] = f"{path}: LoadGen says the result is {conditions['result']}{why}"
    return parsed


def _percentile(text: str) -> str:
    """'50.00' -> '50', '99.90' -> '99_9': kb's statistic names."""
    value = float(text)
    return str(int(value)) if value == int(value) else f"{value:g}".replace(".", "_")


def _rate_unit(label: str) -> str | None:
    lowered = label.lower()
    for word, unit in (("tokens per second", "tok/s"), ("samples per second", "samples/s"), ("qps", "queries/s")):
        if word in lowered:
            return unit
    return None


# --- AIPerf per-request records -----------------------------------------------------------------


def is_aiperf_records(first: Any) -> bool:
    """A line of AIPerf's profile_export.jsonl: a request's metadata and its metrics."""
    return (
        isinstance(first, dict)
        and isinstance(first.get("metadata"), dict)
        and isinstance(first.get("metrics"), dict)
        and "request_start_ns" in first["metadata"]
    )


def parse_aiperf_records(path: Path) -> dict[str, Any]:
    """AIPerf's per-request records: each metric every request has as a number, summarised over the
    profiling requests (cancelled ones left out), with a bootstrap 95% interval of its mean."""
    from kbtool.evidence.statistics import bootstrap_mean_interval, describe

    text, digest = read_artifact(path)
    records = json_runs(path, text)
    if not records or not all(is_aiperf_records(r) for r in records):
        raise BadInput(f"{path}: not AIPerf per-request records (metadata and metrics on each line)")
    kept = [
        r
        for r in records
        if r["metadata"].get("benchmark_phase", "profiling") == "profiling" and not r["metadata"].get("was_cancelled")
    ]
    if not kept:
        raise BadInput(f"{path}: no completed profiling request among the records")
    columns: dict[str, list[float]] = {}
    units: dict[str, str | None] = {}
    for n, record in enumerate(kept, 1):
        for name, entry in record["metrics"].items():
            value = entry.get("value") if isinstance(entry, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue  # a list (inter-chunk latencies) or a missing value
            columns.setdefault(name, []).append(number(value, f"{path}: request {n} {name}"))
            units[name] = entry.get("unit") if isinstance(entry.get("unit"), str) else None
    artifact = _artifact(path, digest)
    load: dict[str, Any] = {"format": "aiperf-records", "records": "per-request", "requests": len(kept)}
    for key, metric in (
        ("input_tokens_mean", "input_sequence_length"),
        ("output_tokens_mean", "output_sequence_length"),
    ):
        if len(columns.get(metric, [])) == len(kept):  # the tokens each request sent and got, averaged
            load[key] = round(sum(columns[metric]) / len(kept), 2)
    evidence = []
    for name, values in columns.items():
        if len(values) != len(kept):
            continue  # measured for some requests only: a mean over those would mislead
        stats = describe(values)
        low, high = bootstrap_mean_interval(values)
        stats.update({"ci95_low": low, "ci95_high": high})
        evidence.append(
            _entry(
                name,
                stats["avg"],
                units[name],
                stats=stats,
                samples=len(values),
                conditions=load,
                artifact=artifact,
            )
        )
    if not evidence:
        raise BadInput(f"{path}: the records hold no metric every request has")
    return {"evidence": evidence, "applies_to": {}, "conditions": {}}
