"""AIPerf profile exports (`profile_export_aiperf.json`): every metric, its load and where it ran.

Each metric entry (one with a unit and an avg) keeps its unit and every statistic it has. With it go the model,
endpoint, concurrency, request count and command the run recorded; the load it was asked for, from either shape
AIPerf writes its config in (`phases` and `datasets` from 0.13, `loadgen` and `input.prompt` before); and where it
ran (AIPerf's version, the GPUs its telemetry saw). A run that did not complete, or was cancelled, is refused."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from kbtool.evidence.formats.reader import FunctionReader, Headline, json_of, mapping, same_content, sequence
from kbtool.evidence.values import STATISTICS, guess_direction, number, read_artifact
from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document


def parse_aiperf(path: Path) -> dict[str, Any]:
    """An AIPerf profile export -> {"evidence": [...], "applies_to": {...}, "conditions": {...}}."""
    text, digest = read_artifact(path)
    try:
        data = json_document(text)
    except Unparsable as exc:
        raise BadInput(f"{path}: not a valid AIPerf export: {exc}") from None
    if not isinstance(data, dict) or "aiperf_version" not in data and "input_config" not in data:
        raise BadInput(f"{path}: not an AIPerf export (no aiperf_version or input_config)")
    config = mapping(data.get("input_config"))
    run = mapping(data.get("run_info"))
    conditions = _aiperf_conditions(config, data)
    command = run.get("cli_command") if isinstance(run.get("cli_command"), str) else None
    artifact = {"path": str(path), "sha256": digest}
    environment = _aiperf_environment(data)
    evidence = []
    for name, entry in data.items():
        if _is_metric_list(entry):
            raise BadInput(f"{path}: {name}: a list, where AIPerf writes a metric as one entry (unit, avg, ...)")
        if isinstance(entry, dict) and "unit" in entry and "avg" not in entry and any(s in entry for s in STATISTICS):
            raise BadInput(f"{path}: {name}: a metric entry with statistics but no avg")
        if not isinstance(entry, dict) or "unit" not in entry or "avg" not in entry:
            continue
        value = number(entry["avg"], f"{path}: {name}.avg")
        stats = {s: number(entry[s], f"{path}: {name}.{s}") for s in STATISTICS[1:] if s in entry}
        unit = entry["unit"] if isinstance(entry["unit"], str) else None
        ev: dict[str, Any] = {
            "metric": name,
            "value": value,
            "unit": unit,
            "stats": stats,
            "conditions": conditions,
            "command": command,
            "environment": environment,
            "artifact": artifact,
        }
        if "count" in entry:
            count = stats["count"]
            if count < 0 or count != int(count):
                raise BadInput(f"{path}: {name}.count: {count:g} is not a count of requests")
            ev["samples"] = int(count)
        direction = guess_direction(name, unit)
        if direction:
            ev["direction"] = direction
        evidence.append({k: v for k, v in ev.items() if v not in (None, {})})
    if not evidence:
        raise BadInput(f"{path}: an AIPerf export with no metric entries (each needs a unit and an avg)")
    if data.get("is_complete") is False or data.get("was_cancelled") is True:
        raise BadInput(f"{path}: the AIPerf run did not complete (is_complete false or was_cancelled true)")
    models = [
        m.get("name")
        for m in sequence(mapping(config.get("models")).get("items"))
        if isinstance(m, dict) and m.get("name")
    ] or [m for m in sequence(mapping(config.get("endpoint")).get("model_names")) if isinstance(m, str) and m]
    applies = {"model": models[0] if len(models) == 1 else models} if models else {}
    identity = {**same_content(data), **_benchmark(data.get("benchmark_id") or run.get("benchmark_id"))}
    return {"evidence": evidence, "applies_to": applies, "conditions": conditions, "identity": identity}


def _benchmark(benchmark: Any) -> dict[str, str]:
    """The run AIPerf names by its benchmark id, whatever was edited around it (a run's `identity`)."""
    named = benchmark.strip() if isinstance(benchmark, str) else ""
    return {f"aiperf:{named}": f"AIPerf benchmark {named}"} if named else {}


def _aiperf_environment(data: dict[str, Any]) -> dict[str, str]:
    """Where the run was measured, as the export says: AIPerf's version, and the GPUs its DCGM telemetry saw
    (telemetry_data.endpoints.*.gpus.*.gpu_name; "NAME xN" for N of one model, as kb writes a machine's)."""
    out = {"aiperf": str(data["aiperf_version"])} if isinstance(data.get("aiperf_version"), str) else {}
    endpoints = mapping(mapping(data.get("telemetry_data")).get("endpoints"))
    names = [
        str(gpu["gpu_name"])
        for endpoint in endpoints.values()
        for gpu in mapping(mapping(endpoint).get("gpus")).values()
        if isinstance(gpu, dict) and isinstance(gpu.get("gpu_name"), str) and gpu["gpu_name"].strip()
    ]
    if names:
        counts = {name: names.count(name) for name in dict.fromkeys(names)}
        out["gpu"] = ", ".join(name + (f" x{n}" if n > 1 else "") for name, n in counts.items())
    return out


def _is_metric_list(value: Any) -> bool:
    """A list of numbers or of metric entries: what a metric could not be read from, and must not be passed over
    as if it were a section of the export (error_summary, a list of errors, is one of those)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            (isinstance(v, (int, float)) and not isinstance(v, bool)) or (isinstance(v, dict) and "avg" in v)
            for v in value
        )
    )


# the load an AIPerf run was asked for (kbtool.evidence.load): its phases or loadgen, its dataset, its endpoint
AIPERF_LOAD = (
    "arrival", "concurrency", "request_rate", "burstiness", "request_count", "duration_s", "warmup_requests",
    "input_tokens", "input_tokens_std", "output_tokens", "output_tokens_std", "input_tokens_mean",
    "output_tokens_mean", "dataset", "streaming", "endpoint_type",
)  # fmt: skip


# what an AIPerf run is judged by first: output token throughput, TTFT, ITL, end-to-end latency, request throughput
AIPERF_HEADLINE = Headline(
    ("output_token_throughput", "time_to_first_token", "inter_token_latency", "request_latency", "request_throughput")
)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    """A setting the config gives (a number, a word or a flag), under kb's name for it."""
    if isinstance(value, bool):
        out[key] = str(value).lower()
    elif isinstance(value, (int, float)) and (not isinstance(value, float) or math.isfinite(value)):
        out[key] = value
    elif isinstance(value, str) and value.strip():
        out[key] = value.strip()


def _aiperf_conditions(config: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """What the run was asked to do, from either shape AIPerf writes its config in: `phases` and
    `datasets` (0.13 and later) or `loadgen` and `input.prompt` (earlier). Never what came out: the
    completed request count of a run bound by a duration is an outcome, not its load. Lengths the config
    does not set are the measured per-request means."""
    out: dict[str, Any] = {"format": "aiperf"}
    phases = [p for p in sequence(config.get("phases")) if isinstance(p, dict)]
    measured = [p for p in phases if p.get("kind", "profiling") != "warmup"]
    if measured:
        phase = measured[0]
        _put(out, "arrival", phase.get("type"))
        _put(out, "concurrency", phase.get("concurrency"))
        _put(out, "request_rate", phase.get("rate", phase.get("request_rate")))
        _put(out, "burstiness", phase.get("smoothness"))
        _put(out, "request_count", phase.get("requests", phase.get("request_count")))
        _put(out, "duration_s", phase.get("duration"))
    for phase in phases:
        if phase.get("kind") == "warmup":
            _put(out, "warmup_requests", phase.get("requests"))
    loadgen = mapping(config.get("loadgen"))
    if loadgen:
        _put(out, "concurrency", loadgen.get("concurrency"))
        _put(out, "request_rate", loadgen.get("request_rate"))
        _put(out, "arrival", loadgen.get("request_rate_mode"))
        _put(out, "request_count", loadgen.get("request_count"))
        _put(out, "duration_s", loadgen.get("benchmark_duration"))
        _put(out, "warmup_requests", loadgen.get("warmup_request_count"))
    _aiperf_dataset(config, out)
    for key, metric in (("input_tokens", "input_sequence_length"), ("output_tokens", "output_sequence_length")):
        mean = mapping(data.get(metric)).get("avg")
        if key not in out and isinstance(mean, (int, float)) and not isinstance(mean, bool):
            out[f"{key}_mean"] = round(float(mean), 2)
    endpoint = mapping(config.get("endpoint"))
    urls = sequence(endpoint.get("urls")) or ([endpoint["url"]] if isinstance(endpoint.get("url"), str) else [])
    if urls:
        out["endpoint"] = str(urls[0])  # which server answered: kept, never part of the load
    _put(out, "endpoint_type", endpoint.get("type"))
    _put(out, "streaming", endpoint.get("streaming"))
    return out


def _aiperf_dataset(config: dict[str, Any], out: dict[str, Any]) -> None:
    """The dataset and its configured prompt and output lengths."""
    datasets = [d for d in sequence(config.get("datasets")) if isinstance(d, dict)]
    if datasets:
        dataset = datasets[0]
        prompts = mapping(dataset.get("prompts"))
        lengths = {
            "isl": mapping(prompts.get("isl") or dataset.get("isl")),
            "osl": mapping(prompts.get("osl") or dataset.get("osl")),
        }
        kind = dataset.get("type")
        name = dataset.get("dataset") or (Path(dataset["path"]).name if isinstance(dataset.get("path"), str) else None)
        _put(out, "dataset", f"{kind}:{name}" if kind and name else kind or name)
    else:
        given = mapping(config.get("input"))
        prompt = mapping(given.get("prompt"))
        lengths = {"isl": mapping(prompt.get("input_tokens")), "osl": mapping(prompt.get("output_tokens"))}
        source = given.get("public_dataset") or (
            Path(given["file"]).name if isinstance(given.get("file"), str) else None
        )
        _put(out, "dataset", source or given.get("custom_dataset_type") or ("synthetic" if prompt else None))
    for short, key in (("isl", "input_tokens"), ("osl", "output_tokens")):
        _put(out, key, lengths[short].get("mean"))
        std = lengths[short].get("stddev", lengths[short].get("std"))
        if std:  # a spread of 0 is the default: no setting
            _put(out, f"{key}_std", std)


def is_aiperf(path: Path, text: str) -> bool:
    data = json_of(text) if path.suffix.lower() == ".json" else None
    return isinstance(data, dict) and ("aiperf_version" in data or "input_config" in data)


READER = FunctionReader(
    "aiperf",
    "AIPerf profile_export_aiperf.json",
    (".json",),
    lambda path, _: parse_aiperf(path),
    is_aiperf,
    {"aiperf": AIPERF_LOAD},
    {
        "arrival": "arrival pattern",
        "warmup_requests": "warm-up requests",
        "input_tokens_std": "input tokens per request, std",
        "output_tokens_std": "output tokens per request, std",
        "streaming": "streaming",
        "endpoint_type": "endpoint type",
    },
    {"aiperf": AIPERF_HEADLINE},
)
